/* SPDX-License-Identifier: MIT */
/*
 * Publication of route tables (publish.h): a change or a whole build made
 * into a table, stored with one release store, and the table it replaces
 * reclaimed after a grace period with what the new one no longer reaches
 * (router.c's header tells the whole rule; docs/concurrency.md).  Writer
 * side, under the router's lock, but for reclamation, which runs after
 * the unlock.
 */
#include <string.h>

#include "codec/zconf.h"
#include "router/publish.h"
#include "router/route.h"
#include "router/wtree.h"
#include "util/rcu.h"
#include "util/testpoint.h"
#include "util/text.h"

/* Replaced tables kept before one grace period frees them together, or
 * fewer when their garbage reaches HR__RETIRE_BYTES (whole builds of a
 * large table: each retires every node of the one before). */
#define HR__RETIRE_BATCH 16
#define HR__RETIRE_BYTES ((size_t)8 << 20)

static void reclaim(struct rcu_head *head) {
  hr__table_t *t = caa_container_of(head, hr__table_t, rcu.head);
  hr_router_t *r;
  HR__CB_BEGIN(head); /* the queue and the grace period: see util/rcu.h */
  /* Every table frees through its router's mem (hr__table_build). */
  r = caa_container_of(t->mem, hr_router_t, mem);
  hr__table_free(t);
  hr__router_drop(r); /* taken in reclaim_list */
  HR__CB_DONE();
}

/* Frees a list of replaced tables after a grace period, without the
 * router lock: waiting for readers while holding it would deadlock with a
 * reader (a handler) that registers a route.  With `wait` (the router's
 * teardown) it waits for the grace period itself, unless inside a
 * read-side section; otherwise the tables go to call_rcu, so that a change
 * never waits for readers. */
static void reclaim_list(hr_router_t *r, hr__table_t *t, int wait) {
  hr__table_t *next;
  if (t == NULL) return;
  if (!wait || urcu_bp_read_ongoing()) {
    /* Waiting for a grace period from inside a read-side section would
     * wait for ourselves: call_rcu frees them later.  Each callback holds
     * the router struct, whose mem it frees through, even when
     * hr_router_free comes first.  Relaxed: the caller holds it already
     * (the owner's hold, or the lock of a writer the owner waits for),
     * nothing is published by the count. */
    for (; t != NULL; t = next) {
      next = t->retired_next;
      atomic_fetch_add_explicit(&r->holds, 1, memory_order_relaxed);
      hr__call_rcu(&t->rcu, reclaim);
    }
    return;
  }
  hr__synchronize_rcu();
  for (; t != NULL; t = next) {
    next = t->retired_next;
    hr__table_free(t);
  }
}

/* Detaches the retired list when a batch is due (lock held). */
static hr__table_t *take_batch(hr_router_t *r, int all) {
  hr__table_t *t = r->retired;
  if (t == NULL ||
      (!all && r->nretired < HR__RETIRE_BATCH && r->retired_bytes < HR__RETIRE_BYTES))
    return NULL;
  r->retired = NULL;
  r->nretired = 0;
  r->retired_bytes = 0;
  return t;
}

/* Unlocks the router, then frees a due batch of replaced tables. */
static void unlock_and_reclaim(hr_router_t *r) {
  hr__table_t *batch = take_batch(r, 0);
  pthread_mutex_unlock(&r->lock);
  reclaim_list(r, batch, 0);
}

/* Whether some before- or after-middleware of the router applies to a
 * request of `host` that the router answers itself: router-level, no
 * prefix, every host or this one (head middleware do not: such a request's
 * body is discarded unread anyway). */
static int has_fallback_mw(const hr_router_t *r, hr_span_t host) {
  const hr__mwreg_t *reg;
  for (reg = r->mws; reg != NULL; reg = reg->next)
    if ((reg->mw.after != NULL || (reg->mw.before != NULL && !reg->mw.head)) &&
        reg->group == NULL && reg->prefix[0] == '\0' &&
        (reg->host == NULL || hr_span_eq_nocase(hr_span_cstr(reg->host), host)))
      return 1;
  return 0;
}

/* Copies into each host table the answers and the compression settings
 * registered for it, or else the default registration's; the table takes
 * a reference on the settings (dropped by hr__table_free).  A host array
 * copied from the previous table carries that table's pointers, which are
 * replaced here, not dropped. */
