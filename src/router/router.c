/* SPDX-License-Identifier: MIT */
/*
 * The router's public face: creation, groups and hosts, registration and
 * publication of route table snapshots, and matching (path normalisation,
 * host choice, tree lookup, method choice, redirects).
 *
 * Publication: writers hold `lock`, build a complete new hr__table_t that
 * nothing else can see yet, and publish it with one release store to
 * `router->table`; readers load it with acquire, so every byte of the table
 * and of the routes it references is visible before the pointer is.  Nothing
 * reachable from a published table is written again, except the invokers'
 * atomics (see route.h).  A replaced table is reclaimed after a grace
 * period, when every reader that loaded it has left its read-side critical
 * section: replaced tables wait on a router-private list, and every
 * HR__RETIRE_BATCH of them one synchronize_rcu() frees the lot (a writer
 * that is itself inside a read-side section cannot wait, and hands them to
 * call_rcu instead).  The table holds a reference on each invoker;
 * requests that outlive their critical section take their own.
 */
#include <string.h>

#include "router/path.h"
#include "router/route.h"
#include "router/walk.h"
#include "util/rcu.h"
#include "util/text.h"

#ifdef HR__TSAN
char hr__rcu_tsan_edge, hr__rcu_tsan_barrier_edge;
#endif

/* Replaced tables kept before one grace period frees them together. */
#define HR__RETIRE_BATCH 16

static void reclaim_list(hr__table_t *t);
static const hr__host_t *pick_host(const hr__table_t *t, hr_span_t host);
static hr__table_t *take_batch(hr_router_t *r, int all);

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
  hr__table_t *t;
  if (out == NULL) return HR_EINVAL;
  *out = NULL;
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
  if (hr__table_build(&r->mem, NULL, 0, 0, &t, NULL) != 0) {
    hr__registry_free(&r->registry);
    hr__mem_free(&mem, r);
    return HR_ENOMEM;
  }
  if (pthread_mutex_init(&r->lock, NULL) != 0) {
    hr__table_free(t);
    hr__registry_free(&r->registry);
    hr__mem_free(&mem, r);
    return HR_ENOMEM;
  }
  atomic_init(&r->table, t);
  atomic_init(&r->nlocals, 0);
  *out = r;
  return 0;
}

void hr_router_free(hr_router_t *r) {
  hr_group_t *g;
  hr__mwreg_t *mw;
  hr__mem_t mem;
  if (r == NULL) return;
  reclaim_list(take_batch(r, 1));
  /* Wait for tables handed to call_rcu, if any (liburcu's call_rcu thread
   * works in 10 ms batches, which is why it is not the usual path). */
  if (r->used_call_rcu) hr__rcu_barrier();
  hr__table_free(atomic_load_explicit(&r->table, memory_order_relaxed));
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
  mem = r->mem;
  hr__mem_free(&mem, r);
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
  hr__table_t *t = caa_container_of(head, hr__table_t, rcu);
  HR__GP_ACQUIRE(); /* the grace period: see util/rcu.h */
  hr__table_free(t);
  HR__CB_DONE();
}

/* Frees a list of replaced tables after a grace period.  Called without
 * the router lock: waiting for readers while holding it would deadlock with
 * a reader (a handler) that registers a route. */
static void reclaim_list(hr__table_t *t) {
  hr__table_t *next;
  if (t == NULL) return;
  if (urcu_bp_read_ongoing()) {
    /* Waiting for a grace period from inside a read-side section would
     * wait for ourselves: let call_rcu free them later. */
    for (; t != NULL; t = next) {
      next = t->retired_next;
      urcu_bp_call_rcu(&t->rcu, reclaim);
    }
    return;
  }
  urcu_bp_synchronize_rcu();
  HR__GP_ACQUIRE(); /* the grace period: see util/rcu.h */
  for (; t != NULL; t = next) {
    next = t->retired_next;
    hr__table_free(t);
  }
}

/* Detaches the retired list when a batch is due (lock held). */
static hr__table_t *take_batch(hr_router_t *r, int all) {
  hr__table_t *t = r->retired;
  if (t == NULL || (!all && r->nretired < HR__RETIRE_BATCH)) return NULL;
  if (urcu_bp_read_ongoing()) r->used_call_rcu = 1; /* see hr_router_free */
  r->retired = NULL;
  r->nretired = 0;
  return t;
}

/* Unlocks the router, then frees a due batch of replaced tables. */
static void unlock_and_reclaim(hr_router_t *r) {
  hr__table_t *batch = take_batch(r, 0);
  pthread_mutex_unlock(&r->lock);
  reclaim_list(batch);
}

/* Builds a table from `routes` and publishes it (lock held).  On success
 * the router's route array becomes `routes` (the old array is freed), the
 * invokers left out are marked retired, and the old table is reclaimed
 * after a grace period.  On error nothing changed and `routes` is the
 * caller's. */
