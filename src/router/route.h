/* SPDX-License-Identifier: MIT */
/*
 * Internal view of routes and route table snapshots, shared by the router and
 * the server.  A route is compiled once at registration and never written
 * again; a table (one radix tree per host) is built privately, frozen into
 * one block and then published (see router.c).
 */
#ifndef HR_ROUTER_ROUTE_H
#define HR_ROUTER_ROUTE_H

#include <pthread.h>
#include <stdatomic.h>
#include <urcu/urcu-bp.h>

#include "delegate/registry.h"
#include "hroute/error.h"
#include "hroute/router.h"
#include "util/mem.h"
#include "util/rcu.h"

/* Standard methods get small ids (a leaf indexes routes by them); others
 * are extension methods, compared as tokens. */
enum {
  HR__M_GET = 0,
  HR__M_HEAD,
  HR__M_POST,
  HR__M_PUT,
  HR__M_DELETE,
  HR__M_PATCH,
  HR__M_OPTIONS,
  HR__M_CONNECT,
  HR__M_TRACE,
  HR__M_STD /* count */
};

/* Returns the id of a standard method, or -1 for an extension method. */
int hr__method_id(hr_span_t m);

/* The name of standard method `id` (static storage). */
hr_span_t hr__method_name(int id);

/* A compiled pattern piece: literal bytes (separators included), a
 * parameter (one segment) or a catch-all (the rest). */
typedef enum { HR__TOK_STATIC, HR__TOK_PARAM, HR__TOK_CATCH } hr__tok_kind_t;

typedef struct hr__tok_s {
  hr__tok_kind_t kind;
  hr_span_t text; /* literal bytes (unescaped, lower-cased with the
                     case-insensitive option), or the parameter name */
  size_t offset;  /* byte offset in the pattern, for error reports */
} hr__tok_t;

/* Most worker loops one router can serve at once (per-loop slots). */
#define HR__MAX_LOOPS 64

/* What one loop keeps for one route (its core, so it survives middleware
 * changes, which recompile invokers): its counters (single writer: that
 * loop; relaxed atomics, summed by readers) and its per-loop context. */
typedef struct hr__slot_s {
  _Atomic uint64_t requests;
  _Atomic uint64_t responses[6];
  _Atomic uint64_t latency_us[HR_LATENCY_BUCKETS];
  _Atomic uint64_t latency_sum_us;
  void *ctx;
  int ctx_made;
  unsigned inflight;   /* requests of this loop using `ctx` (loop only) */
} hr__slot_t;

/* The compiled, immutable part of a route, shared by the successive
 * invokers made from it (middleware changes recompile invokers, not this).
 * Reference-counted: every invoker holds one reference. */
typedef struct hr__core_s {
  _Atomic unsigned refs;
  hr_span_t pattern;       /* full pattern (group prefix included), NUL-terminated */
  hr_span_t methods_text;  /* as registered, NUL-terminated */
  hr_span_t host;          /* lower-cased host of its group; empty: default */
  const hr_group_t *group; /* the group it was registered through */
  unsigned any_method : 1;
  uint16_t std_methods;    /* bit i: standard method id i */
  hr_span_t *ext_methods;  /* extension methods (into methods_text) */
  size_t n_ext;
  hr_handler_cb handler;
  void *udata;
  hr__tok_t *toks;
  size_t ntoks;
  size_t nparams;
  hr_span_t pnames[HR_MAX_PARAMS]; /* parameter names, in order (a request's
                                      parameters carry the names of the route
                                      that matched) */
  hr_span_t head;          /* pre-rendered constant fields, "N: V\r\n"... */
  hr_span_t head_bodiless; /* the same without Content-Type, -Encoding and
                              -Language, for 204 and 304 (head's block) */
  uint64_t max_body_bytes; /* 0: server default */
  hr_body_mode_t body_mode;
  hr_param_type_t ptypes[HR_MAX_PARAMS];
  int typed;               /* some parameter is not HR_PARAM_STRING */
  int lenient_ints;        /* hr_route_options_t.lenient_integers */
  int no_compress;         /* hr_route_options_t.no_compress */
  const struct hr__zconf_s *zconf; /* hr_route_options_t.compress (a reference), or NULL */
  hr_context_scope_t ctx_scope;
  hr_context_create_cb ctx_create;
  hr_context_destroy_cb ctx_destroy;
  /* Per-loop slots: each pointer stored once (release) by its loop. */
  _Atomic(hr__slot_t *) slots[HR__MAX_LOOPS];
  /* Set (release) by the writer once a published table no longer holds
   * any invoker of this core; loops then destroy their contexts. */
  _Atomic int retired;
  size_t writer_mark;      /* writer side only, under the router lock */
  size_t writer_pos;       /* writer side: its invoker's index in the
                              router's `routes` */
  const hr_allocator_t *slot_alloc; /* slots go straight to this allocator */
} hr__core_t;

