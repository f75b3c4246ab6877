/* SPDX-License-Identifier: MIT */
/*
 * Running a matched request through its invoker: typed parameters converted,
 * the handler's context resolved (route, per-loop or per-request), the
 * flattened before-middleware, the handler; and at the end of the exchange
 * the after-middleware, the route's counters and the per-request context.
 * Also each loop's registry of the per-loop contexts it made.
 */
#include <string.h>

#include "server/internal.h"
#include "util/rcu.h"

static void count(_Atomic uint64_t *c) {
  /* Single writer (this loop's slot): a load and a store, no RMW. */
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* Makes this loop's context for `inv` and remembers it, with a reference on
 * the invoker, until the invoker is retired or the loop stops. */
static int make_loop_ctx(hr__worker_t *w, hr_route_t *inv, hr__slot_t *slot) {
  hr__ctxent_t *e;
  if (w->nctx == w->ctx_cap) {
    size_t cap = w->ctx_cap ? w->ctx_cap * 2 : 8;
    hr__ctxent_t *n = hr__mem_realloc(&w->mem, w->ctxs, cap * sizeof(*n));
    if (n == NULL) return -1;
    w->ctxs = n;
    w->ctx_cap = cap;
  }
  if (inv->core->ctx_create(inv->udata, w->loop, &slot->ctx) != 0) return -1;
  slot->ctx_made = 1;
  e = &w->ctxs[w->nctx++];
  e->inv = inv;
  e->slot = slot;
  hr__invoker_ref(inv);
  return 0;
}

static void destroy_loop_ctx(hr__ctxent_t *e) {
  const hr__core_t *core = e->inv->core;
  if (core->ctx_destroy != NULL) core->ctx_destroy(core->udata, e->slot->ctx);
  e->slot->ctx = NULL;
  e->slot->ctx_made = 0;
  hr__invoker_unref(e->inv);
}

void hr__worker_ctx_sweep(hr__worker_t *w, int all) {
  size_t i = 0;
  while (i < w->nctx) {
    hr__ctxent_t *e = &w->ctxs[i];
    /* Pairs with the release store in the router's publish(). */
    if (all || atomic_load_explicit(&e->inv->retired, memory_order_acquire)) {
      destroy_loop_ctx(e);
      w->ctxs[i] = w->ctxs[--w->nctx];
    } else {
      i++;
    }
  }
  if (all) {
    hr__mem_free(&w->mem, w->ctxs);
    w->ctxs = NULL;
    w->ctx_cap = 0;
  }
}

void hr__worker_ctx_prepare(hr__worker_t *w) {
  const hr__table_t *t;
  size_t i;
  hr__rcu_read_lock();
  /* Pairs with the release store in the router's publish(). */
  t = atomic_load_explicit(&w->server->router->table, memory_order_acquire);
  for (i = 0; i < t->ninvokers; i++) {
    hr_route_t *inv = t->invokers[i];
    hr__slot_t *slot;
    if (inv->ctx_scope != HR_CONTEXT_LOOP) continue;
    slot = hr__invoker_slot(inv, (unsigned)w->loop_slot, &w->mem);
    /* A failure here is retried at the route's first request. */
    if (slot != NULL && !slot->ctx_made) make_loop_ctx(w, inv, slot);
  }
  hr__rcu_read_unlock();
}

void hr__invoke(hr__conn_t *c) {
  hr_request_t *r = &c->req;
  hr_response_t *res = &c->res;
  hr_route_t *inv = (hr_route_t *)r->route;
  hr__worker_t *w = c->w;
  void *ctx = inv->udata;
  size_t i;
  c->invoked = 1;
  c->t_start = uv_hrtime();
  c->slot = hr__invoker_slot(inv, (unsigned)w->loop_slot, &w->mem);
  if (c->slot != NULL) count(&c->slot->requests);
  if (inv->typed && hr__invoker_convert(inv, r->params, r->nparams, r->values) != 0) {
    /* The path names no resource of this type (as JAX-RS answers). */
    hr__answer_status(c, 404);
    return;
  }
  if (inv->ctx_scope == HR_CONTEXT_LOOP) {
    if (c->slot == NULL || (!c->slot->ctx_made && make_loop_ctx(w, inv, c->slot) != 0)) {
      hr__answer_status(c, 503);
      return;
    }
    ctx = c->slot->ctx;
  } else if (inv->ctx_scope == HR_CONTEXT_REQUEST) {
    if (inv->core->ctx_create(inv->udata, w->loop, &r->ctx) != 0) {
      hr__answer_status(c, 503);
      return;
    }
    r->ctx_made = 1;
    ctx = r->ctx;
  }
  c->handler_active = 1;
  for (i = 0; i < inv->nbefore; i++) {
    const hr__mw_t *mw = &inv->before[i];
    if (mw->before(r, res, mw->udata) == HR_ANSWERED || c->closed) return;
  }
  inv->handler(r, res, ctx);
}

void hr__exchange_end(hr__conn_t *c) {
  hr_request_t *r = &c->req;
  hr_route_t *inv = (hr_route_t *)r->route;
  int status;
  size_t i;
  if (inv == NULL) return;
  if (c->invoked) {
    status = c->res.state == HR__RES_DONE && !c->aborted ? c->res.status : 0;
    for (i = 0; i < inv->nafter; i++)
      inv->after[i].after(r, status, inv->after[i].udata);
    if (c->slot != NULL) {
      uint64_t end = c->t_done ? c->t_done : uv_hrtime();
      hr__slot_count_response(c->slot, status, (end - c->t_start) / 1000);
    }
    if (r->ctx_made && inv->core->ctx_destroy != NULL)
      inv->core->ctx_destroy(inv->udata, r->ctx);
    r->ctx_made = 0;
    c->invoked = 0;
  }
  c->slot = NULL;
  r->route = NULL;
  if (c->route_ref) {
    c->route_ref = 0;
    hr__invoker_unref(inv);
  }
}

int hr_request_param_value(const hr_request_t *req, size_t index,
                           hr_value_t *out) {
  if (req->route == NULL || index >= req->nparams ||
      req->route->core->ptypes[index] == HR_PARAM_STRING)
    return HR_EINVAL;
  *out = req->values[index];
  return 0;
}