static void attach_host_settings(const hr_router_t *r, hr__table_t *t) {
  size_t i;
  for (i = 0; i <= t->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : (hr__host_t *)&t->hosts[i - 1];
    const struct hr__answers_reg_s *a, *def = NULL, *own = NULL;
    const struct hr__zreg_s *z, *zdef = NULL, *zown = NULL;
    for (a = r->answers; a != NULL; a = a->next) {
      if (a->host == NULL) def = a;
      else if (h->name.len && hr_span_eq_nocase(hr_span_cstr(a->host), h->name)) own = a;
    }
    if (own != NULL || def != NULL) h->answers = (own ? own : def)->answers;
    for (z = r->zregs; z != NULL; z = z->next) {
      if (z->host == NULL) zdef = z;
      else if (h->name.len && hr_span_eq_nocase(hr_span_cstr(z->host), h->name)) zown = z;
    }
    h->zconf = zown != NULL ? zown->zconf : zdef != NULL ? zdef->zconf : NULL;
    if (h->zconf != NULL) hr__zconf_hold(h->zconf);
  }
}

const hr__table_t *hr__router_table(hr_router_t *r) {
  /* Pairs with the release store in install(). */
  return atomic_load_explicit(&r->table, memory_order_acquire);
}

/* Gives each host table of `t` its fallback invoker (hr__host_t), when
 * some middleware applies.  Returns 0 or HR_ENOMEM. */
static int attach_fallbacks(hr_router_t *r, hr__table_t *t) {
  hr__mwlist_t mws = {r->mws};
  size_t i;
  for (i = 0; i <= t->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : (hr__host_t *)&t->hosts[i - 1];
    hr__core_t *core;
    hr_route_t *inv;
    int rc;
    if (!has_fallback_mw(r, h->name)) continue;
    if ((rc = hr__core_fallback(&r->mem, h->name, &core)) != 0) return rc;
    rc = hr__invoker_new(&r->mem, core, &mws, &inv); /* takes a core reference */
    hr__core_unref(&r->mem, core);
    if (rc != 0) return rc;
    hr__invoker_ref(inv); /* the table's */
    h->fallback = inv;
  }
  return 0;
}

/* Publishes a frozen plan's table (lock held): the old table takes the
 * plan's garbage with it and waits for reclamation. */
static void install(hr_router_t *r, hr__plan_t *p) {
  hr__table_t *t = p->table, *old;
  attach_host_settings(r, t);
  old = atomic_load_explicit(&r->table, memory_order_relaxed);
  HR__TP(HR__TP_PUBLISH_STORE, r);
  /* Pairs with the acquire load in hr_router_match() and the server's
   * dispatch: the table, every node it reaches and every invoker they
   * reference are complete before a reader can see the pointer. */
  atomic_store_explicit(&r->table, t, memory_order_release);
  r->mark++;
  old->garbage = p->garbage;
  r->retired_bytes += p->garbage->bytes;
  old->retired_next = r->retired;
  r->retired = old;
  r->nretired++; /* freed in batches by unlock_and_reclaim() */
}

/* Builds whole trees from `routes` and publishes them (lock held).  On
 * success the router's route array becomes `routes` (the old array is
 * freed), the invokers left out are marked retired, and the old table is
 * reclaimed after a grace period with every node of the old trees.  On
 * error nothing changed and `routes` is the caller's. */
static int publish(hr_router_t *r, hr_route_t **routes, size_t n,
                   hr_route_error_t *err) {
  hr__wtree_t *wt;
  hr__plan_t plan;
  size_t i;
  int rc = hr__wtree_build(&r->mem, routes, n, &wt, err);
  if (rc != 0) return rc;
  if ((rc = hr__wtree_prepare(wt, r->wt, &plan)) != 0) {
    hr__wtree_free(wt);
    return rc;
  }
  if ((rc = attach_fallbacks(r, plan.table)) != 0) {
    hr__wtree_abort(&plan);
    hr__wtree_free(wt);
    return rc;
  }
  hr__wtree_commit(&plan);
  r->wt = wt;
  install(r, &plan);
  for (i = 0; i < n; i++) ((hr__core_t *)routes[i]->core)->writer_mark = r->mark;
  for (i = 0; i < r->nroutes; i++) {
    hr__core_t *c = r->routes[i] ? (hr__core_t *)r->routes[i]->core : NULL;
    if (c != NULL && c->writer_mark != r->mark)
      /* Pairs with the acquire load in the loops' context sweep: it sees
       * the route as gone once this table is published. */
      atomic_store_explicit(&c->retired, 1, memory_order_release);
  }
  hr__mem_free(&r->mem, r->routes);
  r->routes = routes;
  r->nroutes = n;
  r->routes_cap = n;
  r->holes = 0;
  for (i = 0; i < n; i++) ((hr__core_t *)routes[i]->core)->writer_pos = i;
  return 0;
}

