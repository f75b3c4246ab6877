/* SPDX-License-Identifier: MIT */
/*
 * The loopback sink transport: a connection without a socket, for the
 * in-process benchmarks, the request fuzzer and tests.  Bytes are fed by the
 * caller as if read (only while the owner reads, and only as much as its
 * buffer takes); output is handed to a callback synchronously, so try_write
 * always takes everything.  Events that must not run inside an operation
 * (a queued write's completion, closing) run from an idle handle.
 */
#include <string.h>

#include "server/net/transport.h"

typedef struct hr__sink_s {
  hr__transport_t base;
  uv_idle_t idle;
  hr__sink_cb sink;
  void *ctx;
  hr__wreq_t *wreq; /* written on the next idle turn */
  unsigned reading : 1;
  unsigned closing : 1;
} hr__sink_t;

size_t hr__sink_size(void) { return sizeof(hr__sink_t); }

static hr__sink_t *sink_of(hr__transport_t *t) { return (hr__sink_t *)t; }

static int sink_read_start(hr__transport_t *t) {
  sink_of(t)->reading = 1;
  return 0;
}

static void sink_read_stop(hr__transport_t *t) { sink_of(t)->reading = 0; }

static ssize_t sink_try_write(hr__transport_t *t, const uv_buf_t *bufs,
                              unsigned n, unsigned flags) {
  hr__sink_t *s = sink_of(t);
  ssize_t total = 0;
  unsigned i;
  (void)flags; /* everything is handed over at once anyway */
  for (i = 0; i < n; i++) {
    s->sink(s->ctx, bufs[i].base, bufs[i].len);
    total += (ssize_t)bufs[i].len;
  }
  return total;
}

static void on_idle(uv_idle_t *h) {
  hr__sink_t *s = h->data;
  hr__wreq_t *req = s->wreq;
  uv_idle_stop(h);
  if (req == NULL) return;
  s->wreq = NULL;
  sink_try_write(&s->base, req->bufs, req->nbufs, 0);
  req->nbufs = 0;
  s->base.ev->write_done(s->base.owner, 0);
}

static int sink_write(hr__transport_t *t, hr__wreq_t *req) {
  hr__sink_t *s = sink_of(t);
  if (s->wreq != NULL) return UV_EBUSY;
  s->wreq = req;
  return uv_idle_start(&s->idle, on_idle);
}

static int sink_shutdown(hr__transport_t *t) {
  (void)t;
  return 0;
}

static void on_close(uv_handle_t *h) {
  hr__sink_t *s = h->data;
  s->base.ev->closed(s->base.owner);
}

static void sink_close(hr__transport_t *t, int abort) {
  hr__sink_t *s = sink_of(t);
  (void)abort; /* nothing is held for the peer */
  if (s->closing) return;
  s->closing = 1;
  s->reading = 0;
  s->wreq = NULL;
  uv_close((uv_handle_t *)&s->idle, on_close);
}

static int sink_addr(const hr__transport_t *t, struct sockaddr *addr, int *len) {
  (void)t;
  (void)addr;
  (void)len;
  return UV_ENOTCONN;
}

static int sink_queues(const hr__transport_t *t, size_t *unread, size_t *unacked) {
  (void)t;
  (void)unread;
  (void)unacked;
  return UV_ENOTSUP; /* bytes are fed and taken synchronously */
}

static const hr__transport_ops_t sink_ops = {
    .read_start = sink_read_start,
    .read_stop = sink_read_stop,
    .try_write = sink_try_write,
    .write = sink_write,
    .shutdown = sink_shutdown,
    .close = sink_close,
    .peer = sink_addr,
    .local = sink_addr,
    .queues = sink_queues,
    .tls_info = hr__no_tls_info,
    .tls_client = hr__no_tls_client,
    .try_sendfile = NULL, /* the output queue reads files for it */
};

void hr__sink_init(hr__transport_t *t, uv_loop_t *loop, hr__sink_cb sink,
                   void *ctx, const hr__transport_events_t *ev, void *owner) {
  hr__sink_t *s = sink_of(t);
  memset(s, 0, sizeof(*s));
  uv_idle_init(loop, &s->idle);
  s->idle.data = s;
  s->sink = sink;
  s->ctx = ctx;
  s->base.ops = &sink_ops;
  s->base.ev = ev;
  s->base.owner = owner;
}

size_t hr__sink_feed(hr__transport_t *t, const char *p, size_t n) {
  hr__sink_t *s = sink_of(t);
  size_t done = 0;
  while (done < n && s->reading && !s->closing) {
    uv_buf_t buf;
    size_t take;
    s->base.ev->alloc(s->base.owner, &buf);
    if (buf.len == 0) break;
    take = buf.len < n - done ? buf.len : n - done;
    memcpy(buf.base, p + done, take);
    done += take;
    s->base.ev->read(s->base.owner, (ssize_t)take);
  }
  return done;
}

void hr__sink_eof(hr__transport_t *t) {
  hr__sink_t *s = sink_of(t);
  if (s->closing) return;
  s->reading = 0;
  s->base.ev->read(s->base.owner, UV_EOF);
}
