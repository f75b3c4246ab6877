/* SPDX-License-Identifier: MIT */
/*
 * A connection's lifecycle: its record and transport, reading, the
 * processing loop, deadlines, and closing.  What differs between HTTP/1.1
 * and HTTP/2 it asks the connection's wire (wire.h: h1/h1_wire.c,
 * h2/h2.c).  This is the one file that decides when a connection closes
 * and the one function that frees it (conn_free, once the transport has
 * closed: the only thing that holds the record, counted in `refs`).  The
 * modules around it report back by return value or through the event
 * functions declared in conn.h; none of them closes or frees.
 *
 * Close states, in order: OPEN (answering requests) -> DRAINING (no more
 * requests; the last response goes out) -> SHUT (FIN sent; the peer's bytes
 * are dropped for a while, so our last response is not lost to a reset,
 * RFC 9112 §9.6) -> CLOSED (transport closing).  A hard close goes straight
 * to CLOSED.  An exchange whose handler still holds its response when the
 * connection is done with it is detached and lives on alone (exchange.c).
 *
 * Input lives in one read buffer per connection, taken from the loop's pool
 * while bytes are pending and given back when the connection is idle.  A
 * request's header section stays where it was read until its response
 * completes, so request spans point straight into the buffer.
 */
#include <assert.h>
#include <string.h>

#include "server/conn/conn.h"
#include "server/conn/wire.h"
#include "util/rcu.h"

/* The connection's state changes here and nowhere else, forward only:
 * OPEN -> DRAINING -> SHUT -> CLOSED, a step possibly skipped, never one
 * back (as libuv asserts a handle's closing).  Other modules ask with
 * hr__conn_drain and hr__conn_close. */
static void to_state(hr__conn_t *c, hr__cstate_t to) {
  assert(to > c->state);
  c->state = to;
}

void hr__conn_drain(hr__conn_t *c) {
  if (c->state == HR__C_OPEN) to_state(c, HR__C_DRAINING);
}

/* How long a closing connection drains the peer's bytes after our FIN. */
#define HR__LINGER_MS 2000

static void conn_process(hr__conn_t *c);

static const hr_server_options_t *opts_of(const hr__conn_t *c) {
  return &c->w->server->opts;
}

/* The wire of the HTTP version the connection speaks (wire.h). */
static const hr__wire_t *wire_of(const hr__conn_t *c) {
  return c->w->server->wire[c->h2 != NULL ? HR__WIRE_H2 : HR__WIRE_H1];
}

/* Whether the output has room again: nothing being written, and what is
 * queued at most half the high-water mark. */
static int output_low(const hr__conn_t *c) {
  return !hr__out_writing(c) &&
         hr__out_queued_memory(c) <= opts_of(c)->write_high_water_bytes / 2;
}

static int above_high_water(const hr__conn_t *c) {
  return hr__out_queued(c) > opts_of(c)->write_high_water_bytes;
}

/* ---- freeing ------------------------------------------------------------- */

static void unlink_resume(hr__conn_t *c) {
  hr__conn_t **pp = &c->w->resume_head;
  while (*pp != NULL && *pp != c) pp = &(*pp)->resume_next;
  if (*pp == c) *pp = c->resume_next;
  c->on_resume = 0;
}

/* The one place a connection record is freed. */
static void conn_free(hr__conn_t *c) {
  hr__worker_t *w = c->w;
  if (c->on_resume) unlink_resume(c);
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    w->conns = c->next;
  if (c->next != NULL) c->next->prev = c->prev;
  hr__rbuf_put(w, c->rbuf, c->rbuf_large);
  hr__out_discard(c);
  if (c->proxy_slot) hr__proxied_free(c);
  assert(c->ex == NULL); /* dropped when it closed */
  wire_of(c)->close(c); /* closed already, unless it never was */
  hr__mem_free(&w->mem, c);
  hr__worker_conn_gone(w);
}

static void conn_unref(hr__conn_t *c) {
  if (--c->refs == 0) conn_free(c);
}

void hr__conn_hold(hr__conn_t *c) { c->refs++; }

void hr__conn_unhold(hr__conn_t *c) { conn_unref(c); }

/* ---- closing ------------------------------------------------------------- */

