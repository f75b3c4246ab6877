/* SPDX-License-Identifier: MIT */
/*
 * A worker: one loop's share of the server.  It owns the loop's listeners,
 * the Date cache, the buffer pools, the queue of cross-thread posts, the list
 * of connections to resume, and the graceful shutdown of its connections.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "codec/codec.h"
#include "http/head.h"
#include "server/h2/h2.h"
#include "server/net/tls.h"
#include "server/worker.h"
#include "util/testpoint.h"




/* ---- Date (RFC 9110 §6.6.1), refreshed once a second ---------------------- */

static void render_date(hr__worker_t *w) {
  w->date_len = hr__date_field(w->date, sizeof(w->date));
}

/* Milliseconds until the next wall-clock second, plus one: the timer fires
 * just after the second changes, so Date is never a second behind. */
static uint64_t ms_to_next_second(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)(1000 - ts.tv_nsec / 1000000) + 1;
}

static void on_date_timer(uv_timer_t *t) {
  hr__worker_t *w = t->data;
  render_date(w);
  uv_timer_start(t, on_date_timer, ms_to_next_second(), 0);
  hr__worker_trim(w);
  /* Per-loop contexts of replaced or removed routes go within a second. */
  hr__worker_ctx_sweep(w, 0);
  HR__TP(HR__TP_CTX_SWEPT, w);
}

/* ---- resume list and posts ----------------------------------------------- */







static void on_async(uv_async_t *a) {
  hr__worker_t *w = a->data;
  hr_server_t *s = w->server;
  hr__worker_run_posts(w);
  /* Pairs with the release store in hr_server_drain(): its figures are
   * visible once the flag is. */
  if (atomic_load_explicit(&s->drain_go, memory_order_acquire) && !w->draining &&
      !w->stopping)
    hr__worker_drain(w, s->drain_grace_ms, s->drain_deadline_ms);
  /* Pairs with the release store in hr_server_stop(): the deadline written
   * before the flag is visible here. */
  if (atomic_load_explicit(&w->stop_requested, memory_order_acquire) &&
      !w->stopping)
    hr__worker_shutdown(w, w->shutdown_deadline_ms);
}

/* ---- lifecycle ----------------------------------------------------------- */

static void on_timeout(hr__timers_t *t, hr__tnode_t *n, hr__tlist_t list) {
  (void)t;
  if (list == HR__TL_STREAM)
    hr__stream_timeout(n);
  else
    hr__conn_timeout((hr__conn_t *)((char *)n - offsetof(hr__conn_t, timer)), list);
}


