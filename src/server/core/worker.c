/* SPDX-License-Identifier: MIT */
/*
 * The worker's services every layer uses: statistics, the log, posts from
 * other threads, the loop's TLS state, and the counts of what is left of a
 * stopping worker.  The worker's lifecycle (making its handles, accepting,
 * shutting down, draining) is worker.c's, above every layer.
 */
#include <stdarg.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "server/core/worker.h"
#include "server/net/tls.h"

void hr__stat_inc(_Atomic uint64_t *c) {
  /* Single writer (the owning worker); readers use relaxed loads. */
  uint64_t n = atomic_load_explicit(c, memory_order_relaxed);
  atomic_store_explicit(c, n + 1, memory_order_relaxed);
}

void hr__stat_add(_Atomic uint64_t *c, uint64_t n) {
  uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
  atomic_store_explicit(c, v + n, memory_order_relaxed);
}

void hr__log(hr__worker_t *w, hr_log_level_t level, const char *fmt, ...) {
  const hr_server_options_t *o = &w->server->opts;
  char msg[256];
  va_list ap;
  if (o->log == NULL) return;
  va_start(ap, fmt);
  /* A longer message is cut at 255 bytes: it is a log line, not data. */
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  o->log(o->log_ctx, level, msg);
}

void hr__worker_run_posts(hr__worker_t *w) {
  hr__post_t *list, *rev = NULL;
  uv_mutex_lock(&w->post_lock);
  list = w->posts;
  w->posts = NULL;
  uv_mutex_unlock(&w->post_lock);
  while (list != NULL) { /* posts were pushed LIFO: run them in order */
    hr__post_t *n = list->next;
    list->next = rev;
    rev = list;
    list = n;
  }
  while (rev != NULL) {
    hr__post_t *n = rev->next;
    rev->run(rev->target, rev->fn, rev->aux, rev->udata);
    w->mem.a->free(w->mem.a->ctx, rev);
    rev = n;
  }
}

int hr__worker_post(hr__worker_t *w, hr__post_run_t run, void *target, hr__fn_t fn,
                    hr__fn_t aux, void *udata) {
  /* Not through w->mem: its counter has a single writer, the worker. */
  const hr_allocator_t *a = w->mem.a;
  hr__post_t *p = a->malloc(a->ctx, sizeof(*p));
  if (p == NULL) return HR_ENOMEM;
  p->run = run;
  p->target = target;
  p->fn = fn;
  p->aux = aux;
  p->udata = udata;
  uv_mutex_lock(&w->post_lock);
  if (w->posts_closed) {
    /* The worker has finished: nothing would run the callback. */
    uv_mutex_unlock(&w->post_lock);
    a->free(a->ctx, p);
    return HR_ECLOSED;
  }
  p->next = w->posts;
  w->posts = p;
  /* uv_async_send is thread-safe; under the lock, so the worker cannot
   * close the handle between the check above and the send. */
  uv_async_send(&w->async);
  uv_mutex_unlock(&w->post_lock);
  return 0;
}

int hr__worker_call_thread_err(hr__worker_t *w) {
  /* Pairs with the release store in hr__worker_cleanup(). */
  return atomic_load_explicit(&w->loop_ended, memory_order_acquire) ? HR_ECLOSED : HR_ETHREAD;
}

void hr__worker_wake(hr__worker_t *w) {
  /* A worker that has finished (a drain) has closed its async handle:
   * as in hr__worker_post, only signal one still open. */
  uv_mutex_lock(&w->post_lock);
  if (!w->posts_closed) uv_async_send(&w->async);
  uv_mutex_unlock(&w->post_lock);
}

int hr__worker_tls_loop(hr__worker_t *w) {
  if (w->tls != NULL) return 0;
  w->tls = hr__mem_alloc(&w->mem, sizeof(*w->tls));
  if (w->tls == NULL) return HR_ENOMEM;
  hr__tlsloop_init(w->tls, w->loop, &w->mem, w);
  w->handles_open++;
  return 0;
}

/* A stopping worker with no connection and no detached exchange left
 * closes its handles: the lifecycle's hook (worker.c). */
static void maybe_quiet(hr__worker_t *w) {
  if (w->stopping && w->nconns == 0 && w->ndetached == 0)
    w->server->worker_quiet(w);
}

void hr__worker_conn_gone(hr__worker_t *w) {
  w->nconns--;
  maybe_quiet(w);
}

void hr__worker_exchange_gone(hr__worker_t *w) { maybe_quiet(w); }

/* ---- read buffers ---------------------------------------------------------- */

/* Large read buffers freed since the last trim that make one worthwhile. */
#define HR__TRIM_BYTES (4u << 20)

char *hr__rbuf_get(hr__worker_t *w, int large) {
  return hr__pool_get(large ? &w->rpool : &w->rpool_small);
}

void hr__rbuf_put(hr__worker_t *w, char *b, int large) {
  hr__pool_t *p = large ? &w->rpool : &w->rpool_small;
  if (b == NULL) return;
  if (large && p->nfree >= p->max_free) w->rbuf_freed += p->block_size;
  hr__pool_put(p, b);
}

void hr__worker_trim(hr__worker_t *w) {
  if (w->nconns > w->conns_peak) w->conns_peak = w->nconns;
  if (w->rbuf_freed < HR__TRIM_BYTES && w->conns_peak < w->nconns + 1000) return;
  w->rbuf_freed = 0;
  w->conns_peak = w->nconns;
#ifdef __GLIBC__
  if (w->server->opts.allocator == NULL) malloc_trim(0);
#endif
}