void hr__conn_drop_exchange(hr__conn_t *c, int body_status) {
  hr__exchange_t *ex = c->ex;
  if (ex == NULL) return;
  c->ex = NULL;
  ex->dropped = 1;
  if (!ex->handler_active || ex->res.state == HR__RES_DONE) {
    hr__exchange_release(ex);
    return;
  }
  /* The handler still holds the response: the exchange keeps the read
   * buffer its spans point into, and references on its invokers, since it
   * outlives this read-side critical section. */
  ex->rbuf = c->rbuf;
  ex->rbuf_large = c->rbuf_large;
  c->rbuf = NULL;
  c->rbuf_large = 0;
  c->rlen = c->msg_start = 0;
  hr__exchange_keep(ex);
  hr__exchange_detach(ex, hr__conn_peer_text(c));
  hr__exchange_abort(ex, body_status);
}

static void on_closed(void *owner) { conn_unref(owner); }

void hr__conn_close(hr__conn_t *c) {
  /* A response cut short (output still queued, or a response under way)
   * ends with a reset, so that the peer cannot take a close-delimited
   * body for a complete one, and the kernel drops what it still holds. */
  int cut = hr__out_queued(c) > 0 ||
            (c->ex != NULL && c->ex->res.state == HR__RES_STREAMING);
  if (c->state == HR__C_CLOSED) return;
  to_state(c, HR__C_CLOSED);
  c->reading = 0;
  hr__timer_clear(&c->timer);
  if (c->counted) {
    atomic_fetch_sub_explicit(&c->w->server->active_conns, 1,
                              memory_order_relaxed);
    c->counted = 0;
  }
  c->t->ops->close(c->t, cut); /* on_closed follows, never inside */
  hr__out_discard(c);
  wire_of(c)->close(c); /* every exchange on it is dropped */
  if (c->upgraded) hr__stream_gone(c); /* its owner hears of it */
}

/* Once a draining connection has written everything: FIN, then drop the
 * peer's bytes until it closes or the linger time passes. */
static void maybe_shut(hr__conn_t *c) {
  if (c->state != HR__C_DRAINING) return;
  if (c->ex != NULL || hr__out_queued(c) > 0 || hr__out_writing(c)) return;
  if (c->peer_eof || c->t->ops->shutdown(c->t) != 0) {
    hr__conn_close(c);
    return;
  }
  if (c->upgraded) hr__stream_fin_sent(c);
  to_state(c, HR__C_SHUT);
  hr__rbuf_put(c->w, c->rbuf, c->rbuf_large);
  c->rbuf = NULL;
  c->rbuf_large = 0;
  c->rlen = c->msg_start = 0;
}

void hr__conn_shutdown(hr__conn_t *c) {
  if (c->state != HR__C_OPEN) return;
  if (c->upgraded) { /* its owner ends it, or it closes now */
    hr__stream_shutdown(c);
    return;
  }
  wire_of(c)->shutdown(c);
}

/* ---- reading ------------------------------------------------------------- */

size_t hr__conn_rbuf_cap(const hr__conn_t *c) {
  return c->rbuf_large ? c->w->server->rbuf_size : HR__RBUF_SMALL;
}

int hr__conn_rbuf_grow(hr__conn_t *c) {
  char *b;
  if (c->rbuf_large || c->rbuf == NULL) return 0;
  if ((b = hr__rbuf_get(c->w, 1)) == NULL) return HR_ENOMEM;
  memcpy(b, c->rbuf, c->rlen);
  hr__rbuf_put(c->w, c->rbuf, 0);
  c->rbuf = b;
  c->rbuf_large = c->rbuf_grew = 1;
  return 0;
}

/* Whether a full small buffer may move into a large one now: while no
 * span points into it (HTTP/1.1 before a header section is parsed; HTTP/2
 * copies what it keeps).  An upgraded stream keeps its small one. */
static int may_grow(const hr__conn_t *c) {
  if (c->upgraded) return 0;
  return c->h2 != NULL || c->ex == NULL || c->ex->phase == HR__PH_HEAD;
}