/* Whether some after-middleware of the router applies to a request of
 * `host` that no route answered: router-level, no prefix, every host or
 * this one. */
static int has_fallback_after(const hr_router_t *r, hr_span_t host) {
  const hr__mwreg_t *reg;
  for (reg = r->mws; reg != NULL; reg = reg->next)
    if (reg->mw.after != NULL && reg->group == NULL && reg->prefix[0] == '\0' &&
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

const hr_answers_t *hr__router_answers(hr_router_t *r, hr_span_t host) {
  /* Pairs with the release store in publish(). */
  const hr__table_t *t = atomic_load_explicit(&r->table, memory_order_acquire);
  return &pick_host(t, host)->answers;
}

/* Gives each host table of `t` its fallback invoker (hr__host_t), when
 * some after-middleware applies.  Returns 0 or HR_ENOMEM. */
static int attach_fallbacks(hr_router_t *r, hr__table_t *t) {
  hr__mwlist_t mws = {r->mws};
  size_t i;
  for (i = 0; i <= t->nhosts; i++) {
    hr__host_t *h = i == 0 ? &t->def : (hr__host_t *)&t->hosts[i - 1];
    hr__core_t *core;
    hr_route_t *inv;
    int rc;
    if (!has_fallback_after(r, h->name)) continue;
    if ((rc = hr__core_fallback(&r->mem, h->name, &core)) != 0) return rc;
    rc = hr__invoker_new(&r->mem, core, &mws, &inv); /* takes a core reference */
    hr__core_unref(&r->mem, core);
    if (rc != 0) return rc;
    hr__invoker_ref(inv); /* the table's */
    h->fallback = inv;
  }
  return 0;
}

const hr_route_t *hr__router_fallback(hr_router_t *r, hr_span_t host) {
  /* Pairs with the release store in publish(). */
  const hr__table_t *t = atomic_load_explicit(&r->table, memory_order_acquire);
  return pick_host(t, host)->fallback;
}

static int publish(hr_router_t *r, hr_route_t **routes, size_t n,
                   hr_route_error_t *err) {
  hr__table_t *t, *old;
  size_t i;
  int rc = hr__table_build(&r->mem, routes, n, r->opts.case_insensitive, &t, err);
  if (rc != 0) return rc;
  if ((rc = attach_fallbacks(r, t)) != 0) {
    hr__table_discard(t);
    return rc;
  }
  attach_answers(r, t);
  old = atomic_load_explicit(&r->table, memory_order_relaxed);
  /* Pairs with the acquire load in hr_router_match() and the server's
   * dispatch: the table and every invoker it references are complete
   * before a reader can see the pointer. */
  atomic_store_explicit(&r->table, t, memory_order_release);
  r->mark++;
  for (i = 0; i < n; i++) ((hr__core_t *)routes[i]->core)->writer_mark = r->mark;
  for (i = 0; i < old->ninvokers; i++) {
    hr__core_t *c = (hr__core_t *)old->invokers[i]->core;
    if (c->writer_mark != r->mark)
      /* Pairs with the acquire load in the loops' context sweep: it sees
       * the route as gone once this table is published. */
      atomic_store_explicit(&c->retired, 1, memory_order_release);
  }
  hr__mem_free(&r->mem, r->routes);
  r->routes = routes;
  r->nroutes = n;
  r->routes_cap = n;
  old->retired_next = r->retired;
  r->retired = old;
  r->nretired++; /* freed in batches by unlock_and_reclaim() */
  return 0;
}

/* Frees an invoker that never made it into a table. */
static void drop_new(hr_route_t *inv) {
  hr__invoker_ref(inv);
  hr__invoker_unref(inv);
}

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

/* Index of the route with the same host, pattern and methods, or -1. */
static long find_same(hr_router_t *r, const hr__core_t *c) {
  size_t i;
  for (i = 0; i < r->nroutes; i++) {
    const hr__core_t *o = r->routes[i]->core;
    if (hr_span_eq(o->host, c->host) && hr__patterns_equiv(o, c) &&
        hr__methods_equal(o, c))
      return (long)i;
  }
  return -1;
}

int hr_group_add(hr_group_t *g, const char *methods, const char *pattern,
                 hr_handler_cb handler, void *udata,
                 const hr_route_options_t *opts) {
  hr_route_options_t defaults;
  hr_router_t *r;
  hr__core_t *core;
  hr_route_t *inv = NULL, **routes;
  hr__mwlist_t mws;
  hr_route_error_t *err;
  long same = -1;
  size_t n;
  int rc;
  if (g == NULL || methods == NULL || pattern == NULL || handler == NULL)
    return HR_EINVAL;
  r = g->router;
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

  pthread_mutex_lock(&r->lock);
  mws.head = r->mws;
  rc = hr__invoker_new(&r->mem, core, &mws, &inv);
  hr__core_unref(&r->mem, core); /* the invoker holds it now */
  if (rc != 0) goto fail;
  if (opts->replace) same = find_same(r, core);
  n = r->nroutes + (same < 0);
  routes = hr__mem_alloc(&r->mem, (n ? n : 1) * sizeof(*routes));
  if (routes == NULL) {
    rc = HR_ENOMEM;
    goto fail;
  }
  if (r->nroutes) memcpy(routes, r->routes, r->nroutes * sizeof(*routes));
  routes[same < 0 ? (long)r->nroutes : same] = inv;
  if (same >= 0 && (size_t)same != n - 1) {
    /* The table is checked against its last route: move it there. */
    routes[same] = routes[n - 1];
    routes[n - 1] = inv;
  }
  rc = publish(r, routes, n, err);
  if (rc != 0) {
    hr__mem_free(&r->mem, routes);
    goto fail;
  }
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
  hr_route_t **routes;
  hr_route_options_t o;
  long same;
  int rc;
  if (g == NULL || methods == NULL || pattern == NULL) return HR_EINVAL;
  r = g->router;
  hr_route_options_init(&o);
  /* Compiled only to normalise the methods and the full pattern. */
  rc = hr__core_compile(&r->mem, r->opts.case_insensitive, g, g->host, g->prefix,
                        methods, pattern, h_none, NULL, &o, &probe, NULL);
  if (rc != 0) return rc;
  pthread_mutex_lock(&r->lock);
  same = find_same(r, probe);
  hr__core_unref(&r->mem, probe);
  if (same < 0) {
    pthread_mutex_unlock(&r->lock);
    return HR_ENOTFOUND;
  }
  routes = hr__mem_alloc(&r->mem, (r->nroutes > 1 ? r->nroutes - 1 : 1) * sizeof(*routes));
  if (routes == NULL) {
    pthread_mutex_unlock(&r->lock);
    return HR_ENOMEM;
  }
  memcpy(routes, r->routes, (size_t)same * sizeof(*routes));
  memcpy(routes + same, r->routes + same + 1,
         (r->nroutes - (size_t)same - 1) * sizeof(*routes));
  rc = publish(r, routes, r->nroutes - 1, NULL);
  if (rc != 0) hr__mem_free(&r->mem, routes);
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

/* ---- matching -------------------------------------------------------------- */

static const hr__host_t *pick_host(const hr__table_t *t, hr_span_t host) {
  size_t i, n = host.len;
  if (t->nhosts == 0 || host.len == 0) return &t->def;
  /* Drop the port: after ']' for IP literals, else after the last ':'. */
  if (host.ptr[0] == '[') {
    const char *e = memchr(host.ptr, ']', host.len);
    if (e != NULL) n = (size_t)(e - host.ptr) + 1;
  } else {
    const char *c = memchr(host.ptr, ':', host.len);
    if (c != NULL) n = (size_t)(c - host.ptr);
    /* an absolute name's trailing dot: the same host */
    if (n > 1 && host.ptr[n - 1] == '.') n--;
  }
  for (i = 0; i < t->nhosts; i++) {
    hr_span_t a = {host.ptr, n};
    if (hr_span_eq_nocase(a, t->hosts[i].name)) return &t->hosts[i];
  }
  return &t->def;
}

static int redirect_status(int method_id) {
  return method_id == HR__M_GET || method_id == HR__M_HEAD ? 301 : 308;
}

/* Location = path + ("?" query); `path` may already be in buf at `at`.
 * Bytes from 0x80 (raw UTF-8 a client sent) are percent-encoded: a
 * Location is a URI reference, ASCII only (RFC 9110 §10.2.2). */
static int put_location(hr_match_t *out, char *buf, size_t buflen, size_t at,
                        size_t path_len, hr_span_t query) {
  static const char hex[] = "0123456789ABCDEF";
  size_t plain = path_len + (query.len || query.ptr ? 1 + query.len : 0), high = 0, i;
  size_t need;
  char *w, *r;
  for (i = 0; i < path_len; i++) high += (unsigned char)buf[at + i] >= 0x80;
  for (i = 0; i < query.len; i++) high += (unsigned char)query.ptr[i] >= 0x80;
  need = plain + 2 * high;
  if (at + need > buflen) return HR_ENOSPC;
  if (query.ptr != NULL) {
    buf[at + path_len] = '?';
    memmove(buf + at + path_len + 1, query.ptr, query.len);
  }
  /* Encode from the end, in place: the writer never passes the reader. */
  for (r = buf + at + plain, w = buf + at + need; high > 0 && r > buf + at;) {
    unsigned char c = (unsigned char)*--r;
    if (c >= 0x80) {
      *--w = hex[c & 15];
      *--w = hex[c >> 4];
      *--w = '%';
      high--;
    } else {
      *--w = (char)c;
    }
  }
  out->location.ptr = buf + at;
  out->location.len = need;
  return 0;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
#define HR__HAVE_SCAN_SSSE3 1
#endif

/* Flags from scan(). */
#define SCAN_PCT 1u     /* the path has a '%' */
#define SCAN_UNCLEAN 2u /* a '/' is followed by '/', '.' or '%' */
#define SCAN_BAD 4u     /* the path has a byte that is not a path character */

#if defined(__SSE2__)
/* Lanes of v that hr__is_path_byte() refuses: controls, space, DEL and
 * " # < > [ \ ] ^ ` { | } (bytes from 0x80, raw UTF-8, pass).  '?' is left
 * to the caller (it ends the path). */
static inline __m128i path_bad(__m128i v) {
  const __m128i space = _mm_set1_epi8(0x20);
  __m128i bad = _mm_cmpeq_epi8(_mm_max_epu8(v, space), space); /* v <= 0x20 */
  bad = _mm_or_si128(bad, _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x21)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8(0x24))));
  bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
  bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('>')));
  bad = _mm_or_si128(bad, _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x5a)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8(0x5f))));
  bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('`')));
  /* 0x7b..0x7f but '~' */
  bad = _mm_or_si128(bad, _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('~')),
                                           _mm_cmpgt_epi8(v, _mm_set1_epi8(0x7a))));
  return bad;
}
#endif

