/* SPDX-License-Identifier: MIT */
/*
 * The exchange: one request and its response, with the arena and the parse
 * state they need.  It is taken from the loop's pool when a request's first
 * byte arrives and given back when its response has completed, so a
 * connection between requests holds none.
 *
 * Its life off the connection: when the connection closes while a handler
 * still holds the response, the exchange is detached (it keeps the read
 * buffer its spans point into) and lives until the handler completes the
 * response, whose completing call answers HR_ECLOSED.  When a shutdown
 * deadline passes first, it is abandoned: every later call on it answers
 * HR_ECLOSED and does nothing, and its memory stays valid until
 * hr_server_free, so a handler that wakes up late never touches freed
 * memory.
 */
#include <string.h>

#include "server/exchange/compress.h"
#include "codec/zconf.h"
#include "server/exchange/exchange.h"
#include "util/rcu.h"
#include "util/thread.h"

hr__exchange_t *hr__exchange_new(hr__worker_t *w, hr__conn_t *c, const hr__proto_t *proto,
                                 size_t rpos) {
  hr__exchange_t *ex = hr__pool_get(&w->xpool);
  if (ex == NULL) return NULL;
  /* Everything up to the parameter arrays; they are written before read. */
  memset(ex, 0, offsetof(hr__exchange_t, req) + offsetof(hr_request_t, params));
  atomic_store_explicit(&ex->where, HR__EX_ON_CONN, memory_order_relaxed);
  ex->conn = c;
  ex->proto = proto;
  ex->w = w;
  /* The parser is initialised for each message by hr__parse_head. */
  hr__arena_init(&ex->arena, &w->apool);
  hr__head_scan_init(&ex->hscan);
  ex->rpos = rpos;
  ex->head_started = ex->last_activity = uv_now(w->loop);
  /* The bytes of its first line came in the loop's latest read or an
   * earlier one: the read's time is no earlier than they, and no later
   * than now, and requests read together share it (pipelining). */
  ex->t_first = w->t_read ? w->t_read : uv_hrtime();
  return ex;
}

void hr__exchange_view_from(hr__exchange_t *ex, const hr__table_t *t) {
  const hr__host_t *h = hr__pick_host(t, hr__route_host(&ex->req));
  ex->answers = h->answers;
  ex->fallback = h->fallback;
  ex->zconf = h->zconf;
  ex->viewed = 1;
}

void hr__exchange_view(hr__exchange_t *ex) {
  if (ex->viewed) return;
  hr__rcu_read_lock();
  hr__exchange_view_from(ex, hr__router_table(ex->w->server->router));
  /* Outside a processing step (a timer, the end of one, a detached
   * exchange) the section ends here, before the fallback is used. */
  if (ex->conn == NULL || !ex->proto->stepping(ex)) hr__exchange_keep(ex);
  hr__rcu_read_unlock();
}

void hr__exchange_keep(hr__exchange_t *ex) {
  if (ex->req.route != NULL && !ex->route_ref) {
    hr__invoker_ref_reader((hr_route_t *)ex->req.route);
    ex->route_ref = 1;
  }
  /* A routed request uses the fallback only inside its dispatch (a typed
   * parameter that does not convert): its after-chain is the route's. */
  if (ex->req.route == NULL && ex->fallback != NULL && !ex->fallback_ref) {
    hr__invoker_ref_reader(ex->fallback);
    ex->fallback_ref = 1;
  }
  /* The response may be compressed by them later, whoever answers. */
  if (ex->zconf != NULL && !ex->zconf_ref) {
    hr__zconf_hold(ex->zconf);
    ex->zconf_ref = 1;
  }
}

static void give_back(hr__exchange_t *ex) {
  hr__worker_t *w = ex->w;
  hr__compress_release(ex);
  if (ex->req.body_heap) hr__mem_free(&w->mem, ex->req.body);
  ex->req.body_heap = 0;
  hr__arena_reset(&ex->arena);
  hr__rbuf_put(w, ex->rbuf, ex->rbuf_large);
  ex->rbuf = NULL;
  hr__pool_put(&w->xpool, ex);
}

static void unlink_detached(hr__exchange_t *ex) {
  hr__exchange_t **pp = &ex->w->detached;
  while (*pp != NULL && *pp != ex) pp = &(*pp)->next;
  if (*pp == ex) {
    *pp = ex->next;
    ex->w->ndetached--;
  }
  ex->next = NULL;
}

/* The one dispose point: the exchange has ended, its observers hear of it
 * (hr__ex_observer_fn). */
static void ended(hr__exchange_t *ex) {
  const hr_server_t *s = ex->w->server;
  size_t i;
  for (i = 0; i < s->nobservers; i++) s->observers[i](ex);
}