static void on_alloc(void *owner, uv_buf_t *buf) {
  hr__conn_t *c = owner;
  size_t cap;
  if (c->state != HR__C_OPEN) {
    /* Draining or lingering: no further request is read; the bytes are
     * dropped. */
    *buf = uv_buf_init(c->w->drain_buf, sizeof(c->w->drain_buf));
    return;
  }
  if (c->rbuf == NULL) {
    /* HTTP/2 reads frames of many streams at once, and a connection that
     * needed a large one before (pipelining, uploads) will again. */
    c->rbuf_large = c->h2 != NULL || c->rbuf_grew;
    c->rbuf = hr__rbuf_get(c->w, c->rbuf_large);
    c->rlen = c->msg_start = 0;
  } else if (c->rlen == hr__conn_rbuf_cap(c) && may_grow(c) && hr__conn_rbuf_grow(c) != 0) {
    *buf = uv_buf_init(NULL, 0); /* the read event gets UV_ENOBUFS */
    return;
  }
  if (c->rbuf == NULL) {
    *buf = uv_buf_init(NULL, 0); /* the read event gets UV_ENOBUFS */
    return;
  }
  cap = hr__conn_rbuf_cap(c);
  *buf = uv_buf_init(c->rbuf + c->rlen, (unsigned)(cap - c->rlen));
}

static void on_read(void *owner, ssize_t nread) {
  hr__conn_t *c = owner;
  if (c->state == HR__C_CLOSED) return;
  if (nread > 0) {
    hr__stat_add(&c->w->st_bytes_received, (uint64_t)nread);
    if (c->state != HR__C_OPEN) return; /* draining or lingering: dropped */
    c->late_read = 0;
    c->w->t_read = uv_hrtime();
    c->rlen += (uint32_t)nread;
    if (c->ex != NULL) c->ex->last_activity = uv_now(c->w->loop);
    conn_process(c);
    return;
  }
  if (nread == 0) { /* nothing after all */
    hr__conn_settle(c);
    return;
  }
  if (nread == UV_EOF) {
    c->peer_eof = 1;
    if (c->upgraded && c->state == HR__C_OPEN) { /* the peer ended the stream */
      hr__stream_peer_eof(c);
      if (hr__out_queued(c) > 0 || hr__out_writing(c)) {
        hr__conn_drain(c); /* what is queued still goes out, then close */
        hr__conn_settle(c);
        return;
      }
      hr__conn_close(c);
      return;
    }
    if (c->state == HR__C_SHUT) { /* done lingering */
      hr__conn_close(c);
      return;
    }
    if (c->h2 != NULL) {
      /* An HTTP/2 client that stops sending has left: its streams are
       * over (those still receiving a body are client aborts).  What is
       * queued still goes out, then FIN. */
      c->peer_left = 1;
      if (hr__out_queued(c) > 0 || hr__out_writing(c)) {
        hr__conn_drain(c);
        hr__conn_settle(c);
        return;
      }
      hr__conn_close(c);
      return;
    }
    if (c->ex != NULL && c->ex->handler_active && c->ex->phase == HR__PH_DONE) {
      /* The peer left while its request is being answered: like nginx and
       * Node.js, an abort.  Responses to its earlier requests that are
       * still on their way are complete: they go out, then FIN; only when
       * the current one has begun is the end cut short (a reset). */
      if (c->ex->res.state == HR__RES_NEW && (hr__out_queued(c) > 0 || hr__out_writing(c))) {
        hr__conn_drop_exchange(c, HR_ECLOSED);
        hr__conn_drain(c);
        hr__conn_settle(c);
        return;
      }
      hr__conn_close(c);
      return;
    }
    conn_process(c);
    return;
  }
  c->peer_left = 1; /* a request still arriving is a client abort */
  hr__conn_close(c); /* ECONNRESET, ENOBUFS, ... */
}

/* The output failed: close.  A file that ended before its length
 * (UV_EOF) is no broken peer: what was sent goes out, head included, and
 * the connection ends with FIN after it, so the client sees a body
 * shorter than Content-Length rather than a reset that loses even the
 * head. */
void hr__conn_output_failed(hr__conn_t *c, int err) {
  if (err == UV_EOF) hr__out_discard(c);
  /* The peer reset the connection (seen on a write before any read, as
   * when an HTTP/2 client leaves while the server sends a WINDOW_UPDATE):
   * a request still arriving is a client abort. */
  if (err == UV_ECONNRESET || err == UV_EPIPE) c->peer_left = 1;
  hr__conn_close(c);
}