#if defined(__SSE2__)
/* Whether the 16 bytes from s may be loaded although fewer belong to the
 * target: they do not cross into the next page, so the load cannot fault
 * (the bytes past the end are masked off).  Not under AddressSanitizer,
 * which would rightly report the over-read. */
#if defined(__SANITIZE_ADDRESS__)
#define SCAN_OVERREAD_OK(s) 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SCAN_OVERREAD_OK(s) 0
#endif
#endif
#ifndef SCAN_OVERREAD_OK
#define SCAN_OVERREAD_OK(s) (((uintptr_t)(s) & 4095u) <= 4096u - 16u)
#endif

/* The last block of a scan: v holds target bytes s[base .. base + 16), of
 * which the lanes in `live` are still to do (lane lo is the first of them;
 * prev_slash: the byte before lane lo is a '/').  Returns the path length. */
static inline size_t scan_last(__m128i v, unsigned live, unsigned lo, int prev_slash,
                               size_t base, size_t n, unsigned f, unsigned *flags) {
  const __m128i sl = _mm_set1_epi8('/'), pc = _mm_set1_epi8('%'),
                dt = _mm_set1_epi8('.'), qm = _mm_set1_epi8('?');
  unsigned ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl)) & live;
  unsigned mp = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, pc)) & live;
  unsigned md = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dt)) & live;
  unsigned mq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, qm)) & live;
  unsigned mb = (unsigned)_mm_movemask_epi8(path_bad(v));
  unsigned follow;
  if (mq) live &= (1u << __builtin_ctz(mq)) - 1;
  ms &= live;
  mp &= live;
  md &= live;
  follow = ms | mp | md;
  if (mp) f |= SCAN_PCT;
  if (mb & live) f |= SCAN_BAD;
  if ((ms & (follow >> 1)) || (prev_slash && ((follow >> lo) & 1))) f |= SCAN_UNCLEAN;
  *flags = f;
  return mq ? base + (size_t)__builtin_ctz(mq) : n;
}
#endif

