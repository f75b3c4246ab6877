/* SPDX-License-Identifier: MIT */
/*
 * The router's public face: creation, groups and hosts, registration and
 * publication of route table snapshots, the router's own answers and the
 * request-local keys.  Matching is match.c.
 *
 * Publication (publish.c): writers hold `lock`, build a complete new hr__table_t that
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

#include "codec/zconf.h"
#include "router/publish.h"
#include "router/route.h"
#include "router/wtree.h"
#include "util/detail.h"
#include "util/rcu.h"
#include "util/testpoint.h"
#include "util/text.h"

/* Drops a hold on the router struct (see `holds` in route.h); the last
 * frees it.  acq_rel: every holder's use of the struct (a callback's
 * frees through r->mem, the owner's teardown) happens before the free. */
void hr__router_drop(hr_router_t *r) {
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
    cur->retired_next = hr__router_take_batch(r, 1);
    hr__router_reclaim(r, cur, 1);
  } else {
    hr__router_reclaim(r, hr__router_take_batch(r, 1), 1);
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
  while (r->zregs != NULL) {
    struct hr__zreg_s *z = r->zregs;
    r->zregs = z->next;
    hr__zconf_drop(z->zconf); /* tables still waiting hold their own */
    hr__mem_free(&r->mem, z);
  }
  hr__registry_free(&r->registry);
  pthread_mutex_destroy(&r->lock);
  hr__router_drop(r); /* the owner's hold */
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
  if ((rc = hr__router_change(r, same, inv, err)) != 0) goto fail;
  hr__router_unlock(r);
  return 0;
fail:
  pthread_mutex_unlock(&r->lock);
  if (inv != NULL) hr__invoker_drop_new(inv);
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
  rc = same != NULL ? hr__router_change(r, same, NULL, NULL) : HR_ENOTFOUND;
  hr__router_unlock(r);
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
  hr__router_compact(r);
  *r->mws_tail = reg;
  mws.head = r->mws;
  routes = hr__mem_alloc(&r->mem, (r->nroutes ? r->nroutes : 1) * sizeof(*routes));
  if (routes == NULL) rc = HR_ENOMEM;
  for (i = 0; rc == 0 && i < r->nroutes; i++) {
    rc = hr__invoker_new(&r->mem, (hr__core_t *)r->routes[i]->core, &mws, &routes[i]);
    if (rc != 0) {
      while (i > 0) hr__invoker_drop_new(routes[--i]);
    }
  }
  if (rc == 0) {
    rc = hr__router_publish(r, routes, r->nroutes, NULL);
    if (rc != 0)
      for (i = 0; i < r->nroutes; i++) hr__invoker_drop_new(routes[i]);
  }
  if (rc == 0) {
    r->mws_tail = &reg->next;
  } else {
    *r->mws_tail = NULL;
    hr__mem_free(&r->mem, routes);
    hr__mem_free(&r->mem, reg);
  }
  hr__router_unlock(r);
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

/* Whether a registration for `reg` (NULL: the default table) is the one
 * for `host`. */
static int same_host(const char *reg, const char *host) {
  if (reg == NULL || host == NULL) return reg == host;
  return hr_span_eq_nocase(hr_span_cstr(reg), hr_span_cstr(host));
}

/* Publishes the same routes again, for settings copied into every table
 * (answers, compression).  Lock held; released here. */
static int republish(hr_router_t *r) {
  hr_route_t **routes;
  int rc;
  hr__router_compact(r);
  routes = hr__mem_alloc(&r->mem, (r->nroutes ? r->nroutes : 1) * sizeof(*routes));
  if (routes == NULL) {
    pthread_mutex_unlock(&r->lock);
    return HR_ENOMEM;
  }
  if (r->nroutes) memcpy(routes, r->routes, r->nroutes * sizeof(*routes));
  rc = hr__router_publish(r, routes, r->nroutes, NULL);
  if (rc != 0) hr__mem_free(&r->mem, routes);
  hr__router_unlock(r);
  return rc;
}

int hr_router_set_answers(hr_router_t *r, const char *host, const hr_answers_t *answers) {
  struct hr__answers_reg_s **pp, *a;
  size_t hl;
  if (r == NULL || (host != NULL && !valid_host_name(host))) return HR_EINVAL;
  hl = host != NULL ? host_len(host) : 0;
  pthread_mutex_lock(&r->lock);
  for (pp = &r->answers; *pp != NULL && !same_host((*pp)->host, host); pp = &(*pp)->next)
    ;
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
  return republish(r);
}

int hr_router_set_compress(hr_router_t *r, const char *host, const hr_compress_options_t *o) {
  struct hr__zreg_s **pp, *z;
  hr__zconf_t *conf = NULL;
  const char *why;
  size_t hl;
  int rc;
  hr__detail_clear();
  if (r == NULL) return HR_EINVAL;
  if (host != NULL && !valid_host_name(host))
    return hr__detail_set(HR_EINVAL, "host is not a host name (letters, digits, '-', '.' "
                                     "and '_', or an IP literal in brackets)");
  hl = host != NULL ? host_len(host) : 0;
  if (o != NULL && (rc = hr__zconf_new(&r->mem, o, &conf, &why)) != 0)
    return rc == HR_EINVAL ? hr__detail_set(rc, "compression settings: %s", why) : rc;
  pthread_mutex_lock(&r->lock);
  for (pp = &r->zregs; *pp != NULL && !same_host((*pp)->host, host); pp = &(*pp)->next)
    ;
  if (conf != NULL && *pp == NULL) {
    z = hr__mem_alloc(&r->mem, sizeof(*z) + hl + 1);
    if (z == NULL) {
      pthread_mutex_unlock(&r->lock);
      hr__zconf_drop(conf);
      return HR_ENOMEM;
    }
    memset(z, 0, sizeof(*z));
    if (host != NULL) z->host = host_copy((char *)(z + 1), host);
    *pp = z;
  }
  if (conf != NULL) {
    /* The tables published with the old settings hold references of
     * their own: requests matched in them keep those. */
    hr__zconf_drop((*pp)->zconf);
    (*pp)->zconf = conf;
  } else if (*pp != NULL) {
    z = *pp;
    *pp = z->next;
    hr__zconf_drop(z->zconf);
    hr__mem_free(&r->mem, z);
  }
  return republish(r);
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