/* Compiles a route core (pattern.c).  Returns 0 or an error code, with
 * details in `err` when not NULL.  The new core has one reference. */
int hr__core_compile(hr__mem_t *m, int case_insensitive, const hr_group_t *group,
                     const char *host, const char *prefix, const char *methods,
                     const char *pattern, hr_handler_cb handler, void *udata,
                     const hr_route_options_t *o, hr__core_t **out,
                     hr_route_error_t *err);
/* Drops a reference; frees the core with the last one. */
void hr__core_unref(hr__mem_t *m, hr__core_t *core);

/* Whether two routes share a method (for duplicates). */
int hr__methods_overlap(const hr__core_t *a, const hr__core_t *b);

/* Whether two patterns reach the same place in the tree: the same literal
 * text (case-folded on a case-insensitive router) and the same parameters
 * and catch-all, whatever their names.  The router's notion of "the same
 * pattern" for duplicates, replace, remove and stats. */
int hr__patterns_equiv(const hr__core_t *a, const hr__core_t *b);

/* Whether two method lists are the same set. */
int hr__methods_equal(const hr__core_t *a, const hr__core_t *b);

/* One flattened middleware entry. */
typedef struct hr__mw_s {
  hr_before_cb before;
  hr_after_cb after;
  void *udata;
  int head; /* `before` runs at the end of the header section */
} hr__mw_t;

/*
 * The invoker: everything a request needs to reach and run its handler,
 * resolved at registration.  Immutable once published, except for the
 * atomics: the reference count, the per-loop slot pointers (each written
 * once, by its loop) and `retired`.
 */
struct hr_route_s {
  const hr__core_t *core;
  /* hot copies of core fields */
  hr_handler_cb handler;
  void *udata;
  hr_span_t head, head_bodiless;
  uint64_t max_body_bytes;
  hr_body_mode_t body_mode;
  hr_context_scope_t ctx_scope;
  int typed;
  /* flattened middleware */
  const hr__mw_t *head_mw; /* at the end of the header section */
  size_t nhead_mw;
  const hr__mw_t *before;
  size_t nbefore;
  const hr__mw_t *after;   /* already in calling order */
  size_t nafter;
  /* One reference per table that contains it and per request that
   * outlives its read-side critical section. */
  _Atomic unsigned refs;
  hr__mem_t *mem;
};

/* invoker.c */
typedef struct hr__mwlist_s hr__mwlist_t;
int hr__invoker_new(hr__mem_t *m, hr__core_t *core, const hr__mwlist_t *mws,
                    hr_route_t **out);
/* A reference for a holder that already owns one, or for the writer
 * building a table (lock held). */
void hr__invoker_ref(hr_route_t *inv);
/* A reader's reference on an invoker it reached through a published table:
 * only inside the read-side critical section in which it loaded the table
 * (after the section the table may already be freed).  Asserted in builds
 * with assertions, as the Linux kernel's lockdep-checked RCU dereferences
 * are, so that a reference taken too late fails every test that takes one
 * rather than the one run in a thousand that loses the race. */
void hr__invoker_ref_reader(hr_route_t *inv);
void hr__invoker_unref(hr_route_t *inv);
/* Converts typed parameters; returns 0, or -1 when one does not convert. */
int hr__invoker_convert(const hr_route_t *inv, const hr_param_t *params,
                        size_t n, hr_value_t *values);
/* The calling loop's slot of a route (made on first use); NULL when out of
 * memory. */
hr__slot_t *hr__core_slot(hr__core_t *core, unsigned loop);
void hr__slot_count_response(hr__slot_t *s, int status, uint64_t us);
void hr__core_stats(const hr__core_t *core, hr_route_stats_t *out);
/* For pass = 0 .. passes - 1: fn(ctx, pass, NULL), then fn(ctx, pass,
 * core) for every route of the current table, all hosts; every pass walks
 * the same table, loaded once, inside one read-side critical section
 * (router.c).  Any thread. */
void hr__router_each_core(hr_router_t *r, unsigned passes,
                          void (*fn)(void *ctx, unsigned pass, const hr__core_t *core),
                          void *ctx);
void hr__core_ref(hr__core_t *core);