void hr__exchange_free(hr__exchange_t *ex) {
  hr__worker_t *w = ex->w;
  int where = atomic_load_explicit(&ex->where, memory_order_relaxed);
  if (where == HR__EX_ABANDONED) return; /* kept until hr_server_free */
  ended(ex);
  if (ex->proto->release != NULL) ex->proto->release(ex);
  hr__locals_release(ex);
  hr__invoke_release(ex);
  if (where == HR__EX_DETACHED) unlink_detached(ex);
  give_back(ex);
  if (where == HR__EX_DETACHED) hr__worker_exchange_gone(w);
}

int hr__exchange_client_left(hr__exchange_t *ex) {
  if (ex->phase != HR__PH_BODY || ex->msg_complete || ex->res.state != HR__RES_NEW ||
      ex->sent_status != 0 || ex->client_abort)
    return 0;
  ex->client_abort = 1;
  hr__stat_inc(&ex->w->st_client_aborts);
  return 1;
}

void hr__exchange_abort(hr__exchange_t *ex, int body_status) {
  hr_request_t *r = &ex->req;
  hr_response_t *res = &ex->res;
  if (!ex->handler_active || res->state == HR__RES_DONE || ex->aborted) return;
  ex->aborted = 1;
  /* A callback may complete the response: the exchange stays valid until
   * the unhold below. */
  hr__exchange_hold(ex);
  if (r->body_cb != NULL && !r->body_done) {
    hr_span_t none = {NULL, 0};
    r->body_done = 1;
    r->body_cb(r, none, body_status, r->body_udata);
  }
  if (res->want_drain && res->drain_cb != NULL) {
    res->want_drain = 0;
    res->drain_cb(res, HR_ECLOSED, res->drain_udata);
  }
  if (res->abort_cb != NULL && res->state != HR__RES_DONE)
    res->abort_cb(res, res->abort_udata);
  hr__exchange_unhold(ex);
}

void hr__exchange_detach(hr__exchange_t *ex, const char *room) {
  hr__worker_t *w = ex->w;
  if (room != NULL) { /* the access log still names the peer */
    char *copy = hr__arena_alloc(&ex->arena, HR__PEER_TEXT);
    if (copy != NULL) memcpy(copy, room, HR__PEER_TEXT);
    ex->peer_text = copy;
  }
  ex->conn = NULL;
  atomic_store_explicit(&ex->where, HR__EX_DETACHED, memory_order_relaxed);
  ex->next = w->detached;
  w->detached = ex;
  w->ndetached++;
}

void hr__exchange_abandon(hr__exchange_t *ex) {
  hr__worker_t *w = ex->w;
  hr_server_t *s = w->server;
  const hr_route_t *rt = ex->req.route;
  unlink_detached(ex);
  hr__log(w, HR_LOG_WARN,
          "shutdown deadline passed: abandoned the response to %.*s %.*s "
          "(route %.*s)",
          (int)(ex->req.method.len > 32 ? 32 : ex->req.method.len),
          ex->req.method.ptr,
          (int)(ex->req.target.len > 96 ? 96 : ex->req.target.len),
          ex->req.target.ptr,
          (int)(rt != NULL ? (rt->core->pattern.len > 96 ? 96 : rt->core->pattern.len) : 1),
          rt != NULL ? rt->core->pattern.ptr : "-");
  /* The after-middleware hear of it now, on the loop (status 0: no
   * response); contexts and references go at hr_server_free. */
  ended(ex);
  /* Pairs with the acquire load in hr__exchange_check_thread(). */
  atomic_store_explicit(&ex->where, HR__EX_ABANDONED, memory_order_release);
  uv_mutex_lock(&s->abandon_lock);
  ex->next = s->abandoned;
  s->abandoned = ex;
  uv_mutex_unlock(&s->abandon_lock);
  atomic_fetch_add_explicit(&s->st_abandoned, 1, memory_order_relaxed);
  hr__worker_exchange_gone(w);
}

void hr__exchange_release_abandoned(hr__exchange_t *ex) {
  hr__locals_release(ex);
  hr__invoke_release(ex);
  give_back(ex);
}

int hr__exchange_check_thread(const hr__exchange_t *ex) {
  /* Pairs with the release store in hr__exchange_abandon(). */
  if (atomic_load_explicit(&ex->where, memory_order_acquire) == HR__EX_ABANDONED)
    return HR_ECLOSED;
  return hr__thread_is(&ex->w->loop_thread) ? 0 : HR_ETHREAD;
}

void hr__exchange_hold(hr__exchange_t *ex) { ex->holds++; }

int hr__exchange_unhold(hr__exchange_t *ex) {
  if (--ex->holds != 0 || !ex->free_pending) return 0;
  ex->free_pending = 0;
  hr__exchange_free(ex);
  return 1;
}

void hr__exchange_release(hr__exchange_t *ex) {
  if (ex->holds != 0)
    ex->free_pending = 1;
  else
    hr__exchange_free(ex);
}

void hr__worker_ended(hr__exchange_t *ex) {
  if (ex->outcome.completed) hr__stat_inc(&ex->w->st_requests);
}
