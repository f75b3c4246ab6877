/* SPDX-License-Identifier: MIT */
/* The bounded loop of the HTTP/2 test clients (h2loop.h). */
#include "h2loop.h"

#include <errno.h>
#include <string.h>

#include "sync.h"

int h2_loop_open(h2_loop_t *l, int port, const h2s_options_t *o,
                 h2s_read_cb on_read, int (*produce)(void *arg), void *arg) {
  memset(l, 0, sizeof *l);
  l->reading = 1;
  l->on_read = on_read;
  l->produce = produce;
  l->arg = arg;
  return h2s_open(&l->sock, port, o);
}

/* Produces, then one step; marks the connection closed when it ended.
 * Returns 1 on progress, 0 when nothing happened within ms, -1 when the
 * connection ended or the producer asked to stop. */
static int step(h2_loop_t *l, int ms) {
  size_t before;
  int rc;
  if (l->seen.closed) return -1;
  if (l->produce != NULL && l->produce(l->arg) != 0) return -1;
  before = h2_bytes_pending(&l->out);
  rc = h2s_step(&l->sock, &l->out, l->reading, ms, l->on_read, l->arg);
  l->seen.bytes_out += before - h2_bytes_pending(&l->out);
  if (rc < 0 && (l->sock.eof || l->sock.err != 0)) {
    l->seen.closed = 1;
    l->seen.err = l->sock.err;
  }
  return rc;
}

int h2_loop_flush(h2_loop_t *l) {
  unsigned long long idle_since = now_ms();
  if (l->produce != NULL && l->produce(l->arg) != 0) return -1;
  while (h2_bytes_pending(&l->out) > 0) {
    int rc = step(l, RC_TIMEOUT_MS);
    if (rc < 0) return -1;
    if (rc > 0) {
      idle_since = now_ms();
    } else if (now_ms() - idle_since >= RC_TIMEOUT_MS) {
      l->sock.err = EAGAIN;
      return -1;
    }
  }
  return 0;
}

int h2_loop_run(h2_loop_t *l, h2_loop_done_fn done, void *done_arg) {
  unsigned long long start = now_ms(), idle_since = start;
  for (;;) {
    int rc;
    if (done(done_arg)) return 1;
    if (l->seen.closed || now_ms() - idle_since >= RC_TIMEOUT_MS ||
        now_ms() - start >= H2_LOOP_CAP_MS)
      return 0;
    rc = step(l, 50);
    if (rc > 0) idle_since = now_ms();
    if (rc < 0) return done(done_arg);
  }
}

static int never(void *arg) {
  (void)arg;
  return 0;
}

int h2_loop_wait_closed(h2_loop_t *l) {
  l->reading = 1;
  h2_loop_run(l, never, NULL);
  return l->seen.closed;
}

void h2_loop_close(h2_loop_t *l, int rst) {
  h2s_close(&l->sock, rst);
  h2_bytes_free(&l->out);
  h2_seen_free(&l->seen);
}

int h2_loop_got_goaway(void *arg) {
  return ((const h2_conn_seen_t *)arg)->goaway;
}

int h2_loop_streams_closed(void *arg) {
  const h2_loop_streams_t *w = arg;
  size_t i;
  for (i = 0; i < w->n; i++) {
    const h2_stream_t *st = h2_seen_stream(w->seen, w->ids[i]);
    if (st == NULL || !st->closed) return 0;
  }
  return 1;
}
