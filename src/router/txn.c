/* SPDX-License-Identifier: MIT */
/*
 * Transactions (router.h hr_router_begin): route changes recorded without
 * the router's lock and published with one table build.
 *
 * A transaction starts from a snapshot of the router's routes -- their
 * cores, each with a reference, in the order of the router's route array,
 * and a routes-by-place index over them (place.c) -- and records each
 * change in a log after checking it against that index, which it updates
 * as the change would: a new route is indexed under its log position
 * (numbers from `nbase` on), a removed or replaced one is dropped and
 * marked gone (a base route in `gone`, a recorded one by clearing its
 * `live`).  So the index always holds the routes the transaction would
 * leave, and every check costs constant time.
 *
 * The commit takes the writer lock.  If no table was published since the
 * snapshot (the router's `mark` is unchanged), the router's route array is
 * still the snapshot's, position for position, and the result is read off
 * the index: the base routes not gone, in order, then a new invoker for
 * each live recorded route.  Otherwise the snapshot is taken again from
 * the routes as they are and the log replayed on it, each change checked
 * again.  Then one hr__router_publish, the same build and release store as
 * any single change.
 */
#include <stdio.h>
#include <string.h>

#include "router/place.h"
#include "router/route.h"

typedef struct {
  hr__core_t *core; /* the route to add, or the probe naming one to remove */
  int remove;
  int replace;
  int live; /* an addition still in effect */
} op_t;

struct hr_txn_s {
  hr_router_t *r;
  size_t mark; /* r->mark when the snapshot was taken */
  hr__places_t places;
  hr__core_t **base; /* the snapshot: cores of r->routes, referenced */
  size_t nbase;
  unsigned char *gone; /* per base route: removed or replaced */
  op_t *ops;
  size_t nops, cap;
};

static void snapshot_free(hr_txn_t *t) {
  size_t i;
  for (i = 0; i < t->nbase; i++)
    if (t->base[i] != NULL) hr__core_unref(&t->r->mem, t->base[i]);
  hr__mem_free(&t->r->mem, t->base);
  hr__mem_free(&t->r->mem, t->gone);
  hr__places_free(&t->places);
  t->base = NULL;
  t->gone = NULL;
  t->nbase = 0;
}

/* Takes the snapshot of r's routes (lock held). */
static int snapshot(hr_txn_t *t) {
  hr_router_t *r = t->r;
  size_t n = r->nroutes, i;
  hr__places_init(&t->places, &r->mem);
  t->base = hr__mem_alloc(&r->mem, (n ? n : 1) * sizeof(*t->base));
  t->gone = hr__mem_alloc(&r->mem, n ? n : 1);
  if (t->base == NULL || t->gone == NULL) {
    hr__mem_free(&r->mem, t->base);
    hr__mem_free(&r->mem, t->gone);
    t->base = NULL;
    t->gone = NULL;
    return HR_ENOMEM;
  }
  memset(t->gone, 0, n ? n : 1);
  for (i = 0; i < n; i++) {
    hr__core_t *c;
    if (r->routes[i] == NULL) { /* a removed route's hole */
      t->base[t->nbase++] = NULL;
      t->gone[i] = 1;
      continue;
    }
    c = (hr__core_t *)r->routes[i]->core;
    hr__core_ref(c);
    t->base[t->nbase++] = c;
    if (hr__places_put(&t->places, c, i) != 0) return HR_ENOMEM;
  }
  t->mark = r->mark;
  return 0;
}

static void conflict(hr_route_error_t *err, int code, const char *reason,
                     const hr__core_t *with) {
  if (err == NULL) return;
  memset(err, 0, sizeof(*err));
  err->code = code;
  err->reason = reason;
  if (with == NULL) return;
  err->conflict_len = with->methods_text.len + 1 + with->pattern.len;
  snprintf(err->conflict, sizeof(err->conflict), "%.*s %.*s", (int)with->methods_text.len,
           with->methods_text.ptr, (int)with->pattern.len, with->pattern.ptr);
}

/* The route behind an index entry leaves. */
static void leave(hr_txn_t *t, hr__place_t *e) {
  if (e->pos < t->nbase)
    t->gone[e->pos] = 1;
  else
    t->ops[e->pos - t->nbase].live = 0;
  hr__places_drop(e);
}

/* Applies log entry `i` to the index.  Returns 0 or an error (err filled),
 * with the index unchanged. */
static int apply(hr_txn_t *t, size_t i, hr_route_error_t *err) {
  op_t *op = &t->ops[i];
  hr__place_t *same = hr__places_find(&t->places, op->core, 1), *clash;
  size_t clash_at;
  if (op->remove) {
    if (same == NULL) {
      conflict(err, HR_ENOTFOUND, "no route with these methods and pattern", op->core);
      return HR_ENOTFOUND;
    }
    leave(t, same);
    return 0;
  }
  clash = op->replace && same != NULL ? same : hr__places_find(&t->places, op->core, 0);
  if (clash != NULL && !(op->replace && clash == same)) {
    conflict(err, HR_EEXIST, "a route with this method and pattern exists", clash->core);
    return HR_EEXIST;
  }
  /* The put may move the entries (a realloc): keep the clash by index. */
  clash_at = clash != NULL ? (size_t)(clash - t->places.ents) : 0;
  if (hr__places_put(&t->places, op->core, t->nbase + i) != 0) {
    conflict(err, HR_ENOMEM, "out of memory", NULL);
    return HR_ENOMEM;
  }
  if (clash != NULL) leave(t, &t->places.ents[clash_at]);
  op->live = 1;
  return 0;
}