/* One pass over an origin-form target: returns the length of the path (up
 * to '?') and sets *flags. */
static inline size_t scan(const char *s, size_t n, unsigned *flags) {
  size_t i = 0;
  unsigned f = 0;
  int prev_slash = 0;
#if defined(__SSE2__)
  if (n < 16) {
    /* A short target in one load when that cannot fault; else bytewise (a
     * padded copy would stall on store forwarding). */
    if (!SCAN_OVERREAD_OK(s)) goto scalar;
    return scan_last(_mm_loadu_si128((const __m128i *)(const void *)s),
                     (1u << n) - 1, 0, 0, 0, n, 0, flags);
  }
  const __m128i sl = _mm_set1_epi8('/'), pc = _mm_set1_epi8('%'),
                dt = _mm_set1_epi8('.'), qm = _mm_set1_epi8('?');
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    unsigned ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl));
    unsigned mp = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, pc));
    unsigned md = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dt));
    unsigned mq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, qm));
    unsigned mb = (unsigned)_mm_movemask_epi8(path_bad(v));
    unsigned keep = 0xFFFFu, follow;
    if (mq) keep = (1u << __builtin_ctz(mq)) - 1;
    ms &= keep;
    mp &= keep;
    md &= keep;
    follow = (ms | mp | md) & keep;
    if (mp) f |= SCAN_PCT;
    if (mb & keep) f |= SCAN_BAD;
    if ((ms & (follow >> 1)) || (prev_slash && (follow & 1))) f |= SCAN_UNCLEAN;
    if (mq) {
      *flags = f;
      return i + (size_t)__builtin_ctz(mq);
    }
    prev_slash = (ms >> 15) & 1;
  }
  if (i < n) {
    /* The tail: the last 16 bytes (n >= 16 here), overlapping what is
     * done. */
    unsigned lo = (unsigned)(i - (n - 16));
    return scan_last(_mm_loadu_si128((const __m128i *)(const void *)(s + n - 16)),
                     0xFFFFu & ~((1u << lo) - 1), lo, prev_slash, n - 16, n, f, flags);
  }
  *flags = f;
  return n;
