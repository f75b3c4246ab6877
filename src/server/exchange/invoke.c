/* SPDX-License-Identifier: MIT */
/*
 * Running a matched request through its invoker: typed parameters converted,
 * the handler's context resolved (route, per-loop or per-request), the
 * flattened before-middleware, the handler; and at the end of the exchange
 * the after-middleware, the route's counters and the per-request context.
 * Also each loop's registry of the per-loop contexts it made.
 */
#include <string.h>

#include "codec/zconf.h"
#include "server/exchange/exchange.h"
#include "util/rcu.h"

static void count(_Atomic uint64_t *c) {
  /* Single writer (this loop's slot): a load and a store, no RMW. */
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* Makes this loop's context for `inv`'s route and remembers it, with a
 * reference on the route's core, until the route is retired and no request
 * of this loop uses the context any more, or the loop stops. */
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
  e->core = (hr__core_t *)inv->core;
  e->slot = slot;
  hr__core_ref(e->core);
  return 0;
}

static void destroy_loop_ctx(hr__worker_t *w, hr__ctxent_t *e) {
  hr__core_t *core = e->core;
  if (core->ctx_destroy != NULL) core->ctx_destroy(core->udata, e->slot->ctx);
  e->slot->ctx = NULL;
  e->slot->ctx_made = 0;
  hr__core_unref(&w->server->router->mem, core);
}