static void on_write_done(void *owner, int status) {
  hr__conn_t *c = owner;
  int err = hr__out_write_done(c, status);
  if (err < 0) {
    hr__conn_output_failed(c, err);
    return;
  }
  hr__conn_resume(c);
}

static void update_timer(hr__conn_t *c);

/* A slow reader that still takes bytes is not stalled: the write deadline
 * counts from the last progress. */
static void on_write_progress(void *owner) {
  hr__conn_t *c = owner;
  hr__out_progress(c);
  update_timer(c);
}

static const hr__transport_events_t conn_events = {
    on_alloc, on_read, on_write_progress, on_write_done, on_closed};

static void update_reading(hr__conn_t *c) {
  int want;
  if (c->state == HR__C_CLOSED) return;
  if (c->peer_eof)
    want = 0;
  else if (c->state != HR__C_OPEN)
    /* Draining, then lingering: reading on (and dropping what comes) keeps
     * the socket's poll as it is and notices a peer that leaves. */
    want = 1;
  else if (c->upgraded)
    /* A stream reads while its owner wants and the buffer has room. */
    want = !hr__stream_paused(c) && (c->rbuf == NULL || c->rlen < hr__conn_rbuf_cap(c));
  else if (c->ex != NULL && c->ex->req.body_paused && c->ex->phase == HR__PH_BODY)
    /* The handler paused its body: what the client sends waits in the
     * kernel (and then in the client) until it resumes. */
    want = 0;
  else if (c->ex != NULL && c->ex->phase == HR__PH_DONE)
    /* Waiting for the response: pipelined bytes wait in the buffer, and
     * reading goes on while there is room so that a peer that goes away is
     * noticed (its handler hears of it through the abort callback). */
    want = c->rbuf != NULL && c->rlen < hr__conn_rbuf_cap(c) &&
           !above_high_water(c);
  else
    want = !above_high_water(c);
  if (want && !c->reading) {
    if (c->t->ops->read_start(c->t) == 0) c->reading = 1;
  } else if (!want && c->reading) {
    c->t->ops->read_stop(c->t);
    c->reading = 0;
  }
}

/* Gives the read buffer back when nothing in it is needed any more. */
static void release_rbuf(hr__conn_t *c) {
  if (c->rbuf == NULL || c->ex != NULL || c->msg_start != c->rlen) return;
  hr__rbuf_put(c->w, c->rbuf, c->rbuf_large);
  c->rbuf = NULL;
  c->rbuf_large = 0;
  c->rlen = c->msg_start = 0;
}

/* ---- deadlines ----------------------------------------------------------- */

static void arm(hr__conn_t *c, hr__tlist_t list, uint64_t due) {
  hr__timer_set(&c->w->timers, &c->timer, list, due);
}

/* Arms `list` from now, unless the connection already waits in it. */
static void arm_from_now(hr__conn_t *c, hr__tlist_t list, uint64_t ms) {
  if (c->timer.list != (uint8_t)list) arm(c, list, uv_now(c->w->loop) + ms);
}

static void update_timer(hr__conn_t *c) {
  const hr_server_options_t *o = opts_of(c);
  if (c->state == HR__C_CLOSED) return;
  if (c->state == HR__C_SHUT)
    arm_from_now(c, HR__TL_LINGER, HR__LINGER_MS);
  else if (hr__out_writing(c))
    arm(c, HR__TL_WRITE, c->out->write_since + o->write_timeout_ms);
  else if (c->upgraded)
    hr__timer_clear(&c->timer); /* no HTTP deadline for a stream */
  else {
    hr__tlist_t list = HR__TL_NONE;
    uint64_t due = 0;
    wire_of(c)->deadline(c, &list, &due);
    if (list == HR__TL_NONE)
      hr__timer_clear(&c->timer);
    else
      arm(c, list, due);
  }
}