scalar:
#endif
  for (; i < n; i++) {
    char c = s[i];
    if (c == '?') break;
    if (!hr__is_path_byte((unsigned char)c)) f |= SCAN_BAD;
    if (prev_slash && (c == '/' || c == '.' || c == '%')) f |= SCAN_UNCLEAN;
    if (c == '%') f |= SCAN_PCT;
    prev_slash = c == '/';
  }
  *flags = f;
  return i;
}

#if defined(HR__HAVE_SCAN_SSSE3)
#include <tmmintrin.h>

/* Whether this CPU has SSSE3 (every x86-64 since 2006 does; the baseline
 * the library is built for does not promise it).  Set once when the
 * library is loaded, before any thread can read it. */
static int scan_ssse3_ok;

__attribute__((constructor)) static void scan_detect(void) {
  __builtin_cpu_init();
  scan_ssse3_ok = __builtin_cpu_supports("ssse3") != 0;
}

/*
 * The common case of scan() in fewer instructions: a path of pchars and
 * slashes only.  Each byte is classified with two 16-entry lookups (low
 * and high nibble, PSHUFB) whose AND is non-zero exactly for the bytes
 * scan() looks at twice: '%', '.', '?' and the bytes path_bad() refuses.
 * Rows of the high nibble, one bit each: 0-1 all; 2 {0,2,3,5,E} (space " #
 * % .); 3 {C,E,F} (< > ?); 5 {B,C,D,E} ([ \ ] ^); 6 {0} (`); 7 {B,C,D,F}
 * ({ | } DEL); from 8 nothing (UTF-8 passes).  A path without such a byte
 * is unclean only through "//".  Anything else goes to scan().
 */
/* scan() out of line: scan_ssse3's way out, kept out of it so that it
 * stays a small leaf function. */
__attribute__((noinline)) static size_t scan_any(const char *s, size_t n, unsigned *flags) {
  return scan(s, n, flags);
}

__attribute__((target("ssse3"), noinline)) static size_t scan_ssse3(const char *s, size_t n,
                                                                     unsigned *flags) {
  const __m128i lo_lut = _mm_setr_epi8(19, 1, 3, 3, 1, 3, 1, 1, 1, 1, 1, 41, 45, 41, 15, 37);
  const __m128i hi_lut = _mm_setr_epi8(1, 1, 2, 4, 0, 8, 16, 32, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128i nib = _mm_set1_epi8(0x0f), sl = _mm_set1_epi8('/');
  unsigned unclean = 0, prev_slash = 0;
  size_t i = 0;
  for (;;) {
    __m128i v, c;
    unsigned live, special, ms;
    size_t base;
    if (n - i >= 16) {
      base = i;
      live = 0xFFFFu;
    } else if (i == n) {
      break;
    } else if (n >= 16) {
      base = n - 16; /* the last 16 bytes, overlapping what is done */
      live = 0xFFFFu & ~((1u << (i - base)) - 1);
    } else if (SCAN_OVERREAD_OK(s)) {
      base = 0;
      live = (1u << n) - 1;
    } else {
      return scan_any(s, n, flags);
    }
    v = _mm_loadu_si128((const __m128i *)(const void *)(s + base));
    c = _mm_and_si128(_mm_shuffle_epi8(lo_lut, _mm_and_si128(v, nib)),
                      _mm_shuffle_epi8(hi_lut, _mm_and_si128(_mm_srli_epi16(v, 4), nib)));
    special = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, _mm_setzero_si128())) & live;
    if (special) return scan_any(s, n, flags);
    ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sl));
    /* "//": a slash whose byte before is one, within the live lanes (the
     * lanes before them are bytes of the path too, or prev_slash). */
    unclean |= ((ms << 1) | (base == i ? prev_slash : 0)) & ms & live;
    prev_slash = (ms >> 15) & 1;
    i = base + 16 > n ? n : base + 16;
  }
  *flags = unclean ? SCAN_UNCLEAN : 0;
  return n;
}
#endif

/* Whether a decoded parameter value holds a ".." segment ("..", "../x",
 * "x/..", "x/../y"): one that %2F escapes hid from remove_dot_segments.
 * Such a value would climb out of a directory a handler joins it to. */
static int has_dot_dot_segment(const char *p, size_t n) {
  size_t i = 0;
  while (i <= n) {
    const char *sl = memchr(p + i, '/', n - i);
    size_t e = sl ? (size_t)(sl - p) : n;
    if (e - i == 2 && p[i] == '.' && p[i + 1] == '.') return 1;
    i = e + 1;
  }
  return 0;
}