/* Middleware registered on a router (writer side). */
typedef struct hr__mwreg_s {
  hr__mw_t mw;
  char *host;               /* NULL: every host */
  char *prefix;             /* "" : every route */
  const hr_group_t *group;  /* hr_group_use: that group's routes only */
  struct hr__mwreg_s *next;
} hr__mwreg_t;

struct hr__mwlist_s {
  const hr__mwreg_t *head;  /* registration order */
};

/* ---- frozen route table ---------------------------------------------------- */

/* A route of a leaf and its parameter names: copies of its core's spans,
 * which point into the core's pattern (alive with the route). */
typedef struct hr__leaf_route_s {
  const hr_route_t *route;
  const hr_span_t *names;
} hr__leaf_route_t;

/* Routes ending at one place in a tree.  What a match of a standard method
 * reads first: the method bits, then its route and names, paired so that
 * GET's share the first cache line with them. */
typedef struct hr__leaf_s {
  uint16_t accept;         /* bit i: standard method id i is answered here
                              (HEAD by a GET route, any by a "*" route) */
  uint16_t named;          /* bit i: standard method i in `allow` */
  uint64_t ext_named;      /* bit j: the table's extension method j in `allow` */
  hr__leaf_route_t std[HR__M_STD];
  hr__leaf_route_t any;
  const hr_route_t **ext;  /* extension-method routes ... */
  size_t n_ext;            /* ... matched by their ext_methods */
  hr_span_t allow;         /* the Allow value of this leaf alone */
  hr_route_t **routes;     /* its distinct routes, each referenced by the
                              leaf until the leaf is reclaimed */
  size_t nroutes;
} hr__leaf_t;

typedef struct hr__node_s hr__node_t;
#define HR__INDEX_MIN 6 /* static children from which a node gets an index */
/* A frozen node, 64 bytes before its children.  What a step of the walk
 * reads comes first: the prefix's first eight bytes inline (so a short
 * prefix is compared without a second load), the first byte of each static
 * child (or an index), then the alternatives.  The static children follow
 * inline, so that a step down is one load. */
struct hr__node_s {
  uint64_t head;              /* prefix[0..8), zero-padded */
  uint32_t plen;
  uint32_t nstatic;
  unsigned char first[8];     /* first byte of each static child (when
                                 fewer than HR__INDEX_MIN) */
  const char *prefix;         /* the whole prefix (read when plen > 8) */
  const unsigned char *index; /* nstatic >= HR__INDEX_MIN: byte -> child + 1 */
  const hr__node_t *param;    /* one segment */
  const hr__node_t *catchall; /* the rest; a leaf */
  const hr__leaf_t *leaf;     /* routes ending here */
  const hr__node_t *statics[]; /* nstatic static children */
};

typedef struct hr__host_s {
  hr_span_t name;             /* lower-cased; empty for the default table */
  const hr__node_t *root;     /* NULL when the host has no routes */
  hr_span_t allow_all;        /* for "OPTIONS *" */
  /* The after-middleware for requests of this host that no route's chain
   * answered (router-level, no prefix), as an invoker of a core that is
   * no route; NULL when there is none.  The table holds a reference. */
  hr_route_t *fallback;
  hr_answers_t answers;       /* hr_router_set_answers, all NULL by default */
  /* hr_router_set_compress's settings for this host (or the default
   * table's), or NULL: the server's.  The table holds a reference, taken
   * when it is published (install). */
  const struct hr__zconf_s *zconf;
} hr__host_t;

/* Most distinct extension methods (not one of the HR__M_STD) one router
 * may register, all hosts together. */
#define HR__MAX_EXT_METHODS 64

/* A block of frozen nodes and leaves, made by one freezing (wtree.c): a
 * whole build's every node, or a change's path.  Nodes of later tables
 * point into it while it has live ones; freed once none is left, after the
 * grace period of the table that last reached one. */
typedef struct hr__block_s {
  struct hr__block_s *prev, *next; /* writer side: the live blocks, or
                                      (next) a garbage list */
  size_t live;                     /* its nodes still in the tree */
  size_t bytes;
} hr__block_t;

/* What a replaced table takes with it when reclaimed: what its successor
 * no longer reaches.  The blocks whose last node died, and one invoker
 * reference per route of each dead leaf. */
typedef struct hr__garbage_s {
  hr__block_t *blocks;
  size_t bytes; /* of the blocks */
  size_t ninv;
  hr_route_t *inv[];
} hr__garbage_t;

/* An immutable snapshot: its own block (hosts, their Allow texts, the
 * extension methods) and trees whose nodes it shares with the tables before
 * and after it (wtree.c).  The leaves hold the invoker references. */