/* A deadline that passed while the peer kept up is the loop's lateness, or
 * the writable event's coarseness, not the peer's fault:
 * - waiting for bytes (idle, header section, body) while the peer's bytes
 *   already wait unread in the socket: the loop ran its timers before it
 *   polled (after a long callback, or with its thread starved) and would
 *   refuse a request that arrived in time.  They are read first, and the
 *   deadline is decided again after them: once per deadline (a header
 *   section's counts from its first byte, so trickling never extends it),
 *   and not again before a read (bytes the loop does not read now cannot
 *   put it off for ever).
 * - output not progressing while the peer acknowledged bytes since our
 *   last progress: a send buffer of megabytes is reported writable only
 *   once about half of it drained, which a slow but steady reader may take
 *   longer than the timeout to do.  Its reading is progress.
 * Returns 1 when the deadline was put off. */
static int put_off(hr__conn_t *c, hr__tlist_t list) {
  size_t unread = 0, unacked = 0;
  uint32_t due = (uint32_t)c->timer.due;
  if (c->t->ops->queues == NULL || c->t->ops->queues(c->t, &unread, &unacked) != 0) return 0;
  if (list == HR__TL_WRITE) {
    hr__out_t *o = c->out;
    if (!hr__out_writing(c) || !o->unacked_known || unacked >= o->unacked) return 0;
    uv_update_time(c->w->loop); /* not older than the measure (hr__out_progress) */
    o->write_since = uv_now(c->w->loop);
    o->unacked = unacked;
    update_timer(c);
    return 1;
  }
  if ((list != HR__TL_IDLE && list != HR__TL_HEADER && list != HR__TL_BODY) ||
      c->state != HR__C_OPEN || !c->reading || unread == 0 || c->late_read ||
      c->late_due == due)
    return 0;
  c->late_read = 1;
  c->late_due = due;
  /* After this turn's poll, which reads them and re-arms as they say. */
  arm(c, list, uv_now(c->w->loop) + 1);
  return 1;
}

void hr__conn_timeout(hr__conn_t *c, hr__tlist_t list) {
  if ((c->state == HR__C_OPEN || c->state == HR__C_DRAINING) && put_off(c, list)) return;
  if (c->state == HR__C_OPEN && !c->upgraded)
    wire_of(c)->timeout(c, list);
  else
    hr__conn_close(c);
  hr__conn_settle(c);
}

/* ---- processing ---------------------------------------------------------- */

/* Moves what is still needed in the read buffer to its front: the next
 * message, or (in a body) the header section and the bytes not consumed. */
static void compact(hr__conn_t *c) {
  hr__exchange_t *ex = c->ex;
  if (c->rbuf == NULL || c->state != HR__C_OPEN) return;
  if (ex == NULL || ex->phase == HR__PH_HEAD) {
    size_t avail = c->rlen - c->msg_start;
    if (c->msg_start == 0) return;
    if (avail) memmove(c->rbuf, c->rbuf + c->msg_start, avail);
    c->rlen = (uint32_t)avail;
    c->msg_start = 0;
    if (ex != NULL) ex->rpos = 0;
  } else if (ex->phase == HR__PH_BODY && ex->rpos > ex->hdr_end) {
    size_t rest = c->rlen - ex->rpos;
    if (rest) memmove(c->rbuf + ex->hdr_end, c->rbuf + ex->rpos, rest);
    c->rlen = (uint32_t)(ex->hdr_end + rest);
    ex->rpos = ex->hdr_end;
  }
}

void hr__conn_settle(hr__conn_t *c) {
  int err;
  if (c->state == HR__C_CLOSED) return;
  if ((err = hr__out_flush(c)) != 0) {
    hr__conn_output_failed(c, err);
    return;
  }
  compact(c);
  maybe_shut(c);
  if (c->state == HR__C_CLOSED) return;
  hr__out_trim(c);
  /* A small buffer the last read filled moves into a large one now, not
   * at the next read: it goes back to its pool at once, for the next
   * connection, instead of waiting with thousands of others. */
  if (c->rbuf != NULL && !c->rbuf_large && c->rlen == HR__RBUF_SMALL && may_grow(c))
    (void)hr__conn_rbuf_grow(c); /* else on_alloc tries again */
  update_reading(c);
  release_rbuf(c);
  update_timer(c);
  /* Everything went out at once: a writer waiting for room hears of it on
   * the next loop turn (never inside its own call). */
  if (!output_low(c)) return;
  if (c->upgraded ? c->state == HR__C_OPEN && hr__stream_wants_drain(c)
                  : wire_of(c)->wants_kick(c))
    hr__conn_kick(c); /* more frames, or a writer hears of room */
}