/* Whether a query holds only bytes a request target may (RFC 9112 §3.2):
 * no controls, space or DEL, no '#' (a fragment is not sent).  Characters
 * outside the URI grammar such as '{' and '|' are let through, as the
 * server does, and so are bytes from 0x80 (raw UTF-8, as in the path). */
static int query_ok(hr_span_t q) {
  size_t i;
  for (i = 0; i < q.len; i++) {
    unsigned char c = (unsigned char)q.ptr[i];
    if (c <= 0x20 || c == 0x7f || c == '#') return 0;
  }
  return 1;
}

/* Whether some route of the table (any host) registers `method`, or it is
 * GET, HEAD or OPTIONS: otherwise 501 (RFC 9110 §9.1, §15.6.2), whatever
 * the path.  Methods are case-sensitive: "get" is an
 * extension method. */
static int method_known_slow(const hr__table_t *t, hr_span_t method, int mid) {
  size_t lo, hi;
  if (t->any_method) return 1;
  /* GET and HEAD are never "not implemented" (RFC 9110 §9.1: every
   * general-purpose server supports them): without a route, 404 or 405. */
  if (mid >= 0)
    return mid <= HR__M_HEAD || mid == HR__M_OPTIONS || ((t->std_methods >> mid) & 1);
  lo = 0;
  hi = t->n_ext_methods;
  while (lo < hi) { /* the list is sorted by bytes, then length */
    size_t mid2 = (lo + hi) / 2, n;
    hr_span_t e = t->ext_methods[mid2];
    int c;
    n = e.len < method.len ? e.len : method.len;
    c = memcmp(e.ptr, method.ptr, n);
    if (c == 0) c = (e.len > method.len) - (e.len < method.len);
    if (c == 0) return 1;
    if (c < 0)
      lo = mid2 + 1;
    else
      hi = mid2;
  }
  return 0;
}

static inline int method_known(const hr__table_t *t, hr_span_t method, int mid) {
  return mid == HR__M_GET || method_known_slow(t, method, mid);
}

/* The path matched, but no route of any specificity answers the method:
 * 405 with Allow listing the methods of every route whose path matches,
 * or for OPTIONS the router's 200 with that Allow (RFC 9110 §9.3.7). */
static int no_method(const hr__table_t *t, const hr__host_t *h, hr__walk_t *w, int ci,
                     char *buf, size_t buflen, size_t used, hr_match_t *out) {
  out->status = w->method_id == HR__M_OPTIONS ? 200 : 405;
  if (w->misses == 1) {
    out->allow = w->first_miss->allow;
    return 0;
  }
  if (buflen - used < t->allow_max) return HR_ENOSPC;
  out->allow.ptr = buf + used;
  out->allow.len = hr__tree_allow(t, h->root, w, ci, buf + used);
  return 0;
}

/* No path matched: with HR_SLASH_REDIRECT, a redirect when the path with
 * its trailing slash added or removed has a route. */
static int slash_redirect(const hr__host_t *h, const hr__walk_t *w0, int ci,
                          hr_span_t path, hr_span_t mpath, hr_span_t query, char *buf,
                          size_t buflen, size_t used, hr_match_t *out) {
  /* Is the other variant routed?  Built after the decoded path. */
  int has_slash = mpath.ptr[mpath.len - 1] == '/';
  size_t alen = has_slash ? mpath.len - 1 : mpath.len + 1, np;
  hr_param_t scratch[HR_MAX_PARAMS];
  hr__walk_t w = *w0;
  if (has_slash && mpath.len == 1) return 0; /* "/" has no other variant */
  if (used + alen > buflen) return HR_ENOSPC;
  memcpy(buf + used, mpath.ptr, has_slash ? alen : mpath.len);
  if (!has_slash) buf[used + mpath.len] = '/';
  w.path = buf + used;
  w.len = alen;
  w.params = scratch;
  w.misses = 0;
  /* A route of any method there: the redirect is for the path. */
  if (hr__tree_find(h->root, &w, ci, &np) != NULL || w.misses > 0) {
    if (hr__path_hides_dot_dot(path)) { /* the redirect would lead to a 400 */
      out->status = 400;
      return 0;
    }
    /* Location from the path as sent (still encoded). */
    size_t plen = has_slash ? path.len - 1 : path.len + 1;
    if (used + plen > buflen) return HR_ENOSPC;
    memmove(buf + used, path.ptr, has_slash ? plen : path.len);
    if (!has_slash) buf[used + path.len] = '/';
    if (put_location(out, buf, buflen, used, plen, query) != 0) return HR_ENOSPC;
    out->status = redirect_status(w.method_id);
  }
  return 0;
}

/* Parameter values still hold the opaque escapes: decoded now, into buf
 * after `used`.  A decoded value with a ".." segment is a 400. */