void hr__worker_ctx_sweep(hr__worker_t *w, int all) {
  size_t i = 0;
  while (i < w->nctx) {
    hr__ctxent_t *e = &w->ctxs[i];
    /* Pairs with the release store in the router's install().  A context
     * still handed to a request of this loop waits for it to end. */
    if (all || (e->slot->inflight == 0 &&
                atomic_load_explicit(&e->core->retired, memory_order_acquire))) {
      destroy_loop_ctx(w, e);
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

static void prepare_one(void *ctx, hr_route_t *inv) {
  hr__worker_t *w = ctx;
  hr__slot_t *slot;
  if (inv->ctx_scope != HR_CONTEXT_LOOP) return;
  slot = hr__core_slot((hr__core_t *)inv->core, (unsigned)w->loop_slot);
  /* A failure here is retried at the route's first request. */
  if (slot != NULL && !slot->ctx_made) make_loop_ctx(w, inv, slot);
}

void hr__worker_ctx_prepare(hr__worker_t *w) {
  const hr__table_t *t;
  hr__rcu_read_lock();
  /* Pairs with the release store in the router's install(). */
  t = atomic_load_explicit(&w->server->router->table, memory_order_acquire);
  hr__table_each_route(t, prepare_one, w);
  hr__rcu_read_unlock();
}

/* Parameters typed HR_PARAM_OF_TYPE(t): parsed by t's delegate, found
 * through the router's lookup cache at each request (a delegate registered
 * later takes effect for later requests), into the request's arena. */
static int parse_objects(hr__exchange_t *ex, const hr_route_t *inv) {
  hr_request_t *r = &ex->req;
  hr__registry_t *reg = &ex->w->server->router->registry;
  hr_mem_t mem = hr_request_mem(r);
  size_t i;
  for (i = 0; i < r->nparams; i++) {
    unsigned t = (unsigned)inv->core->ptypes[i];
    const hr__dtype_t *dt;
    hr_lookup_t l;
    if (t < 0x10000) continue;
    dt = hr__registry_type(reg, t - 0x10000);
    if (dt == NULL || hr__registry_lookup(reg, t - 0x10000, &l) != 0 ||
        l.delegate->parse == NULL)
      return -1;
    r->objs[i] = hr__arena_alloc(&ex->arena, dt->value_size);
    if (r->objs[i] == NULL ||
        l.delegate->parse(r->params[i].value, r->objs[i], &mem, l.delegate->udata) != 0)
      return -1;
  }
  return 0;
}

int hr__invoke_head(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  hr_response_t *res = &ex->res;
  hr_route_t *inv = (hr_route_t *)r->route;
  size_t i;
  ex->handler_active = 1; /* a head middleware may answer later */
  for (i = 0; i < inv->nhead_mw; i++) {
    const hr__mw_t *mw = &inv->head_mw[i];
    if (mw->before(r, res, mw->udata) == HR_ANSWERED || ex->conn == NULL) {
      /* Its chain ran, as far as counters and after-middleware go. */
      ex->slot = hr__core_slot((hr__core_t *)inv->core, (unsigned)ex->w->loop_slot);
      ex->invoked = 1;
      if (ex->slot != NULL) count(&ex->slot->requests);
      return 1;
    }
  }
  ex->handler_active = 0;
  return 0;
}

void hr__invoke_hold_ctx(hr__exchange_t *ex) {
  hr_route_t *inv = (hr_route_t *)ex->req.route;
  if (inv == NULL || inv->ctx_scope != HR_CONTEXT_LOOP || ex->holds_ctx) return;
  ex->slot = hr__core_slot((hr__core_t *)inv->core, (unsigned)ex->w->loop_slot);
  if (ex->slot == NULL) return; /* out of memory: hr__invoke answers 503 */
  ex->slot->inflight++; /* the context stays until this request ends */
  ex->holds_ctx = 1;
}

void hr__invoke(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  hr_response_t *res = &ex->res;
  hr_route_t *inv = (hr_route_t *)r->route;
  hr__worker_t *w = ex->w;
  void *ctx = inv->udata;
  size_t i;
  ex->slot = hr__core_slot((hr__core_t *)inv->core, (unsigned)w->loop_slot);
  if (inv->typed && (hr__invoker_convert(inv, r->params, r->nparams, r->values) != 0 ||
                     parse_objects(ex, inv) != 0)) {
    /* The path names no resource of this type (as JAX-RS answers). */
    ex->proto->answer_status(ex, 404);
    return;
  }
  if (inv->ctx_scope == HR_CONTEXT_LOOP) {
    if (ex->slot == NULL || (!ex->slot->ctx_made && make_loop_ctx(w, inv, ex->slot) != 0)) {
      ex->proto->answer_status(ex, 503);
      return;
    }
    ctx = ex->slot->ctx;
    if (!ex->holds_ctx) {
      ex->slot->inflight++; /* the context stays until this request ends */
      ex->holds_ctx = 1;
    }
  } else if (inv->ctx_scope == HR_CONTEXT_REQUEST) {
    if (inv->core->ctx_create(inv->udata, w->loop, &r->ctx) != 0) {
      ex->proto->answer_status(ex, 503);
      return;
    }
    r->ctx_made = 1;
    ctx = r->ctx;
  }
  /* From here on the route's chain runs: counted, with after-middleware. */
  ex->invoked = 1;
  if (ex->slot != NULL) count(&ex->slot->requests);
  ex->handler_active = 1;
  for (i = 0; i < inv->nbefore; i++) {
    const hr__mw_t *mw = &inv->before[i];
    if (mw->before(r, res, mw->udata) == HR_ANSWERED || ex->conn == NULL) return;
  }
  inv->handler(r, res, ctx);
}

static void run_after(const hr_route_t *inv, hr_request_t *r, int status) {
  size_t i;
  for (i = 0; i < inv->nafter; i++) inv->after[i].after(r, status, inv->after[i].udata);
}

/* The body bytes that went to the client: a compressed stream's coded
 * bytes, else what the response counted (a whole body's coded length
 * when it was compressed). */
static uint64_t body_bytes(const hr__exchange_t *ex) {
  return ex->coded ? ex->coded_bytes : ex->res.written;
}

void hr__invoke_end(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  hr_route_t *inv = (hr_route_t *)r->route;
  int status;
  if (ex->ended) return;
  ex->ended = 1;
  /* What went out: the handler's response, the answer the server gave in
   * its place, the head and part of a body when the connection was lost
   * mid-response, or nothing.  A HEAD response carries no body bytes
   * whatever the handler wrote. */
  ex->outcome.completed = 0;
  if (ex->res.state == HR__RES_DONE && !ex->aborted) {
    ex->outcome.status = ex->res.status;
    ex->outcome.bytes = body_bytes(ex);
    ex->outcome.completed = 1;
  } else if (ex->sent_status != 0) {
    ex->outcome.status = ex->sent_status;
    ex->outcome.bytes = ex->sent_bytes;
    ex->outcome.completed = 1;
  } else if (ex->client_abort) { /* nothing went out: nobody was left */
    ex->outcome.status = HR_STATUS_CLIENT_CLOSED;
    ex->outcome.bytes = 0;
  } else if (ex->res.state != HR__RES_NEW) {
    ex->outcome.status = ex->res.status; /* its head was queued */
    ex->outcome.bytes = body_bytes(ex);
  } else {
    ex->outcome.status = 0;
    ex->outcome.bytes = 0;
  }
  if (r->is_head) ex->outcome.bytes = 0;
  /* To the completion (t_done: before any of it was written), or to now
   * when there was none. */
  ex->outcome.duration_us = ((ex->t_done ? ex->t_done : uv_hrtime()) - ex->t_first) / 1000;
  status = ex->outcome.completed || ex->client_abort ? ex->outcome.status : 0;
  if (inv != NULL) {
    /* The route's chain, also when the server answered before it ran (a
     * typed parameter that did not convert, a context that could not be
     * made): every answer passes the after-middleware of its path. */
    run_after(inv, r, status);
  } else {
    /* No route: the router-level after-middleware of the request's host,
     * from the table the request was matched in, as its answer's
     * before-middleware were (kept by reference when the exchange outlived
     * that table's section: this may run from a timer or a later loop
     * iteration). */
    hr__exchange_view(ex);
    if (ex->fallback != NULL) run_after(ex->fallback, r, status);
  }
  if (!ex->invoked) return;
  ex->invoked = 0;
  if (ex->slot != NULL) {
    hr__slot_count_response(ex->slot, status, ex->outcome.duration_us);
  }
  if (ex->holds_ctx) {
    ex->slot->inflight--;
    ex->holds_ctx = 0;
  }
}

void hr__invoke_release(hr__exchange_t *ex) {
  hr_request_t *r = &ex->req;
  hr_route_t *inv = (hr_route_t *)r->route;
  if (ex->fallback_ref) {
    ex->fallback_ref = 0;
    hr__invoker_unref(ex->fallback);
  }
  ex->fallback = NULL;
  if (ex->zconf_ref) {
    ex->zconf_ref = 0;
    hr__zconf_drop(ex->zconf);
  }
  ex->zconf = NULL;
  ex->viewed = 0;
  if (inv == NULL) return;
  if (r->ctx_made && inv->core->ctx_destroy != NULL)
    inv->core->ctx_destroy(inv->udata, r->ctx);
  r->ctx_made = 0;
  if (ex->holds_ctx) {
    ex->slot->inflight--;
    ex->holds_ctx = 0;
  }
  ex->slot = NULL;
  r->route = NULL;
  if (ex->route_ref) {
    ex->route_ref = 0;
    hr__invoker_unref(inv);
  }
}

const void *hr_request_param_object(const hr_request_t *req, size_t index) {
  if (req->route == NULL || index >= req->nparams ||
      (unsigned)req->route->core->ptypes[index] < 0x10000)
    return NULL;
  return req->objs[index];
}

int hr_request_param_value(const hr_request_t *req, size_t index,
                           hr_value_t *out) {
  if (req->route == NULL || index >= req->nparams ||
      req->route->core->ptypes[index] == HR_PARAM_STRING ||
      (unsigned)req->route->core->ptypes[index] >= 0x10000)
    return HR_EINVAL;
  *out = req->values[index];
  return 0;
}