int hr_router_begin(hr_router_t *r, hr_txn_t **out) {
  hr_txn_t *t;
  int rc;
  if (r == NULL || out == NULL) return HR_EINVAL;
  *out = NULL;
  if ((t = hr__mem_alloc(&r->mem, sizeof(*t))) == NULL) return HR_ENOMEM;
  memset(t, 0, sizeof(*t));
  t->r = r;
  pthread_mutex_lock(&r->lock);
  rc = snapshot(t);
  pthread_mutex_unlock(&r->lock);
  if (rc != 0) {
    hr_txn_abort(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* Appends a change to the log and applies it; a rejected one is taken
 * back.  Takes over the core's reference either way. */
static int record(hr_txn_t *t, hr__core_t *core, int remove, int replace,
                  hr_route_error_t *err) {
  int rc;
  if (t->nops == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    op_t *ops = hr__mem_realloc(&t->r->mem, t->ops, cap * sizeof(*ops));
    if (ops == NULL) {
      hr__core_unref(&t->r->mem, core);
      conflict(err, HR_ENOMEM, "out of memory", NULL);
      return HR_ENOMEM;
    }
    t->ops = ops;
    t->cap = cap;
  }
  t->ops[t->nops] = (op_t){core, remove, replace, 0};
  if ((rc = apply(t, t->nops, err)) != 0) {
    hr__core_unref(&t->r->mem, core);
    return rc;
  }
  t->nops++;
  return 0;
}

int hr_txn_add(hr_txn_t *t, hr_group_t *g, const char *methods, const char *pattern,
               hr_handler_cb handler, void *udata, const hr_route_options_t *opts) {
  hr__core_t *core;
  int rc;
  if (t == NULL || methods == NULL || pattern == NULL || handler == NULL) return HR_EINVAL;
  if (g == NULL) g = &t->r->root;
  if (g->router != t->r) return HR_EINVAL;
  if ((rc = hr__route_compile(g, methods, pattern, handler, udata, opts, &core)) != 0) return rc;
  return record(t, core, 0, opts != NULL && opts->replace, opts != NULL ? opts->error : NULL);
}

static void h_none(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

int hr_txn_remove(hr_txn_t *t, hr_group_t *g, const char *methods, const char *pattern) {
  hr_route_options_t o;
  hr__core_t *probe;
  int rc;
  if (t == NULL || methods == NULL || pattern == NULL) return HR_EINVAL;
  if (g == NULL) g = &t->r->root;
  if (g->router != t->r) return HR_EINVAL;
  hr_route_options_init(&o);
  /* Compiled only to normalise the methods and the full pattern. */
  if ((rc = hr__route_compile(g, methods, pattern, h_none, NULL, &o, &probe)) != 0) return rc;
  return record(t, probe, 1, 0, NULL);
}

/* Another writer published since the snapshot: take it again from the
 * routes as they are and replay the log (lock held). */
static int replay(hr_txn_t *t, hr_route_error_t *err) {
  size_t i;
  int rc;
  snapshot_free(t);
  if ((rc = snapshot(t)) != 0) {
    conflict(err, rc, "out of memory", NULL);
    return rc;
  }
  for (i = 0; i < t->nops; i++) t->ops[i].live = 0;
  for (i = 0; i < t->nops; i++)
    if ((rc = apply(t, i, err)) != 0) return rc;
  return 0;
}

/* The route array the transaction leaves: base routes not gone, then new
 * invokers for the live additions (lock held).  Returns 0 or HR_ENOMEM. */
static int result(hr_txn_t *t, hr_route_t ***out, size_t *nout, size_t *first_new) {
  hr_router_t *r = t->r;
  hr__mwlist_t mws;
  size_t n = 0, i, k = 0;
  hr_route_t **routes;
  mws.head = r->mws;
  for (i = 0; i < t->nbase; i++) n += !t->gone[i];
  for (i = 0; i < t->nops; i++) n += t->ops[i].live;
  if ((routes = hr__mem_alloc(&r->mem, (n ? n : 1) * sizeof(*routes))) == NULL) return HR_ENOMEM;
  for (i = 0; i < t->nbase; i++)
    if (!t->gone[i]) routes[k++] = r->routes[i];
  *first_new = k;
  for (i = 0; i < t->nops; i++) {
    if (!t->ops[i].live) continue;
    if (hr__invoker_new(&r->mem, t->ops[i].core, &mws, &routes[k]) != 0) {
      while (k > *first_new) hr__invoker_drop_new(routes[--k]);
      hr__mem_free(&r->mem, routes);
      return HR_ENOMEM;
    }
    k++;
  }
  *out = routes;
  *nout = n;
  return 0;
}

int hr_txn_commit(hr_txn_t *t, hr_route_error_t *err) {
  hr_router_t *r;
  hr_route_t **routes = NULL;
  size_t n = 0, first_new = 0;
  int rc = 0;
  if (t == NULL) return HR_EINVAL;
  r = t->r;
  pthread_mutex_lock(&r->lock);
  if (t->mark != r->mark) rc = replay(t, err);
  if (rc == 0 && (rc = result(t, &routes, &n, &first_new)) != 0)
    conflict(err, rc, "out of memory", NULL);
  if (rc == 0 && (rc = hr__router_publish(r, routes, n, err)) != 0) {
    while (n > first_new) hr__invoker_drop_new(routes[--n]);
    hr__mem_free(&r->mem, routes);
  }
  hr__router_unlock(r);
  hr_txn_abort(t);
  return rc;
}

void hr_txn_abort(hr_txn_t *t) {
  size_t i;
  if (t == NULL) return;
  snapshot_free(t);
  for (i = 0; i < t->nops; i++) hr__core_unref(&t->r->mem, t->ops[i].core);
  hr__mem_free(&t->r->mem, t->ops);
  hr__mem_free(&t->r->mem, t);
}
