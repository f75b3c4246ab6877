/* SPDX-License-Identifier: MIT */
/*
 * The router's public face: creation, groups and hosts, registration and
 * publication of route table snapshots, the router's own answers and the
 * request-local keys.  Matching is match.c.
 *
 * Publication: writers hold `lock`, build a complete new hr__table_t that
 * nothing else can see yet, and publish it with one release store to
 * `router->table`; readers load it with acquire, so every byte of the table
 * and of the routes it references is visible before the pointer is.  Nothing
 * reachable from a published table is written again, except the invokers'
 * atomics (see route.h).  One route added, replaced or removed freezes only
 * its path (wtree.c): the new table shares every other node with the old
 * one, and the old table takes with it what the new one no longer reaches
 * (its garbage).  A replaced table is reclaimed after a grace period, when
 * every reader that loaded it has left its read-side critical section:
 * replaced tables wait on a router-private list, and every HR__RETIRE_BATCH
 * of them go to call_rcu together, so that a writer never waits for
 * readers (hr_router_free waits for the callbacks).  The leaves hold a
 * reference on each invoker; requests that outlive their critical section
 * take their own.
 */
#include <string.h>

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

static void reclaim_list(hr_router_t *r, hr__table_t *t, int wait);
static hr__table_t *take_batch(hr_router_t *r, int all);

/* Drops a hold on the router struct (see `holds` in route.h); the last
 * frees it.  acq_rel: every holder's use of the struct (a callback's
 * frees through r->mem, the owner's teardown) happens before the free. */
static void router_drop(hr_router_t *r) {
  hr__mem_t mem;
  if (atomic_fetch_sub_explicit(&r->holds, 1, memory_order_acq_rel) != 1) return;
  mem = r->mem;
  hr__mem_free(&mem, r);
}

void hr_route_options_init(hr_route_options_t *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->body_mode = HR_BODY_BUFFER;
}

void hr_router_options_init(hr_router_options_t *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->trailing_slash = HR_SLASH_STRICT;
  opts->unclean_path = HR_CLEAN_REDIRECT;
}

int hr_router_new(hr_router_t **out, const hr_router_options_t *opts) {
  hr_router_options_t o;
  hr__mem_t mem;
  hr_router_t *r;
  hr__plan_t plan;
  hr__wtree_t *wt = NULL;
  if (out == NULL) return HR_EINVAL;
  *out = NULL;
  memset(&plan, 0, sizeof(plan));
  if (opts != NULL)
    o = *opts;
  else
    hr_router_options_init(&o);
  if ((o.trailing_slash != HR_SLASH_STRICT && o.trailing_slash != HR_SLASH_REDIRECT) ||
      (o.unclean_path != HR_CLEAN_REDIRECT && o.unclean_path != HR_CLEAN_REJECT))
    return HR_EINVAL;
  hr__mem_init(&mem, o.allocator);
  r = hr__mem_alloc(&mem, sizeof(*r));
  if (r == NULL) return HR_ENOMEM;
  memset(r, 0, sizeof(*r));
  r->mem = mem;
  r->mem.shared = 1; /* any thread registers routes and types */
  r->opts = o;
  r->opts.case_insensitive = o.case_insensitive != 0;
  r->root.router = r;
  r->root.prefix = (char *)"";
  r->mws_tail = &r->mws;
  if (hr__registry_init(&r->registry, &r->mem) != 0) {
    hr__mem_free(&mem, r);
    return HR_ENOMEM;
  }
  if (hr__wtree_build(&r->mem, NULL, 0, &wt, NULL) != 0 ||
      hr__wtree_prepare(wt, NULL, &plan) != 0 || pthread_mutex_init(&r->lock, NULL) != 0) {
    if (plan.table != NULL) hr__wtree_abort(&plan);
    hr__wtree_free(wt);
    hr__registry_free(&r->registry);
    hr__mem_free(&mem, r);
    return HR_ENOMEM;
  }
  hr__wtree_commit(&plan);
  r->wt = wt;
  hr__mem_free(&r->mem, plan.garbage); /* nothing was replaced */
  atomic_init(&r->table, plan.table);
  atomic_init(&r->nlocals, 0);
  atomic_init(&r->holds, 1);
  *out = r;
  return 0;
}