/* Removes the holes of the route array (lock held). */
static void compact_routes(hr_router_t *r) {
  size_t i, k = 0;
  if (r->holes == 0) return;
  for (i = 0; i < r->nroutes; i++)
    if (r->routes[i] != NULL) {
      r->routes[k] = r->routes[i];
      ((hr__core_t *)r->routes[k]->core)->writer_pos = k;
      k++;
    }
  r->nroutes = k;
  r->holes = 0;
  /* Positions moved: a transaction that took its snapshot before must
   * take it again (txn.c replays when the mark changed), whether or not a
   * publication follows. */
  r->mark++;
}

/* One route added (`old` NULL), replaced or removed (`add` NULL), freezing
 * only its path (lock held).  Returns 0, HR_EEXIST, HR_ENOMEM, or
 * HR__REBUILD when the change needs whole trees (wtree.h); on error
 * nothing changed. */
static int change(hr_router_t *r, hr_route_t *old, hr_route_t *add, hr_route_error_t *err) {
  hr__change_t c;
  hr__plan_t plan;
  size_t pos;
  int rc;
  if (old == NULL && r->nroutes == r->routes_cap) {
    size_t cap = r->routes_cap ? r->routes_cap * 2 : 16;
    hr_route_t **grown = hr__mem_realloc(&r->mem, r->routes, cap * sizeof(*grown));
    if (grown == NULL) return HR_ENOMEM;
    r->routes = grown;
    r->routes_cap = cap;
  }
  if ((rc = hr__wtree_stage(r->wt, old, add, &c, err)) != 0) return rc;
  if ((rc = hr__wtree_prepare(r->wt, NULL, &plan)) != 0) {
    hr__wtree_unstage(r->wt, &c);
    return rc;
  }
  if ((rc = attach_fallbacks(r, plan.table)) != 0) {
    hr__wtree_abort(&plan);
    hr__wtree_unstage(r->wt, &c);
    return rc;
  }
  hr__wtree_commit(&plan);
  install(r, &plan);
  if (old != NULL)
    /* Pairs with the acquire load in the loops' context sweep: it sees
     * the route as gone once this table is published. */
    atomic_store_explicit(&((hr__core_t *)old->core)->retired, 1, memory_order_release);
  pos = old != NULL ? old->core->writer_pos : r->nroutes++;
  r->routes[pos] = add;
  if (add != NULL) ((hr__core_t *)add->core)->writer_pos = pos;
  else r->holes++;
  if (r->holes > r->nroutes / 2) compact_routes(r);
  return 0;
}

/* The same change with whole trees (lock held): the route array with
 * `old` out and `add` in, last, where the build checks it. */
static int rebuild(hr_router_t *r, hr_route_t *old, hr_route_t *add, hr_route_error_t *err) {
  hr_route_t **routes;
  size_t n, k = 0, i;
  int rc;
  compact_routes(r);
  n = r->nroutes - (old != NULL) + (add != NULL);
  routes = hr__mem_alloc(&r->mem, (n ? n : 1) * sizeof(*routes));
  if (routes == NULL) return HR_ENOMEM;
  for (i = 0; i < r->nroutes; i++)
    if (r->routes[i] != old) routes[k++] = r->routes[i];
  if (add != NULL) routes[k++] = add;
  rc = publish(r, routes, n, err);
  if (rc != 0) hr__mem_free(&r->mem, routes);
  return rc;
}

/* A change, with whole trees when it needs them or when dead nodes have
 * come to outweigh live ones in the blocks (lock held). */
static int apply_change(hr_router_t *r, hr_route_t *old, hr_route_t *add,
                        hr_route_error_t *err) {
  int rc = change(r, old, add, err);
  if (rc == HR__REBUILD) return rebuild(r, old, add, err);
  if (rc == 0 && hr__wtree_wasteful(r->wt))
    (void)rebuild(r, NULL, NULL, NULL); /* compaction: when it fails, later */
  return rc;
}

/* Frees an invoker that never made it into a table. */
static void drop_new(hr_route_t *inv) {
  hr__invoker_ref(inv);
  hr__invoker_unref(inv);
}

int hr__router_publish(hr_router_t *r, hr_route_t **routes, size_t n,
                       hr_route_error_t *err) {
  return publish(r, routes, n, err);
}

void hr__router_unlock(hr_router_t *r) { unlock_and_reclaim(r); }

void hr__invoker_drop_new(hr_route_t *inv) { drop_new(inv); }

void hr__router_reclaim(hr_router_t *r, hr__table_t *t, int wait) { reclaim_list(r, t, wait); }

hr__table_t *hr__router_take_batch(hr_router_t *r, int all) { return take_batch(r, all); }

void hr__router_compact(hr_router_t *r) { compact_routes(r); }

int hr__router_change(hr_router_t *r, hr_route_t *old, hr_route_t *add, hr_route_error_t *err) {
  return apply_change(r, old, add, err);
}