int hr__worker_init(hr__worker_t *w, hr_server_t *s, uv_loop_t *loop) {
  size_t i;
  int err;
  w->server = s;
  w->loop = loop;
  w->loop_thread = uv_thread_self();
  w->reserve_fd = -1;
  hr__mem_init(&w->mem, s->opts.allocator);
  w->loop_slot = hr__router_loop_acquire(s->router);
  if (w->loop_slot < 0) return HR_EINVAL; /* more loops than HR__MAX_LOOPS */
  hr__pool_init(&w->rpool, &w->mem, s->rbuf_size, 64);
  hr__pool_init(&w->rpool_small, &w->mem, HR__RBUF_SMALL, 256);
  hr__pool_init(&w->bpool, &w->mem, 4096, 128);
  hr__pool_init(&w->apool, &w->mem, 4096, 128);
  hr__pool_init(&w->xpool, &w->mem, sizeof(hr__exchange_t), 64);
  hr__pool_init(&w->opool, &w->mem, sizeof(hr__out_t), 64);
  hr__slab_init(&w->slab, &w->mem, 256);
  atomic_init(&w->stop_requested, 0);
  atomic_init(&w->st_requests, 0);
  atomic_init(&w->st_accepted, 0);
  atomic_init(&w->st_bad, 0);
  atomic_init(&w->st_client_aborts, 0);
  atomic_init(&w->st_accept_pauses, 0);
  atomic_init(&w->st_bytes_received, 0);
  atomic_init(&w->st_bytes_sent, 0);
  render_date(w);
  if ((err = uv_mutex_init(&w->post_lock)) != 0) return err;
  w->post_lock_made = 1;
  w->handles_open = 0;
  /* The only handle init that can fail goes first, so that either all the
   * base handles exist or none does. */
  if ((err = uv_async_init(loop, &w->async, on_async)) != 0) {
    return err;
  }
  w->async.data = w;
  w->handles_open++;
  uv_timer_init(loop, &w->date_timer);
  w->date_timer.data = w;
  uv_timer_start(&w->date_timer, on_date_timer, ms_to_next_second(), 0);
  uv_unref((uv_handle_t *)&w->date_timer);
  w->handles_open++;
  uv_idle_init(loop, &w->resume_idle);
  w->resume_idle.data = w;
  w->handles_open++;
  uv_timer_init(loop, &w->shutdown_timer);
  w->shutdown_timer.data = w;
  w->handles_open++;
  hr__timers_init(&w->timers, loop, on_timeout);
  w->handles_open++;
  uv_timer_init(loop, &w->accept_timer);
  w->accept_timer.data = w;
  w->handles_open++;
  w->base_handles = 1;
  if (s->ntls > 0 && (err = hr__worker_tls_loop(w)) != 0) return err;
  w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (i = 0; i < w->nlisteners; i++) {
    if ((err = hr__listener_init(w, &w->listeners[i], w->fds[i])) != 0) goto fail;
    w->listeners[i].tls = s->addrs[i].tls;
    w->listeners[i].h2 = s->addrs[i].h2;
    w->listeners[i].proxy = s->addrs[i].proxy;
    if (s->nworkers > 1 && !s->addrs[i].reuseport) hr__listener_share(&w->listeners[i]);
    w->fds[i] = -1; /* owned by the listener now */
    w->handles_open++;
    w->nlisteners_open = i + 1;
    if ((err = hr__listener_start(&w->listeners[i])) != 0) goto fail;
  }
  /* Per-loop contexts exist before this loop serves its first request. */
  hr__worker_ctx_prepare(w);
  return 0;
fail:
  return err;
}

void hr__worker_handle_closed(hr__worker_t *w) {
  if (--w->handles_open == 0) hr__worker_finished(w);
}

static void on_worker_handle_close(uv_handle_t *h) {
  hr__worker_handle_closed(h->data);
}

static void on_tlsloop_close(uv_handle_t *h) {
  hr__tlsloop_t *lp = h->data;
  hr__worker_t *w = lp->owner;
  hr__mem_free(&w->mem, lp);
  w->tls = NULL;
  hr__worker_handle_closed(w);
}

static void on_timers_close(uv_handle_t *h) {
  hr__timers_t *t = h->data;
  hr__worker_handle_closed(
      (hr__worker_t *)((char *)t - offsetof(hr__worker_t, timers)));
}

/* Closes the worker's own handles once no connection is left. */
void hr__worker_quiet(hr__worker_t *w) {
  if (!w->stopping || w->nconns != 0 || w->ndetached != 0 || w->handles_closing)
    return;
  w->handles_closing = 1;
  hr__worker_ctx_sweep(w, 1); /* on this loop, after its last request */
  if (!w->base_handles) {
    /* Listeners only (initialisation failed early). */
    if (w->handles_open == 0) hr__worker_finished(w);
    return;
  }
  uv_close((uv_handle_t *)&w->date_timer, on_worker_handle_close);
  uv_close((uv_handle_t *)&w->resume_idle, on_worker_handle_close);
  uv_close((uv_handle_t *)&w->shutdown_timer, on_worker_handle_close);
  hr__timers_close(&w->timers, on_timers_close);
  uv_close((uv_handle_t *)&w->accept_timer, on_worker_handle_close);
  if (w->tls != NULL) uv_close((uv_handle_t *)&w->tls->idle, on_tlsloop_close);
  /* Posts from now on answer HR_ECLOSED instead of signalling a handle
   * that is closing (see hr_response_post). */
  uv_mutex_lock(&w->post_lock);
  w->posts_closed = 1;
  uv_mutex_unlock(&w->post_lock);
  uv_close((uv_handle_t *)&w->async, on_worker_handle_close);
}




/* The deadline passed: every connection closes now, and every response a
 * handler still holds is abandoned, so the worker can finish whatever the
 * handlers do. */