void hr_router_free(hr_router_t *r) {
  hr_group_t *g;
  hr__mwreg_t *mw;
  hr__table_t *cur;
  if (r == NULL) return;
  cur = atomic_load_explicit(&r->table, memory_order_relaxed);
  if (urcu_bp_read_ongoing()) {
    /* Inside a read-side section (a handler freeing a router of its own):
     * no grace period can be waited for here, and liburcu's rcu_barrier
     * refuses to run (it returns at once).  Every table goes to call_rcu,
     * the current one too (this section may have matched in it) with the
     * trees as its garbage, each with its hold on the struct, which the
     * last callback frees. */
    cur->garbage = hr__wtree_retire(r->wt);
    cur->retired_next = take_batch(r, 1);
    reclaim_list(r, cur, 1);
  } else {
    reclaim_list(r, take_batch(r, 1), 1);
    /* Wait for the tables handed to call_rcu.  Acquire: pairs with the
     * callbacks' acq_rel drops, so that 1 means each has finished with the
     * struct. */
    if (atomic_load_explicit(&r->holds, memory_order_acquire) != 1) hr__rcu_barrier();
    hr__table_free(cur);
    hr__wtree_free(r->wt);
  }
  hr__mem_free(&r->mem, r->routes);
  while ((g = r->groups) != NULL) {
    r->groups = g->next;
    hr__mem_free(&r->mem, g); /* host and prefix live in the same block */
  }
  while ((mw = r->mws) != NULL) {
    r->mws = mw->next;
    hr__mem_free(&r->mem, mw);
  }
  while (r->answers != NULL) {
    struct hr__answers_reg_s *a = r->answers;
    r->answers = a->next;
    hr__mem_free(&r->mem, a); /* the host lives in the same block */
  }
  hr__registry_free(&r->registry);
  pthread_mutex_destroy(&r->lock);
  router_drop(r); /* the owner's hold */
}

void hr_router_read_lock(void) { hr__rcu_read_lock(); }
void hr_router_read_unlock(void) { hr__rcu_read_unlock(); }

int hr__router_loop_acquire(hr_router_t *r) {
  int i, found = -1;
  pthread_mutex_lock(&r->lock);
  for (i = 0; i < HR__MAX_LOOPS; i++)
    if (!(r->loops_used & ((uint64_t)1 << i))) {
      r->loops_used |= (uint64_t)1 << i;
      found = i;
      break;
    }
  pthread_mutex_unlock(&r->lock);
  return found;
}

void hr__router_loop_release(hr_router_t *r, int loop) {
  pthread_mutex_lock(&r->lock);
  r->loops_used &= ~((uint64_t)1 << loop);
  pthread_mutex_unlock(&r->lock);
}

/* ---- publication --------------------------------------------------------- */