static int decode_params(hr_match_t *out, char *buf, size_t buflen, size_t used) {
  size_t i;
  for (i = 0; i < out->nparams; i++) {
    hr_span_t v = out->params[i].value;
    size_t n;
    if (memchr(v.ptr, '%', v.len) == NULL) continue;
    if (used + v.len > buflen) return HR_ENOSPC;
    if (hr__param_decode(v, buf + used, &n) != 0 || has_dot_dot_segment(buf + used, n)) {
      out->status = 400;
      out->route = NULL;
      out->nparams = 0;
      return 0;
    }
    out->params[i].value.ptr = buf + used;
    out->params[i].value.len = n;
    used += n;
  }
  return 0;
}

static int match_impl(hr_router_t *r, hr_span_t method, hr_span_t host,
                      hr_span_t target, char *buf, size_t buflen,
                      hr_match_t *out) {
  const hr__table_t *t;
  const hr__host_t *h;
  const hr__leaf_t *leaf;
  hr__walk_t w;
  const hr_span_t *names;
  hr_span_t path, query, mpath, authority;
  size_t used = 0, i, nparams = 0;
  int mid, has_pct, ci, maybe_unclean;
  if (r == NULL || out == NULL || (buf == NULL && buflen != 0)) return HR_EINVAL;
  /* *out is filled after the target is read: stores before the scan (an
   * out-of-line call) would delay the start of the lookup's critical path,
   * measurably.  The early 400s fill it at bad_target. */
  if (target.len > 0 && target.ptr[0] == '/') {
    /* origin-form, the common case: one pass finds the end of the path and
     * whether it needs decoding or may need cleaning. */
    unsigned flags;
    size_t plen;
#if defined(HR__HAVE_SCAN_SSSE3)
    plen = scan_ssse3_ok ? scan_ssse3(target.ptr, target.len, &flags)
                         : scan(target.ptr, target.len, &flags);
#else
    plen = scan(target.ptr, target.len, &flags);
#endif
    path.ptr = target.ptr;
    path.len = plen;
    query.ptr = NULL;
    query.len = 0;
    if (plen < target.len) { /* target.ptr[plen] == '?' */
      query.ptr = target.ptr + plen + 1;
      query.len = target.len - plen - 1;
    }
    /* Bytes a path cannot hold (RFC 3986 §3.3; a '\\' would turn into '/'
     * in browsers), or a fragment: 400, as from the server. */
    if ((flags & SCAN_BAD) || !query_ok(query)) goto bad_target;
    has_pct = (flags & SCAN_PCT) != 0;
    maybe_unclean = (flags & SCAN_UNCLEAN) != 0;
  } else {
    hr_span_t p2, q2, a2;
    size_t n;
    if (hr__target_split(target, &p2, &q2, &a2) != 0) goto bad_target;
    path = p2;
    query = q2;
    authority = a2;
    for (n = 0; n < path.len; n++)
      if (!hr__is_path_byte((unsigned char)path.ptr[n])) goto bad_target;
    if (!query_ok(query) || memchr(target.ptr, '#', target.len) != NULL) goto bad_target;
    /* RFC 9112 §3.2.2: an absolute-form target's authority wins over Host. */
    if (authority.len) host = authority;
    has_pct = memchr(path.ptr, '%', path.len) != NULL;
    maybe_unclean = 1;
  }
  out->status = 400;
  out->route = NULL;
  out->nparams = 0;
  /* allow and location are adjacent (router.h): two vector stores. */
  memset(&out->allow, 0, offsetof(hr_match_t, path) - offsetof(hr_match_t, allow));
  out->path.ptr = path.ptr;
  out->path.len = path.len;
  out->query.ptr = query.ptr;
  out->query.len = query.len;
  /* GET first, without the call: it is most requests. */
  mid = method.len == 3 && method.ptr[0] == 'G' && method.ptr[1] == 'E' &&
                method.ptr[2] == 'T'
            ? HR__M_GET
            : hr__method_id(method);
  ci = r->opts.case_insensitive;
  /* Pairs with the release store in publish(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  /* Decoded path, then a redirect's Location with every byte from 0x80
   * encoded (three bytes each) after it, or an Allow of several routes. */
  out->need = 4 * target.len + 16 + t->allow_max;
  h = pick_host(t, host);
  if (path.len == 1 && path.ptr[0] == '*') {
    /* asterisk-form is for OPTIONS only (RFC 9112 §3.2.4): the whole host. */
    if (mid == HR__M_OPTIONS) {
      out->status = 200;
      out->allow = h->allow_all;
    }
    return 0;
  }
  /* Malformed escapes are refused before anything else, redirects included
   * (a redirect would only carry them to the clean path). */
  if (has_pct && !hr__path_escapes_ok(path)) return 0;
  if (maybe_unclean && !hr__path_is_clean(path)) {
    size_t n;
    if (r->opts.unclean_path == HR_CLEAN_REJECT) return 0;
    /* The path holds path characters only (checked above), so a Location
     * cannot turn into "//\\evil.example", a redirect off the site. */
    if (buflen < path.len + 1) return HR_ENOSPC;
    if (hr__path_clean(path, buf, &n) != 0) return 0; /* above the root */
    if (hr__path_hides_dot_dot((hr_span_t){buf, n})) return 0; /* it would lead to a 400 */
    if (!method_known(t, method, mid)) { /* no use redirecting it */
      out->status = 501;
      return 0;
    }
    if (put_location(out, buf, buflen, 0, n, query) != 0) return HR_ENOSPC;
    out->status = redirect_status(mid);
    return 0;
  }
  mpath = path;
  if (has_pct) {
    size_t n;
    if (buflen < path.len) return HR_ENOSPC;
    if (hr__path_decode(path, buf, &n) != 0) return 0;
    mpath.ptr = buf;
    mpath.len = n;
    used = n;
    out->path = mpath;
  }
  if (!method_known(t, method, mid)) {
    out->status = 501;
    return 0;
  }
  w.path = mpath.ptr;
  w.len = mpath.len;
  w.method_id = mid;
  w.method = method;
  w.params = out->params;
  w.first_miss = NULL;
  w.misses = 0;
  w.on_miss = NULL;
  leaf = hr__tree_find(h->root, &w, ci, &nparams);
  if (leaf == NULL) {
    if (w.misses > 0) return no_method(t, h, &w, ci, buf, buflen, used, out);
    out->status = 404;
    if (r->opts.trailing_slash == HR_SLASH_REDIRECT)
      return slash_redirect(h, &w, ci, path, mpath, query, buf, buflen, used, out);
    return 0;
  }
  /* The usual case inline: a standard method with its own route.  The
   * values are the walk's; the names are the route's own. */
  if (mid >= 0 && leaf->std[mid].route != NULL) {
    out->route = leaf->std[mid].route;
    names = leaf->std[mid].names;
  } else {
    out->route = hr__leaf_route(leaf, method, mid);
    names = hr__leaf_names(leaf, out->route);
  }
  out->status = 200;
  out->nparams = nparams;
  for (i = 0; i < nparams; i++) out->params[i].name = names[i];
  if (has_pct) return decode_params(out, buf, buflen, used);
  return 0;
bad_target: /* 400 before the path was known */
  out->status = 400;
  out->route = NULL;
  out->nparams = 0;
  out->allow.ptr = out->location.ptr = out->path.ptr = out->query.ptr = NULL;
  out->allow.len = out->location.len = out->path.len = out->query.len = 0;
  out->need = 0;
  return 0;
}