typedef struct hr__table_s {
  hr__rcu_head_t rcu;   /* for call_rcu */
  hr__mem_t *mem;       /* its router's `mem` (reclaim() finds the router by it) */
  hr__host_t def;
  const hr__host_t *hosts;
  size_t nhosts;
  size_t nroutes;
  size_t nodes;         /* frozen nodes of its trees */
  size_t bytes;         /* bytes of its trees' blocks and its own */
  /* The extension methods some route of some host registers, sorted (a
   * leaf's ext_named indexes them); any_method: some "*" route.  A method
   * that is neither standard (HR__M_*) nor among them is answered 501. */
  int any_method;
  const hr_span_t *ext_methods;
  size_t n_ext_methods;
  size_t allow_max;     /* the longest Allow value a match can give */
  hr__garbage_t *garbage;           /* writer side, set when replaced */
  struct hr__table_s *retired_next; /* writer side: waiting for reclamation */
} hr__table_t;

/* Drops the table's references (its fallbacks, its garbage's) and frees it
 * and its garbage blocks (after its grace period). */
void hr__table_free(hr__table_t *t);
/* Frees a table that was never published (no garbage; its fallbacks go). */
void hr__table_discard(hr__table_t *t);

/* Calls fn for every route of `t`, all hosts, tree order (inside a
 * read-side section, or with the writer's lock). */
void hr__table_each_route(const hr__table_t *t, void (*fn)(void *ctx, hr_route_t *route),
                          void *ctx);

/* Allow values (RFC 9110 §10.2.1) for tree.c and wtree.c: the methods a set
 * of routes names (OPTIONS always, HEAD with GET; extension methods as bits
 * of the sorted list `ext`), and their text, sorted, ", " between them
 * (w NULL: only measured).  Returns the length. */
/* Orders spans bytewise, shorter first on a tie (qsort and bsearch of
 * extension methods). */
int hr__span_cmp(const void *a, const void *b);
void hr__named_methods(const hr_route_t *const *routes, size_t n, const hr_span_t *ext,
                       size_t n_ext, uint16_t *std, uint64_t *ext_bits);
size_t hr__allow_render(uint16_t std, uint64_t ext_bits, const hr_span_t *ext, char *w);

/* One lookup in a tree.  In: the path, the request method (`method_id`
 * from hr__method_id, -1 for an extension method), and `params` (room for
 * HR_MAX_PARAMS values).  Out: the values of the parameters along the way
 * (names are the matched route's), and the leaves whose path matched but
 * that have no route for the method: `first_miss` and `misses` (for 405
 * and OPTIONS answers). */
typedef struct hr__walk_s {
  const char *path;
  size_t len;
  int method_id;
  hr_span_t method;
  hr_param_t *params;
  const hr__leaf_t *first_miss;
  size_t misses;
  /* When not NULL, every leaf that misses is passed here (hr__tree_allow). */
  void (*on_miss)(struct hr__walk_s *w, const hr__leaf_t *leaf);
  void *ctx;
} hr__walk_t;

/* hr__tree_find(), the lookup itself, is in walk.h. */

/* Whether `leaf` answers `method` (`id` from hr__method_id). */
int hr__leaf_accepts(const hr__leaf_t *leaf, hr_span_t method, int id);

/* The parameter names of `route`, one of leaf's routes. */
const hr_span_t *hr__leaf_names(const hr__leaf_t *leaf, const hr_route_t *route);

/* Picks the route of `leaf` for `method` (HEAD falls back to GET, "*"
 * routes answer any method).  Returns NULL when none. */
const hr_route_t *hr__leaf_route(const hr__leaf_t *leaf, hr_span_t method,
                                 int method_id);

/* The Allow value for a path that several leaves match, none with the
 * method: the union of their methods, written to buf (at most
 * t->allow_max bytes).  Walks the tree again.  Returns the length. */
size_t hr__tree_allow(const hr__table_t *t, const hr__node_t *root, hr__walk_t *w,
                      int case_insensitive, char *buf);

int hr__tree_dump(const hr__table_t *t,
                  void (*write)(void *ctx, const char *p, size_t n), void *ctx);


/* ---- the router ------------------------------------------------------------ */

struct hr_group_s {
  hr_router_t *router;
  char *host;   /* NULL: default table */
  char *prefix; /* "" for none */
  hr_group_t *next;
};