/* Which HTTP the connection speaks, chosen at its first bytes: HTTP/2
 * when TLS's ALPN chose "h2", or where h2c is allowed when they are the
 * client preface (RFC 9113 §3.3, §3.4); else HTTP/1.1.  Returns 1 to go
 * on, 0 to wait for more bytes (or the connection closed). */
static int choose_protocol(hr__conn_t *c) {
  const hr__wire_t *h2w = c->w->server->wire[HR__WIRE_H2];
  int h2 = -1;
  if (!c->h2c_ok) {
    hr_tls_info_t info;
    size_t n = strlen(h2w->name);
    if (c->t->ops->tls_info(c->t, &info) == 0 && info.alpn.len == n &&
        memcmp(info.alpn.ptr, h2w->name, n) == 0)
      h2 = 1;
  } else {
    if (c->rbuf == NULL) return 0;
    h2 = h2w->recognise(c->rbuf + c->msg_start, c->rlen - c->msg_start);
    if (h2 == 0) return 0; /* a prefix of the preface so far */
  }
  c->proto_open = 0;
  if (h2 == 1 && h2w->start(c) != 0) {
    hr__conn_close(c);
    return 0;
  }
  return 1;
}

/* One step of the connection's protocol.  Returns 1 to step again. */
static int protocol_step(hr__conn_t *c) {
  if (c->upgraded) { /* a byte stream now, never parsed */
    hr__stream_process(c);
    return 0;
  }
  if (c->proto_open && !choose_protocol(c)) return 0;
  return wire_of(c)->step(c);
}

static void conn_process(hr__conn_t *c) {
  hr__exchange_t *ex;
  if (c->in_process || c->state == HR__C_CLOSED) return;
  c->in_process = 1;
  /* Route tables and invokers read from here on stay valid until the
   * unlock; an exchange that outlives it keeps its invokers by reference
   * (hr__exchange_keep). */
  hr__rcu_read_lock();
  while (c->state == HR__C_OPEN && (c->proxy_wait ? hr__proxy_step(c) : protocol_step(c)))
    ;
  ex = c->ex;
  if (ex != NULL) hr__exchange_keep(ex);
  hr__rcu_read_unlock();
  c->in_process = 0;
  if (c->state == HR__C_CLOSED) return;
  /* The peer sent its last byte: a request cut short cannot complete. */
  if (c->peer_eof && c->state == HR__C_OPEN && !c->upgraded && wire_of(c)->peer_eof != NULL)
    wire_of(c)->peer_eof(c);
  hr__conn_settle(c);
}

void hr__conn_resume(hr__conn_t *c) {
  if (c->state == HR__C_CLOSED) return;
  if (!c->upgraded && output_low(c) && wire_of(c)->drains(c)) return;
  conn_process(c);
}

/* ---- the worker's resume list ------------------------------------------ */

static void on_resume_idle(uv_idle_t *idle) {
  hr__worker_t *w = idle->data;
  while (w->resume_head != NULL) {
    hr__conn_t *c = w->resume_head;
    w->resume_head = c->resume_next;
    c->on_resume = 0;
    hr__conn_resume(c);
  }
  uv_idle_stop(idle);
}

void hr__worker_schedule(hr__worker_t *w) {
  if (!uv_is_active((uv_handle_t *)&w->resume_idle))
    uv_idle_start(&w->resume_idle, on_resume_idle);
}

void hr__conn_kick(hr__conn_t *c) {
  hr__worker_t *w = c->w;
  if (c->on_resume || c->in_process || c->state == HR__C_CLOSED) return;
  c->on_resume = 1;
  c->resume_next = w->resume_head;
  w->resume_head = c;
  hr__worker_schedule(w);
}

void hr__conn_response_done(hr__conn_t *c) {
  hr__exchange_t *ex = c->ex;
  ex->handler_active = 0;
  ex->t_done = uv_hrtime();
  if (!c->in_process) hr__conn_kick(c);
}

void hr__conn_framing_lost(hr__conn_t *c) {
  hr__exchange_t *ex = c->ex;
  /* Complete first, so that closing reports no abort to the handler that
   * is calling us. */
  ex->res.state = HR__RES_DONE;
  ex->handler_active = 0;
  hr__conn_close(c);
}