static void on_shutdown_deadline(uv_timer_t *t) {
  hr__worker_t *w = t->data;
  hr__conn_t *c, *next;
  for (c = w->conns; c != NULL; c = next) {
    next = c->next;
    hr__conn_close(c);
  }
  /* Closing ran abort callbacks: what is still detached now is held by a
   * handler that did not complete it. */
  if (w->ndetached)
    hr__log(w, HR_LOG_WARN,
            "shutdown deadline passed: %zu handler(s) still hold a response; "
            "abandoning them",
            w->ndetached);
  while (w->detached != NULL) hr__exchange_abandon(w->detached);
  hr__worker_quiet(w);
}

static void on_listener_close(uv_handle_t *h) {
  hr__worker_handle_closed(((hr__listener_t *)h->data)->w);
}

void hr__worker_shutdown(hr__worker_t *w, uint64_t deadline_ms) {
  hr__conn_t *c, *next;
  size_t i;
  if (w->stopping) return;
  w->stopping = 1;
  for (i = 0; i < w->nlisteners_open; i++)
    if (!uv_is_closing((uv_handle_t *)&w->listeners[i].poll))
      hr__listener_close(&w->listeners[i], on_listener_close);
  for (c = w->conns; c != NULL; c = next) {
    next = c->next;
    hr__conn_shutdown(c);
  }
  if (w->base_handles)
    uv_timer_start(&w->shutdown_timer, on_shutdown_deadline, deadline_ms, 0);
  hr__worker_quiet(w);
}

static void on_grace_end(uv_timer_t *t) {
  hr__worker_t *w = t->data;
  hr__worker_shutdown(w, w->drain_deadline_ms);
}

void hr__worker_drain(hr__worker_t *w, uint64_t grace_ms, uint64_t deadline_ms) {
  hr__conn_t *c;
  if (w->stopping || w->draining || !w->base_handles) return;
  /* From now on every response says "Connection: close" and its
   * connection ends after it (h1.c, response.c).  Idle keep-alive
   * connections are left open for the grace period: the balancer still
   * sends on them until its health check sees the 503, and closing one now
   * would race with a request already on its way (the peer gets a reset).
   * Those still idle when the grace period ends close then. */
  w->draining = 1;
  w->drain_deadline_ms = deadline_ms;
  /* HTTP/2 clients hear it at once: GOAWAY with 2^31-1 (RFC 9113 §6.8). */
  for (c = w->conns; c != NULL; c = c->next)
    if (c->h2 != NULL) hr__h2_notice(c);
  uv_timer_start(&w->shutdown_timer, on_grace_end, grace_ms, 0);
}

void hr__worker_cleanup(hr__worker_t *w) {
  size_t i;
  atomic_store_explicit(&w->loop_ended, 1, memory_order_release);
  if (w->ctxs != NULL) hr__worker_ctx_sweep(w, 1);
  if (w->loop_slot >= 0) {
    hr__router_loop_release(w->server->router, w->loop_slot);
    w->loop_slot = -1;
  }
  /* Posts that came in as the loop ended: their responses are abandoned,
   * so their calls answer HR_ECLOSED. */
  hr__worker_run_posts(w);
  if (w->reserve_fd >= 0) close(w->reserve_fd);
  w->reserve_fd = -1;
  hr__pool_drain(&w->rpool);
  hr__pool_drain(&w->rpool_small);
  hr__pool_drain(&w->bpool);
  hr__pool_drain(&w->apool);
  hr__pool_drain(&w->xpool);
  hr__pool_drain(&w->opool);
  hr__slab_drain(&w->slab);
  hr__codecs_free(w->codecs);
  w->codecs = NULL;
  hr__mem_free(&w->mem, w->zbuf);
  w->zbuf = NULL;
  w->zcap = 0;
  hr__streams_free(w); /* every stream ended with its connection */
  hr__stream_locals_free(w);
  /* post_lock stays: a thread inside hr_response_post may still take it
   * until hr_server_free. */
  for (i = 0; i < w->nlisteners; i++)
    if (w->fds != NULL && w->fds[i] >= 0) {
      close(w->fds[i]);
      w->fds[i] = -1;
    }
}