int hr_router_match(hr_router_t *r, hr_span_t method, hr_span_t host,
                    hr_span_t target, char *buf, size_t buflen,
                    hr_match_t *out) {
  /* The caller's read-side section, if routes may change meanwhile (see
   * router.h): taking one per lookup would cost more than the lookup. */
  return match_impl(r, method, host, target, buf, buflen, out);
}

/* ---- the router's own answers ------------------------------------------------ */

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

int hr_router_route_stats(hr_router_t *r, const char *host, const char *methods,
                          const char *pattern, hr_route_stats_t *out) {
  hr__core_t *probe;
  hr_route_options_t o;
  const hr__table_t *t;
  size_t i;
  int rc;
  if (r == NULL || methods == NULL || pattern == NULL || out == NULL)
    return HR_EINVAL;
  hr_route_options_init(&o);
  rc = hr__core_compile(&r->mem, r->opts.case_insensitive, NULL, host, NULL,
                        methods, pattern, h_none, NULL, &o, &probe, NULL);
  if (rc != 0) return rc;
  rc = HR_ENOTFOUND;
  hr__rcu_read_lock();
  /* Pairs with the release store in publish(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  for (i = 0; i < t->ninvokers; i++) {
    const hr__core_t *c = t->invokers[i]->core;
    if (hr_span_eq(c->host, probe->host) && hr__patterns_equiv(c, probe) &&
        hr__methods_equal(c, probe)) {
      hr__core_stats(c, out);
      rc = 0;
      break;
    }
  }
  hr__rcu_read_unlock();
  hr__core_unref(&r->mem, probe);
  return rc;
}

void hr_router_stats(hr_router_t *r, hr_router_stats_t *out) {
  const hr__table_t *t;
  memset(out, 0, sizeof(*out));
  if (r == NULL) return;
  hr__rcu_read_lock();
  /* Pairs with the release store in publish(). */
  t = atomic_load_explicit(&r->table, memory_order_acquire);
  out->routes = t->ninvokers;
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
  /* Pairs with the release store in publish(). */
  rc = hr__tree_dump(atomic_load_explicit(&r->table, memory_order_acquire),
                     write, ctx);
  hr__rcu_read_unlock();
  return rc;
}