struct hr_router_s {
  hr__mem_t mem;
  hr_router_options_t opts;
  pthread_mutex_t lock;          /* serialises writers */
  _Atomic(hr__table_t *) table;  /* published snapshot */
  struct hr__wtree_s *wt;        /* writer side: the current trees (wtree.h) */
  hr_route_t **routes;           /* writer side: the current invokers, in
                                    registration order; NULL: removed */
  size_t nroutes, routes_cap;
  size_t holes;                  /* NULL entries in `routes` */
  size_t mark;                   /* writer side: generation for writer_mark */
  hr_group_t root;               /* the default group */
  hr_group_t *groups;            /* writer side: created groups */
  hr__mwreg_t *mws;              /* writer side: middleware, in order */
  hr__mwreg_t **mws_tail;
  uint64_t loops_used;           /* bitmap of per-loop slot numbers in use */
  hr__registry_t registry;       /* value types and header delegates */
  /* Request-local keys: entry i written once, before nlocals passes i
   * (release); readers load nlocals with acquire. */
  struct {
    hr_local_destroy_cb destroy;
    void *udata;
  } locals[HR_MAX_LOCALS];
  _Atomic unsigned nlocals;
  /* Writer side: hr_router_set_answers registrations (host NULL: the
   * default), copied into each table's hosts at publication. */
  struct hr__answers_reg_s {
    char *host;
    hr_answers_t answers;
    struct hr__answers_reg_s *next;
  } *answers;
  /* Writer side: hr_router_set_compress registrations, each holding a
   * reference on its settings; attached to each table's hosts at
   * publication as the answers are. */
  struct hr__zreg_s {
    char *host;
    const struct hr__zconf_s *zconf;
    struct hr__zreg_s *next;
  } *zregs;
  hr__table_t *retired;          /* writer side: replaced, not yet freed */
  size_t nretired;
  size_t retired_bytes;          /* their garbage's blocks */
  /* What keeps this struct (and `mem`, which every table, invoker and
   * core frees through) allocated: one for the owner until
   * hr_router_free, one per table handed to call_rcu until its callback
   * has freed it.  Whoever drops the last frees the struct: hr_router_free
   * itself, or, when it was called inside a read-side section (it cannot
   * wait for the callbacks there), the last callback. */
  _Atomic unsigned long holds;
};

/* The published table (acquire load, pairing with install()'s release
 * store).  Inside a read-side section; one request loads it once and uses
 * that table for its match and for every answer the router gives it. */
const hr__table_t *hr__router_table(hr_router_t *r);

/* hr_router_match against the table `t` (from hr__router_table) rather
 * than the current one: with the same `t`, out->need of an HR_ENOSPC
 * answer suffices for the next call. */
int hr__router_match_in(hr_router_t *r, const hr__table_t *t, hr_span_t method,
                        hr_span_t host, hr_span_t target, char *buf, size_t buflen,
                        hr_match_t *out);

/* The table a request for `host` (a Host value or an authority, port and
 * trailing dot ignored) is matched in (match.c).  Its `answers` are the
 * router's own answers for that host (all NULL when none) and its
 * `fallback` the after-middleware for requests no route's chain answered. */
const hr__host_t *hr__pick_host(const hr__table_t *t, hr_span_t host);

/* A core that is no route, for fallback invokers (pattern.c). */
int hr__core_fallback(hr__mem_t *m, hr_span_t host, hr__core_t **out);

/* Request locals (router.c): whether `key` was given, and its destructor
 * run on `value`. */
int hr__router_local_known(hr_router_t *r, hr_local_key_t key);
void hr__router_local_destroy(hr_router_t *r, hr_local_key_t key, void *value);

/* A per-loop slot number for a worker loop, or -1 when all are taken. */
int hr__router_loop_acquire(hr_router_t *r);
void hr__router_loop_release(hr_router_t *r, int loop);

/* Writer side, for transactions (txn.c).  hr__route_compile: what
 * hr_group_add checks before it takes the lock (the pattern, methods and
 * options, typed parameters); the new core has one reference.
 * hr__router_publish: builds a table from `routes` and publishes it (lock
 * held; on success the router owns `routes`).  hr__router_unlock: unlocks
 * and frees a due batch of replaced tables.  hr__invoker_drop_new: frees an
 * invoker no table ever held. */
int hr__route_compile(hr_group_t *g, const char *methods, const char *pattern,
                      hr_handler_cb handler, void *udata, const hr_route_options_t *opts,
                      hr__core_t **out);
int hr__router_publish(hr_router_t *r, hr_route_t **routes, size_t n, hr_route_error_t *err);
void hr__router_unlock(hr_router_t *r);
void hr__invoker_drop_new(hr_route_t *inv);

#endif /* HR_ROUTER_ROUTE_H */