static void reclaim(struct rcu_head *head) {
  hr__table_t *t = caa_container_of(head, hr__table_t, rcu.head);
  hr_router_t *r;
  HR__CB_BEGIN(head); /* the queue and the grace period: see util/rcu.h */
  /* Every table frees through its router's mem (hr__table_build). */
  r = caa_container_of(t->mem, hr_router_t, mem);
  hr__table_free(t);
  router_drop(r); /* taken in reclaim_list */
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

/* Copies into each host table the answers registered for it, or else the
 * default registration. */
static void attach_answers(const hr_router_t *r, hr__table_t *t) {
  size_t i;
  for (i = 0; i <= t->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : (hr__host_t *)&t->hosts[i - 1];
    const struct hr__answers_reg_s *a, *def = NULL, *own = NULL;
    for (a = r->answers; a != NULL; a = a->next) {
      if (a->host == NULL) def = a;
      else if (h->name.len && hr_span_eq_nocase(hr_span_cstr(a->host), h->name)) own = a;
    }
    if (own != NULL || def != NULL) h->answers = (own ? own : def)->answers;
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
  attach_answers(r, t);
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

/* ---- groups ---------------------------------------------------------------- */

/* A group's host: a name (letters, digits, '-', '.', '_'; a trailing dot
 * is dropped by the caller) or a bracketed IP literal ("[::1]").  No port:
 * requests are matched with theirs removed. */
static int valid_host_name(const char *h) {
  size_t n = strlen(h), i;
  int literal;
  if (n == 0 || n > 255 || strcmp(h, ".") == 0) return 0;
  literal = h[0] == '[';
  if (literal && (n < 3 || h[n - 1] != ']')) return 0;
  for (i = literal; i < n - (size_t)literal; i++) {
    unsigned char c = (unsigned char)h[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (literal ? !(alnum || c == ':' || c == '.') : !(alnum || c == '-' || c == '.' || c == '_'))
      return 0;
  }
  return 1;
}

/* Stores a valid host name in dst (host_len + 1 bytes): lower-cased,
 * without the trailing dot of an absolute name ("example.com." names the
 * same host as "example.com", as in pick_host), NUL-terminated. */
static size_t host_len(const char *h) {
  size_t n = strlen(h);
  return n > 1 && h[n - 1] == '.' ? n - 1 : n;
}
static char *host_copy(char *dst, const char *h) {
  size_t i, n = host_len(h);
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)h[i];
    dst[i] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
  }
  dst[n] = '\0';
  return dst;
}

static void h_none(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

int hr_router_group(hr_router_t *r, const char *host, const char *prefix,
                    hr_group_t **out) {
  size_t hl, pl = prefix ? strlen(prefix) : 0;
  hr_group_t *g;
  hr__core_t *probe;
  hr_route_options_t o;
  char *p;
  int rc;
  if (r == NULL || out == NULL) return HR_EINVAL;
  *out = NULL;
  if (host != NULL && !valid_host_name(host)) return HR_EINVAL;
  hl = host != NULL ? host_len(host) : 0;
  if (pl > 0 && (prefix[0] != '/' || prefix[pl - 1] == '/')) return HR_EPATTERN;
  /* The prefix must itself be a valid pattern. */
  if (pl > 0) {
    hr_route_options_init(&o);
    rc = hr__core_compile(&r->mem, r->opts.case_insensitive, NULL, NULL, NULL,
                          "GET", prefix, h_none, NULL, &o, &probe, NULL);
    if (rc != 0) return rc;
    if (probe->ntoks && probe->toks[probe->ntoks - 1].kind == HR__TOK_CATCH) {
      hr__core_unref(&r->mem, probe);
      return HR_EPATTERN; /* nothing can follow a catch-all */
    }
    hr__core_unref(&r->mem, probe);
  }
  g = hr__mem_alloc(&r->mem, sizeof(*g) + hl + 1 + pl + 1);
  if (g == NULL) return HR_ENOMEM;
  memset(g, 0, sizeof(*g));
  p = (char *)(g + 1);
  g->router = r;
  if (host != NULL) {
    g->host = host_copy(p, host);
    p += hl + 1;
  }
  memcpy(p, prefix ? prefix : "", pl + 1);
  g->prefix = p;
  pthread_mutex_lock(&r->lock);
  g->next = r->groups;
  r->groups = g;
  pthread_mutex_unlock(&r->lock);
  *out = g;
  return 0;
}

int hr__route_compile(hr_group_t *g, const char *methods, const char *pattern,
                      hr_handler_cb handler, void *udata, const hr_route_options_t *opts,
                      hr__core_t **out) {
  hr_route_options_t defaults;
  hr_router_t *r = g->router;
  hr__core_t *core;
  hr_route_error_t *err;
  size_t n;
  int rc;
  if (opts == NULL) {
    hr_route_options_init(&defaults);
    opts = &defaults;
  }
  err = opts->error;
  rc = hr__core_compile(&r->mem, r->opts.case_insensitive, g, g->host, g->prefix,
                        methods, pattern, handler, udata, opts, &core, err);
  if (rc != 0) return rc;
  for (n = 0; n < core->nparams; n++) {
    /* A delegate-typed parameter needs a registered type with a size. */
    unsigned t = (unsigned)core->ptypes[n];
    const hr__dtype_t *dt = t > 0x10000 ? hr__registry_type(&r->registry, t - 0x10000) : NULL;
    if (t > 0x10000 && (dt == NULL || dt->value_size == 0)) {
      hr__core_unref(&r->mem, core);
      if (err != NULL) {
        memset(err, 0, sizeof(*err));
        err->code = HR_EINVAL;
        err->reason = "parameter typed with an unknown type, or one without a value size";
      }
      return HR_EINVAL;
    }
  }
  *out = core;
  return 0;
}

int hr_group_add(hr_group_t *g, const char *methods, const char *pattern,
                 hr_handler_cb handler, void *udata,
                 const hr_route_options_t *opts) {
  hr_router_t *r;
  hr__core_t *core;
  hr_route_t *inv = NULL, *same = NULL;
  hr__mwlist_t mws;
  hr_route_error_t *err;
  int rc;
  if (g == NULL || methods == NULL || pattern == NULL || handler == NULL)
    return HR_EINVAL;
  r = g->router;
  err = opts != NULL ? opts->error : NULL;
  if ((rc = hr__route_compile(g, methods, pattern, handler, udata, opts, &core)) != 0) return rc;

  pthread_mutex_lock(&r->lock);
  mws.head = r->mws;
  rc = hr__invoker_new(&r->mem, core, &mws, &inv);
  hr__core_unref(&r->mem, core); /* the invoker holds it now */
  if (rc != 0) goto fail;
  if (opts != NULL && opts->replace) same = hr__wtree_find(r->wt, core);
  if ((rc = apply_change(r, same, inv, err)) != 0) goto fail;
  unlock_and_reclaim(r);
  return 0;
fail:
  pthread_mutex_unlock(&r->lock);
  if (inv != NULL) drop_new(inv);
  if (err != NULL && rc == HR_ENOMEM) {
    memset(err, 0, sizeof(*err));
    err->code = rc;
    err->reason = "out of memory";
  }
  return rc;
}

int hr_group_remove(hr_group_t *g, const char *methods, const char *pattern) {
  hr_router_t *r;
  hr__core_t *probe;
  hr_route_t *same;
  hr_route_options_t o;
  int rc;
  if (g == NULL || methods == NULL || pattern == NULL) return HR_EINVAL;
  r = g->router;
  hr_route_options_init(&o);
  /* Compiled only to normalise the methods and the full pattern. */
  rc = hr__core_compile(&r->mem, r->opts.case_insensitive, g, g->host, g->prefix,
                        methods, pattern, h_none, NULL, &o, &probe, NULL);
  if (rc != 0) return rc;
  pthread_mutex_lock(&r->lock);
  same = hr__wtree_find(r->wt, probe);
  hr__core_unref(&r->mem, probe);
  rc = same != NULL ? apply_change(r, same, NULL, NULL) : HR_ENOTFOUND;
  unlock_and_reclaim(r);
  return rc;
}

int hr_router_remove(hr_router_t *r, const char *methods, const char *pattern) {
  if (r == NULL) return HR_EINVAL;
  return hr_group_remove(&r->root, methods, pattern);
}

/* Registers middleware and recompiles every invoker (lock held inside). */
static int use(hr_router_t *r, const hr_group_t *group, const char *host,
               const char *prefix, hr_before_cb before, hr_after_cb after,
               void *udata, int head) {
  size_t hl, pl = prefix ? strlen(prefix) : 0, i;
  hr__mwreg_t *reg;
  hr_route_t **routes;
  hr__mwlist_t mws;
  char *p;
  int rc = 0;
  if (before == NULL && after == NULL) return HR_EINVAL;
  if (host != NULL && !valid_host_name(host)) return HR_EINVAL;
  hl = host != NULL ? host_len(host) : 0;
  if (pl > 0 && (prefix[0] != '/' || (pl > 1 && prefix[pl - 1] == '/'))) return HR_EINVAL;
  reg = hr__mem_alloc(&r->mem, sizeof(*reg) + hl + 1 + pl + 1);
  if (reg == NULL) return HR_ENOMEM;
  memset(reg, 0, sizeof(*reg));
  p = (char *)(reg + 1);
  reg->mw.before = before;
  reg->mw.after = after;
  reg->mw.udata = udata;
  reg->mw.head = head;
  reg->group = group;
  if (host != NULL) {
    reg->host = host_copy(p, host);
    p += hl + 1;
  }
  memcpy(p, prefix ? prefix : "", pl + 1);
  if (pl == 1) p[0] = '\0'; /* "/" covers everything, like "" */
  reg->prefix = p;

  pthread_mutex_lock(&r->lock);
  compact_routes(r);
  *r->mws_tail = reg;
  mws.head = r->mws;
  routes = hr__mem_alloc(&r->mem, (r->nroutes ? r->nroutes : 1) * sizeof(*routes));
  if (routes == NULL) rc = HR_ENOMEM;
  for (i = 0; rc == 0 && i < r->nroutes; i++) {
    rc = hr__invoker_new(&r->mem, (hr__core_t *)r->routes[i]->core, &mws, &routes[i]);
    if (rc != 0) {
      while (i > 0) drop_new(routes[--i]);
    }
  }
  if (rc == 0) {
    rc = publish(r, routes, r->nroutes, NULL);
    if (rc != 0)
      for (i = 0; i < r->nroutes; i++) drop_new(routes[i]);
  }
  if (rc == 0) {
    r->mws_tail = &reg->next;
  } else {
    *r->mws_tail = NULL;
    hr__mem_free(&r->mem, routes);
    hr__mem_free(&r->mem, reg);
  }
  unlock_and_reclaim(r);
  return rc;
}

int hr_router_use(hr_router_t *r, const char *host, const char *prefix,
                  hr_before_cb before, hr_after_cb after, void *udata) {
  if (r == NULL) return HR_EINVAL;
  return use(r, NULL, host, prefix, before, after, udata, 0);
}

int hr_group_use(hr_group_t *g, hr_before_cb before, hr_after_cb after,
                 void *udata) {
  if (g == NULL) return HR_EINVAL;
  return use(g->router, g, NULL, NULL, before, after, udata, 0);
}

int hr_router_use_head(hr_router_t *r, const char *host, const char *prefix,
                       hr_before_cb head, void *udata) {
  if (r == NULL || head == NULL) return HR_EINVAL;
  return use(r, NULL, host, prefix, head, NULL, udata, 1);
}

int hr_group_use_head(hr_group_t *g, hr_before_cb head, void *udata) {
  if (g == NULL || head == NULL) return HR_EINVAL;
  return use(g->router, g, NULL, NULL, head, NULL, udata, 1);
}

int hr_router_add(hr_router_t *r, const char *methods, const char *pattern,
                  hr_handler_cb handler, void *udata,
                  const hr_route_options_t *opts) {
  if (r == NULL) return HR_EINVAL;
  return hr_group_add(&r->root, methods, pattern, handler, udata, opts);
}

/* ---- the router's own answers ------------------------------------------------ */

void hr_answers_init(hr_answers_t *answers) {
  if (answers != NULL) memset(answers, 0, sizeof(*answers));
}

int hr_router_set_answers(hr_router_t *r, const char *host, const hr_answers_t *answers) {
  struct hr__answers_reg_s **pp, *a;
  hr_route_t **routes;
  size_t hl;
  int rc;
  if (r == NULL || (host != NULL && !valid_host_name(host))) return HR_EINVAL;
  hl = host != NULL ? host_len(host) : 0;
  pthread_mutex_lock(&r->lock);
  for (pp = &r->answers; *pp != NULL; pp = &(*pp)->next)
    if (((*pp)->host == NULL) == (host == NULL) &&
        (host == NULL || hr_span_eq_nocase(hr_span_cstr((*pp)->host), hr_span_cstr(host))))
      break;
  if (answers != NULL && *pp == NULL) {
    a = hr__mem_alloc(&r->mem, sizeof(*a) + hl + 1);
    if (a == NULL) {
      pthread_mutex_unlock(&r->lock);
      return HR_ENOMEM;
    }
    memset(a, 0, sizeof(*a));
    if (host != NULL) a->host = host_copy((char *)(a + 1), host);
    *pp = a;
  }
  if (answers != NULL) {
    (*pp)->answers = *answers;
  } else if (*pp != NULL) {
    a = *pp;
    *pp = a->next;
    hr__mem_free(&r->mem, a);
  }
  /* Publish the same routes with the new answers. */
  compact_routes(r);
  routes = hr__mem_alloc(&r->mem, (r->nroutes ? r->nroutes : 1) * sizeof(*routes));
  if (routes == NULL) {
    pthread_mutex_unlock(&r->lock);
    return HR_ENOMEM;
  }
  if (r->nroutes) memcpy(routes, r->routes, r->nroutes * sizeof(*routes));
  rc = publish(r, routes, r->nroutes, NULL);
  if (rc != 0) hr__mem_free(&r->mem, routes);
  unlock_and_reclaim(r);
  return rc;
}

/* ---- request locals ---------------------------------------------------------- */

int hr_router_local_key(hr_router_t *r, hr_local_destroy_cb destroy, void *udata,
                        hr_local_key_t *key) {
  unsigned n;
  if (r == NULL || key == NULL) return HR_EINVAL;
  pthread_mutex_lock(&r->lock);
  n = atomic_load_explicit(&r->nlocals, memory_order_relaxed);
  if (n == HR_MAX_LOCALS) {
    pthread_mutex_unlock(&r->lock);
    return HR_ETOOLARGE;
  }
  r->locals[n].destroy = destroy;
  r->locals[n].udata = udata;
  /* Pairs with the acquire loads in hr__router_local_*: the entry is
   * complete before a loop can use the key. */
  atomic_store_explicit(&r->nlocals, n + 1, memory_order_release);
  pthread_mutex_unlock(&r->lock);
  *key = n;
  return 0;
}

int hr__router_local_known(hr_router_t *r, hr_local_key_t key) {
  return key < atomic_load_explicit(&r->nlocals, memory_order_acquire);
}

void hr__router_local_destroy(hr_router_t *r, hr_local_key_t key, void *value) {
  /* key was known when its value was set: its entry is complete. */
  if (r->locals[key].destroy != NULL) r->locals[key].destroy(r->locals[key].udata, value);
}

/* ---- introspection --------------------------------------------------------- */

hr_span_t hr_route_pattern(const hr_route_t *route) { return route->core->pattern; }
hr_span_t hr_route_methods(const hr_route_t *route) { return route->core->methods_text; }
void *hr_route_udata(const hr_route_t *route) { return route->core->udata; }

typedef struct stats_find_s {
  const hr__core_t *probe;
  const hr__core_t *found;
} stats_find_t;

static void stats_find(void *ctx, hr_route_t *route) {
  stats_find_t *f = ctx;
  const hr__core_t *c = route->core;
  if (f->found == NULL && hr_span_eq(c->host, f->probe->host) &&
      hr__patterns_equiv(c, f->probe) && hr__methods_equal(c, f->probe))
    f->found = c;
}

int hr_router_route_stats(hr_router_t *r, const char *host, const char *methods,
                          const char *pattern, hr_route_stats_t *out) {
  hr__core_t *probe;
  hr_route_options_t o;
  const hr__table_t *t;
  stats_find_t find;
  int rc;
  if (r == NULL || methods == NULL || pattern == NULL || out == NULL)
    return HR_EINVAL;
  hr_route_options_init(&o);
  rc = hr__core_compile(&r->mem, r->opts.case_insensitive, NULL, host, NULL,
                        methods, pattern, h_none, NULL, &o, &probe, NULL);
  if (rc != 0) return rc;
  rc = HR_ENOTFOUND;
  hr__rcu_read_lock();
  /* Pairs with the release store in install(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  find.probe = probe;
  find.found = NULL;
  hr__table_each_route(t, stats_find, &find);
  if (find.found != NULL) {
    hr__core_stats(find.found, out);
    rc = 0;
  }
  hr__rcu_read_unlock();
  hr__core_unref(&r->mem, probe);
  return rc;
}

typedef struct each_core_s {
  void (*fn)(void *ctx, unsigned pass, const hr__core_t *core);
  void *ctx;
  unsigned pass;
} each_core_t;

static void each_core_step(void *ctx, hr_route_t *route) {
  each_core_t *e = ctx;
  e->fn(e->ctx, e->pass, route->core);
}

void hr__router_each_core(hr_router_t *r, unsigned passes,
                          void (*fn)(void *ctx, unsigned pass, const hr__core_t *core),
                          void *ctx) {
  const hr__table_t *t;
  each_core_t e = {fn, ctx, 0};
  hr__rcu_read_lock();
  /* Pairs with the release store in install(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  for (e.pass = 0; e.pass < passes; e.pass++) {
    fn(ctx, e.pass, NULL);
    hr__table_each_route(t, each_core_step, &e);
  }
  hr__rcu_read_unlock();
}

void hr_router_stats(hr_router_t *r, hr_router_stats_t *out) {
  const hr__table_t *t;
  memset(out, 0, sizeof(*out));
  if (r == NULL) return;
  hr__rcu_read_lock();
  /* Pairs with the release store in install(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  out->routes = t->nroutes;
  out->hosts = t->nhosts;
  out->nodes = t->nodes;
  out->table_bytes = t->bytes;
  hr__rcu_read_unlock();
}

int hr_router_dump(hr_router_t *r,
                   void (*write)(void *ctx, const char *p, size_t n), void *ctx) {
  int rc;
  if (r == NULL || write == NULL) return HR_EINVAL;
  hr__rcu_read_lock();
  /* Pairs with the release store in install(). */
  rc = hr__tree_dump(atomic_load_explicit(&r->table, memory_order_acquire),
                     write, ctx);
  hr__rcu_read_unlock();
  return rc;
}