/* ---- creating ------------------------------------------------------------ */

hr__conn_t *hr__conn_new(hr__worker_t *w, size_t tsize, int proxy,
                         hr__transport_init_fn init, void *arg) {
  /* The record, then the optional rooms (a PROXY header's slot, the peer
   * as text for the access log), then the transport. */
  size_t slot = proxy ? sizeof(hr__proxied_t *) : 0;
  size_t peer = w->server->opts.access_log != NULL ? HR__PEER_TEXT : 0;
  hr__conn_t *c = hr__mem_alloc(&w->mem, sizeof(*c) + slot + peer + tsize);
  if (c == NULL) return NULL;
  memset(c, 0, sizeof(*c) + slot + peer);
  c->proxy_slot = proxy != 0;
  c->t = (hr__transport_t *)((char *)(c + 1) + slot + peer);
  if (init(c->t, arg, &conn_events, c) != 0) {
    hr__mem_free(&w->mem, c);
    return NULL;
  }
  c->w = w;
  c->refs = 1; /* the transport, until its closed event */
  c->state = HR__C_OPEN;
  hr__tnode_init(&c->timer);
  if (peer != 0) hr__conn_peer_render(c);
  c->next = w->conns;
  if (w->conns != NULL) w->conns->prev = c;
  w->conns = c;
  w->nconns++;
  hr__stat_inc(&w->st_accepted);
  update_reading(c);
  update_timer(c);
  return c;
}

char *hr__conn_peer_text(hr__conn_t *c) {
  size_t slot = c->proxy_slot ? sizeof(hr__proxied_t *) : 0;
  return c->w->server->opts.access_log != NULL ? (char *)(c + 1) + slot : NULL;
}

int hr__conn_ex_peer(const hr__exchange_t *ex, struct sockaddr *addr, int *len) {
  return hr__conn_peer(ex->conn, addr, len);
}

hr__transport_t *hr__conn_ex_transport(const hr__exchange_t *ex) { return ex->conn->t; }

int hr__conn_ex_stepping(const hr__exchange_t *ex) { return ex->conn->in_process; }

hr__proxied_t **hr__conn_proxy_slot(hr__conn_t *c) {
  return c->proxy_slot ? (hr__proxied_t **)(void *)(c + 1) : NULL;
}

/* ---- connections without a socket ----------------------------------------- */

typedef struct vconn_arg_s {
  uv_loop_t *loop;
  hr__sink_cb sink;
  void *ctx;
} vconn_arg_t;

static int init_sink(hr__transport_t *t, void *arg,
                     const hr__transport_events_t *ev, void *owner) {
  vconn_arg_t *a = arg;
  hr__sink_init(t, a->loop, a->sink, a->ctx, ev, owner);
  return 0;
}

hr__conn_t *hr__vconn_new(hr__worker_t *w, hr__sink_cb sink, void *ctx) {
  vconn_arg_t a;
  a.loop = w->loop;
  a.sink = sink;
  a.ctx = ctx;
  return hr__conn_new(w, hr__sink_size(), 0, init_sink, &a);
}

hr__conn_t *hr__vconn_new_h2c(hr__worker_t *w, hr__sink_cb sink, void *ctx) {
  hr__conn_t *c = hr__vconn_new(w, sink, ctx);
  if (c != NULL) {
    c->proto_open = 1;
    c->h2c_ok = 1;
  }
  return c;
}

size_t hr__vconn_feed(hr__conn_t *c, const char *p, size_t n) {
  if (c->state == HR__C_CLOSED) return 0;
  return hr__sink_feed(c->t, p, n);
}

void hr__vconn_eof(hr__conn_t *c) {
  if (c->state == HR__C_CLOSED) return;
  hr__sink_eof(c->t);
}

int hr__vconn_closed(const hr__conn_t *c) { return c->state == HR__C_CLOSED; }

hr__conn_t *hr__vconn_new_tls(hr__worker_t *w, int fd, void *ssl) {
  if (hr__worker_tls_loop(w) != 0) return NULL;
  return hr__conn_from_socket(w, fd, ssl, NULL, 1);
}
