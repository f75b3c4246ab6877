/* SPDX-License-Identifier: MIT */
/*
 * Draining a server before it stops (hr_server_drain), as an instance
 * behind a load balancer must: from the call on, readiness answers 503,
 * every response says "Connection: close" and ends its connection, while
 * the listeners keep accepting for a grace period (the balancer's health
 * check needs that long to take the instance out) and idle connections stay
 * open (the balancer may still send on them); then each worker shuts down
 * as hr_server_close does, which closes what is idle.  Also the liveness
 * and readiness routes.
 */
#include <string.h>

#include "server/worker.h"
#include "util/testpoint.h"
#include "util/thread.h"

/* The drain's callback, once, on whichever thread finds it due. */
static void drain_done(hr_server_t *s) {
  if (atomic_exchange_explicit(&s->drain_called, 1, memory_order_acq_rel)) return;
  if (s->drain_cb != NULL) s->drain_cb(s, s->drain_udata);
}

int hr_server_drain(hr_server_t *s, uint64_t grace_ms, uint64_t deadline_ms, hr_shutdown_cb cb,
                    void *udata) {
  size_t k;
  if (s == NULL) return HR_EINVAL;
  /* Not started (start and attach happen before any call that may
   * drain).  s->state is not read for worker threads: hr_server_stop may
   * be writing it on another thread; their end is counted in drain_left. */
  if (s->workers == NULL) return HR_ESTATE;
  if (!s->threaded) {
    if (!hr__thread_is(&s->workers[0].loop_thread)) return HR_ETHREAD;
    if (s->state != HR__SRV_ATTACHED) return HR_ESTATE;
  } else if (atomic_load_explicit(&s->drain_left, memory_order_seq_cst) == 0) {
    return HR_ESTATE; /* stopped */
  }
  HR__TP(HR__TP_DRAIN_CHECKED, s);
  if (atomic_exchange_explicit(&s->draining, 1, memory_order_acq_rel)) return HR_ESTATE;
  s->drain_grace_ms = grace_ms;
  s->drain_deadline_ms = deadline_ms;
  if (!s->threaded) {
    /* The shutdown that follows the grace period is hr_server_close's. */
    s->state = HR__SRV_CLOSING;
    s->shutdown_cb = cb;
    s->shutdown_udata = udata;
    hr__worker_drain(&s->workers[0], grace_ms, deadline_ms);
    return 0;
  }
  s->drain_cb = cb;
  s->drain_udata = udata;
  /* Each worker begins when its async handle wakes it and it sees the
   * flag (on_async, worker.c): as hr_server_stop does, nothing is
   * allocated, so that no worker can be left out.  The store publishes
   * the figures above (seq_cst: see below). */
  atomic_store_explicit(&s->drain_go, 1, memory_order_seq_cst);
  for (k = 0; k < s->nworkers; k++) hr__worker_wake(&s->workers[k]);
  HR__TP(HR__TP_DRAIN_ARMED, s);
  /* Every worker may have ended already (a concurrent hr_server_stop):
   * then no worker saw the flag at its end, and the callback is due here.
   * seq_cst on drain_go and drain_left, here and in
   * hr__server_worker_ended: of this load and the last worker's load of
   * drain_go, at least one sees the other side's store; drain_called
   * keeps it to one call. */
  if (atomic_load_explicit(&s->drain_left, memory_order_seq_cst) == 0) drain_done(s);
  return 0;
}

int hr_server_draining(const hr_server_t *s) {
  return s != NULL && atomic_load_explicit(&s->draining, memory_order_acquire);
}

void hr__server_worker_ended(hr_server_t *s) {
  /* The last worker thread of a drain to end reports it.  seq_cst (also
   * acq_rel: every worker's work happens before the callback); see
   * hr_server_drain. */
  if (atomic_fetch_sub_explicit(&s->drain_left, 1, memory_order_seq_cst) == 1 &&
      atomic_load_explicit(&s->drain_go, memory_order_seq_cst))
    drain_done(s);
}

/* ---- liveness and readiness ---------------------------------------------- */

static void send_text(hr_response_t *res, int status, const char *text) {
  static const hr_field_t fields[] = {
      {HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain; charset=utf-8")},
      {HR_SPAN_LIT("Cache-Control"), HR_SPAN_LIT("no-store")},
  };
  size_t i;
  for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    (void)hr_response_add_field(res, fields[i].name, fields[i].value);
  (void)hr_response_send(res, status, text, strlen(text));
}

static void on_live(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  send_text(res, 200, "ok\n");
}

static void on_ready(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  if (hr_server_draining(udata))
    send_text(res, 503, "draining\n");
  else
    send_text(res, 200, "ready\n");
}

int hr_server_route_health(hr_server_t *s, const char *liveness_path,
                           const char *readiness_path) {
  int err;
  if (s == NULL || (liveness_path == NULL && readiness_path == NULL)) return HR_EINVAL;
  if (liveness_path != NULL &&
      (err = hr_router_add(s->router, "GET", liveness_path, on_live, s, NULL)) != 0)
    return err;
  if (readiness_path != NULL &&
      (err = hr_router_add(s->router, "GET", readiness_path, on_ready, s, NULL)) != 0) {
    if (liveness_path != NULL) (void)hr_router_remove(s->router, "GET", liveness_path);
    return err;
  }
  return 0;
}

int hr_server_txn_health(hr_server_t *s, hr_txn_t *txn, const char *liveness_path,
                         const char *readiness_path) {
  int err;
  if (s == NULL || txn == NULL || (liveness_path == NULL && readiness_path == NULL))
    return HR_EINVAL;
  if (liveness_path != NULL &&
      (err = hr_txn_add(txn, NULL, "GET", liveness_path, on_live, s, NULL)) != 0)
    return err;
  if (readiness_path != NULL &&
      (err = hr_txn_add(txn, NULL, "GET", readiness_path, on_ready, s, NULL)) != 0) {
    /* A removal recorded after the addition: the commit leaves neither. */
    if (liveness_path != NULL) (void)hr_txn_remove(txn, NULL, "GET", liveness_path);
    return err;
  }
  return 0;
}
