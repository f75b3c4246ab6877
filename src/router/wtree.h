/* SPDX-License-Identifier: MIT */
/*
 * The writer's route tree (wtree.c): the editable radix tree the writer
 * keeps between publications, under the router's lock, from which each
 * published table's frozen trees are made.
 *
 * Each build node remembers the frozen node readers see of it.  A change
 * marks the nodes on its path dirty; freezing copies those (into one new
 * block) and points them at the frozen nodes of everything else, which are
 * shared with the tables before: a persistent tree, so a change costs its
 * path, not the table.  A frozen node that leaves the tree (re-frozen,
 * pruned, skipped) is dead: its leaf's invoker references and, once all of
 * a block's nodes are dead, the block go to the garbage of the table it
 * replaces, freed with that table after its grace period (route.h).
 *
 * A change goes in steps, so that nothing the readers see moves until
 * nothing can fail: stage (the edit, undoable without allocating),
 * prepare (every allocation: the block, the table, the garbage record),
 * then commit (filling, which cannot fail).
 */
#ifndef HR_ROUTER_WTREE_H
#define HR_ROUTER_WTREE_H

#include "router/route.h"

typedef struct hr__wtree_s hr__wtree_t;
typedef struct bnode_s hr__bnode_t;

/* hr__wtree_stage's answer when the change needs a whole build instead: a
 * new extension method, one no route names any more, a new host, or a
 * host left without routes (they change every leaf's Allow bits, or the
 * host list). */
#define HR__REBUILD 1000

/* Builds the editable trees of `routes` (nothing frozen yet).  Returns 0,
 * HR_ENOMEM, HR_ETOOLARGE (more than HR__MAX_EXT_METHODS extension
 * methods), or HR_EEXIST naming in `err` the route in the way of the last
 * one.  The tree takes no references: the caller's invokers must outlive
 * it until it is frozen, which takes one per leaf. */
int hr__wtree_build(hr__mem_t *m, hr_route_t *const *routes, size_t n, hr__wtree_t **out,
                    hr_route_error_t *err);

/* Frees a tree: its build nodes, and, when it was ever frozen, its live
 * blocks with their leaves' references (the router's own teardown, after
 * the last table is unreachable). */
void hr__wtree_free(hr__wtree_t *wt);

/* The route at `probe`'s place (host, pattern up to parameter names) with
 * the same methods, or NULL. */
hr_route_t *hr__wtree_find(const hr__wtree_t *wt, const hr__core_t *probe);

/* Ends a frozen tree that readers may still be walking: its live blocks
 * and its leaves' references become garbage (returned, for the current
 * table to free after its grace period) and the rest is freed.  NULL when
 * out of memory, and then the tree's frozen memory is never freed. */
hr__garbage_t *hr__wtree_retire(hr__wtree_t *wt);

/* Routes in the tree, and bytes of its frozen nodes in use and allocated
 * (the difference is dead nodes in blocks still partly in use). */
size_t hr__wtree_routes(const hr__wtree_t *wt);
void hr__wtree_bytes(const hr__wtree_t *wt, size_t *live, size_t *allocated);

/* A change in progress. */
typedef struct hr__change_s {
  struct whost_s *host;
  hr__bnode_t *at;        /* where the route is */
  hr_route_t *old;        /* removed or replaced; NULL for an addition */
  hr_route_t *add;        /* added or the replacement; NULL for a removal */
  size_t slot;            /* old's index among at's routes */
} hr__change_t;

/* Stages removing `old` (NULL: none) and adding `add` (NULL: none; with
 * `old`, at old's place: a replacement).  Returns 0, HR_EEXIST (err names
 * the route in the way), HR_ENOMEM, or HR__REBUILD; on error nothing
 * changed that a lookup or a later change could tell. */
int hr__wtree_stage(hr__wtree_t *wt, hr_route_t *old, hr_route_t *add, hr__change_t *c,
                    hr_route_error_t *err);
/* Undoes a staged change (no allocation). */
void hr__wtree_unstage(hr__wtree_t *wt, hr__change_t *c);

/* What freezing needs, allocated up front. */
typedef struct hr__plan_s {
  hr__wtree_t *wt;
  hr__wtree_t *replaced;  /* a whole build: the tree it replaces */
  hr__table_t *table;     /* hosts named, no roots yet */
  hr__block_t *block;     /* NULL when nothing is to freeze */
  hr__garbage_t *garbage; /* for the table `table` replaces */
  size_t node_bytes, leaf_bytes;
} hr__plan_t;

/* Measures what freezing `wt` makes and kills, and allocates it: the new
 * nodes' block, the table (its hosts named, for the fallbacks) and the
 * garbage of the table it replaces, which for a whole build (`replaced`
 * not NULL) is every frozen node of `replaced`.  Returns 0 or HR_ENOMEM
 * (nothing allocated). */
int hr__wtree_prepare(hr__wtree_t *wt, hr__wtree_t *replaced, hr__plan_t *p);
/* Frees what prepare allocated (the table with hr__table_discard). */
void hr__wtree_abort(hr__plan_t *p);
/* Freezes: fills the block and the table, kills what left the tree into
 * the garbage record, frees `replaced` (its nodes now garbage).  Cannot
 * fail.  p->table is then ready to publish, p->garbage for the old one. */
void hr__wtree_commit(hr__plan_t *p);

/* Whether a whole build should compact the tree: dead nodes in partly
 * used blocks outweigh the live ones, or removals (each of which may leave
 * a split node a whole build would merge) outnumber half the routes. */
int hr__wtree_wasteful(const hr__wtree_t *wt);

#endif /* HR_ROUTER_WTREE_H */
