/* SPDX-License-Identifier: MIT */
/*
 * A WebSocket connection over an upgraded stream, with wslay's event API
 * doing the framing (RFC 6455 §5): the stream's bytes are fed to
 * wslay_event_recv through the recv callback; what wslay frames goes to
 * hr_stream_write through the send callback, and what the stream refuses
 * (HR_EAGAIN) stays in wslay's queue until the stream drains.  wslay
 * checks masking, opcodes, control frame sizes, UTF-8 of text and close
 * reasons, the message length limit, answers pings and close frames; this
 * file adds the timers, the backpressure and the connection's end.
 *
 * Backpressure both ways: the owner's sends are refused (HR_EAGAIN) while
 * more than the high-water mark is queued (wslay's queue plus the
 * stream's); and while wslay holds frames the stream refused, the peer's
 * bytes are not read (a peer that sends pings or messages to echo but
 * reads nothing fills its own TCP window, not the server's memory).
 */
#include <string.h>

#include "server/internal.h"
#include "util/utf8.h"
#include "websocket/ws.h"

static uint64_t now_of(const hr_websocket_t *ws) { return uv_now(ws->w->loop); }

void hr__ws_release(hr_websocket_t *ws) {
  if (atomic_fetch_sub_explicit(&ws->refs, 1, memory_order_acq_rel) == 1) {
    const hr_allocator_t *a = ws->a;
    a->free(a->ctx, ws->subprotocol);
    a->free(a->ctx, ws);
  }
}

/* ---- messages held while paused ---------------------------------------------- */

struct hr__ws_held_s {
  struct hr__ws_held_s *next;
  int type;
  size_t len;
  uint8_t data[];
};

static int hold_message(hr_websocket_t *ws, int type, const uint8_t *data, size_t len) {
  hr__ws_held_t *h = ws->a->malloc(ws->a->ctx, sizeof(*h) + len), **tail;
  if (h == NULL) return -1;
  h->next = NULL;
  h->type = type;
  h->len = len;
  if (len > 0) memcpy(h->data, data, len);
  for (tail = &ws->held_msgs; *tail != NULL; tail = &(*tail)->next) {
  }
  *tail = h;
  return 0;
}

static void free_held(hr_websocket_t *ws) {
  while (ws->held_msgs != NULL) {
    hr__ws_held_t *h = ws->held_msgs;
    ws->held_msgs = h->next;
    ws->a->free(ws->a->ctx, h);
  }
  ws->a->free(ws->a->ctx, ws->held);
  ws->held = NULL;
  ws->held_len = 0;
}

/* Fails the connection with 1011: out of memory. */
static void fail_nomem(hr_websocket_t *ws) {
  wslay_event_queue_close(ws->ctx, WSLAY_CODE_INTERNAL_SERVER_ERROR, NULL, 0);
  wslay_event_shutdown_read(ws->ctx);
}

/* ---- wslay's callbacks ------------------------------------------------------- */

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                       void *user) {
  hr_websocket_t *ws = user;
  size_t n = ws->in_len < len ? ws->in_len : len;
  (void)flags;
  if (n == 0 || ws->paused) { /* paused: the rest is held (feed) */
    wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    return -1;
  }
  memcpy(buf, ws->in, n);
  ws->in += n;
  ws->in_len -= n;
  return (ssize_t)n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
                       int flags, void *user) {
  hr_websocket_t *ws = user;
  int rc = hr_stream_write(ws->s, data, len);
  (void)flags;
  if (rc == 0) return (ssize_t)len;
  wslay_event_set_error(ctx, rc == HR_EAGAIN ? WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
  return -1;
}

static void on_message(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
                       void *user) {
  hr_websocket_t *ws = user;
  (void)ctx;
  if (m->opcode == WSLAY_TEXT_FRAME || m->opcode == WSLAY_BINARY_FRAME) {
    int type = m->opcode == WSLAY_TEXT_FRAME ? HR_WS_TEXT : HR_WS_BINARY;
    ws->last_msg = now_of(ws);
    if (ws->paused || ws->held_msgs != NULL) {
      /* Paused inside an earlier message of the same read: wslay had the
       * frame in its buffer already.  Kept for the resume. */
      if (hold_message(ws, type, m->msg, m->msg_length) != 0) fail_nomem(ws);
      return;
    }
    ws->cb.message(ws, type, m->msg, m->msg_length, ws->udata);
  } else if (m->opcode == WSLAY_CONNECTION_CLOSE) {
    /* wslay queued the answer; the reason is kept for the closed call. */
    size_t n = m->msg_length > 2 ? m->msg_length - 2 : 0;
    if (n > sizeof ws->reason) n = sizeof ws->reason;
    if (n > 0) memcpy(ws->reason, m->msg + 2, n);
    ws->reason_len = (uint8_t)n;
    ws->close_queued = 1;
  }
}

/* ---- moving bytes ------------------------------------------------------------ */

static void arm(hr_websocket_t *ws);

/* The connection's end, once the close frames are settled: the server
 * closes the TCP connection first (RFC 6455 §7.1.1). */
static void finish(hr_websocket_t *ws) {
  if (ws->fin_asked) return;
  ws->fin_asked = 1;
  hr_stream_close(ws->s);
}

/* Hands wslay's queue to the stream, then ends the connection when the
 * close frames are settled: ours went out, and the peer's came (or reading
 * stopped: wslay failed the connection). */
static void flush(hr_websocket_t *ws) {
  if (ws->ctx == NULL || ws->fin_asked) return;
  if (wslay_event_send(ws->ctx) != 0) return; /* a stream error: closed follows */
  if (!wslay_event_get_close_sent(ws->ctx)) return;
  if (wslay_event_get_close_received(ws->ctx) || !wslay_event_get_read_enabled(ws->ctx)) {
    finish(ws);
    return;
  }
  if (ws->close_sent_at == 0) { /* waiting for the peer's close */
    ws->close_sent_at = now_of(ws);
    arm(ws);
  }
}

/* Whether wslay holds frames the stream refused. */
static int backlogged(const hr_websocket_t *ws) {
  return wslay_event_want_write(ws->ctx) && wslay_event_get_write_enabled(ws->ctx);
}

/* Whether the stream should be read: not while the owner paused, nor while
 * wslay holds frames the stream refused, nor while bytes wait here. */
static void update_reading(hr_websocket_t *ws) {
  int want = !ws->paused && !ws->read_paused && ws->held_len == 0;
  if (ws->s == NULL || ws->fin_asked) return;
  if (want == ws->stream_paused) {
    ws->stream_paused = !want;
    hr_stream_pause(ws->s, !want);
  }
}

/* Keeps the bytes wslay did not take (the owner paused). */
static int hold_rest(hr_websocket_t *ws) {
  uint8_t *n;
  if (ws->in_len == 0) return 0;
  n = ws->a->realloc(ws->a->ctx, ws->held, ws->held_len + ws->in_len);
  if (n == NULL) return -1;
  memcpy(n + ws->held_len, ws->in, ws->in_len);
  ws->held = n;
  ws->held_len += ws->in_len;
  return 0;
}

/* Gives the peer's bytes to wslay, which calls on_message per message. */
static void feed(hr_websocket_t *ws, const uint8_t *data, size_t len) {
  int rc;
  ws->in = data;
  ws->in_len = len;
  ws->in_recv = 1;
  rc = wslay_event_recv(ws->ctx);
  ws->in_recv = 0;
  if (rc == WSLAY_ERR_NOMEM || (ws->paused && hold_rest(ws) != 0)) fail_nomem(ws);
  ws->in = NULL;
  ws->in_len = 0;
  if (wslay_event_get_close_received(ws->ctx) || !wslay_event_get_read_enabled(ws->ctx))
    ws->close_queued = 1;
  flush(ws);
  if (ws->s != NULL && !ws->fin_asked && backlogged(ws)) ws->read_paused = 1;
  update_reading(ws);
}

static void on_read(hr_stream_t *s, const char *data, size_t len, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  ws->last_rx = now_of(ws);
  ws->ping_out = 0;
  if (ws->ctx == NULL || ws->fin_asked || !wslay_event_get_read_enabled(ws->ctx)) return;
  if (ws->paused || ws->held_len > 0) { /* read before the pause took hold */
    ws->in = (const uint8_t *)data;
    ws->in_len = len;
    if (hold_rest(ws) != 0) {
      fail_nomem(ws);
      flush(ws);
    }
    ws->in = NULL;
    ws->in_len = 0;
    update_reading(ws);
    return;
  }
  feed(ws, (const uint8_t *)data, len);
}

static void on_drain(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  flush(ws);
  if (ws->s == NULL || ws->ctx == NULL || backlogged(ws)) return;
  if (ws->read_paused) {
    ws->read_paused = 0;
    update_reading(ws);
  }
  if (ws->want_drain && !ws->close_queued) {
    ws->want_drain = 0;
    if (ws->cb.drain != NULL) ws->cb.drain(ws, ws->udata);
  }
}

static void on_closed(hr_stream_t *s, int status, void *udata) {
  hr_websocket_t *ws = udata;
  hr_websocket_close_t how;
  (void)s;
  (void)status;
  memset(&how, 0, sizeof how);
  how.code = WSLAY_CODE_ABNORMAL_CLOSURE;
  if (ws->ctx != NULL) {
    if (wslay_event_get_close_received(ws->ctx)) {
      how.code = wslay_event_get_status_code_received(ws->ctx);
      how.reason = ws->reason;
      how.reason_len = ws->reason_len;
    }
    if (wslay_event_get_close_sent(ws->ctx)) how.sent_code = wslay_event_get_status_code_sent(ws->ctx);
    wslay_event_context_free(ws->ctx);
    ws->ctx = NULL;
  }
  free_held(ws);
  ws->s = NULL;
  ws->cb.closed(ws, &how, ws->udata);
  hr__ws_release(ws); /* the connection's reference */
}

static void on_shutdown(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  if (ws->cb.shutdown != NULL)
    ws->cb.shutdown(ws, ws->udata);
  else
    hr_websocket_close(ws, WSLAY_CODE_GOING_AWAY, "server shutting down", 20);
}

/* ---- timers ------------------------------------------------------------------ */

static void due_min(uint64_t *due, uint64_t at) {
  if (*due == 0 || at < *due) *due = at;
}

/* Sets the stream's deadline to the earliest of the connection's. */
static void arm(hr_websocket_t *ws) {
  uint64_t due = 0, now;
  if (ws->s == NULL || ws->fin_asked) return;
  if (ws->close_sent_at != 0 && ws->close_timeout_ms != 0)
    due_min(&due, ws->close_sent_at + ws->close_timeout_ms);
  if (ws->ping_out && ws->ping_timeout_ms != 0)
    due_min(&due, ws->ping_sent + ws->ping_timeout_ms);
  else if (!ws->ping_out && ws->ping_interval_ms != 0 && !ws->close_queued)
    due_min(&due, ws->last_rx + ws->ping_interval_ms);
  if (ws->idle_timeout_ms != 0 && !ws->close_queued)
    due_min(&due, ws->last_msg + ws->idle_timeout_ms);
  now = now_of(ws);
  hr_stream_set_timeout(ws->s, due == 0 ? 0 : due > now ? due - now : 1);
}

static void on_timeout(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  uint64_t now = now_of(ws);
  (void)s;
  if (ws->ctx == NULL || ws->fin_asked) return;
  if ((ws->close_sent_at != 0 && ws->close_timeout_ms != 0 &&
       now >= ws->close_sent_at + ws->close_timeout_ms) ||
      (ws->ping_out && ws->ping_timeout_ms != 0 && now >= ws->ping_sent + ws->ping_timeout_ms)) {
    /* The peer's close never came, or it answers nothing: drop it. */
    finish(ws);
    return;
  }
  if (ws->idle_timeout_ms != 0 && !ws->close_queued && now >= ws->last_msg + ws->idle_timeout_ms) {
    hr_websocket_close(ws, WSLAY_CODE_GOING_AWAY, "idle", 4);
    return;
  }
  if (!ws->ping_out && ws->ping_interval_ms != 0 && !ws->close_queued &&
      now >= ws->last_rx + ws->ping_interval_ms) {
    struct wslay_event_msg ping = {WSLAY_PING, NULL, 0};
    if (wslay_event_queue_msg(ws->ctx, &ping) == 0) {
      ws->ping_out = 1;
      ws->ping_sent = now;
      flush(ws);
    }
  }
  arm(ws);
}

const hr_stream_callbacks_t hr__ws_stream_callbacks = {
    .read = on_read,
    .closed = on_closed,
    .drain = on_drain,
    .shutdown = on_shutdown,
    .timeout = on_timeout,
};

int hr__ws_session_init(hr_websocket_t *ws, const hr_websocket_options_t *o) {
  static const struct wslay_event_callbacks cbs = {
      on_recv, on_send, NULL, NULL, NULL, NULL, on_message,
  };
  if (wslay_event_context_server_init(&ws->ctx, &cbs, ws) != 0) {
    ws->ctx = NULL;
    return HR_ENOMEM;
  }
  wslay_event_config_set_max_recv_msg_length(ws->ctx, o->max_message_bytes);
  ws->ping_interval_ms = o->ping_interval_ms;
  ws->ping_timeout_ms = o->ping_timeout_ms;
  ws->idle_timeout_ms = o->idle_timeout_ms;
  ws->close_timeout_ms = o->close_timeout_ms;
  return 0;
}

void hr__ws_session_start(hr_websocket_t *ws) {
  ws->last_rx = ws->last_msg = now_of(ws);
  arm(ws);
}

void hr__ws_session_free(hr_websocket_t *ws) {
  wslay_event_context_free(ws->ctx);
  ws->ctx = NULL;
  hr__ws_release(ws);
}

/* ---- the owner's calls ------------------------------------------------------- */

static int check(const hr_websocket_t *ws) {
  uv_thread_t self;
  if (ws == NULL) return HR_EINVAL;
  self = uv_thread_self();
  if (!uv_thread_equal(&self, &ws->w->loop_thread)) return HR_ETHREAD;
  return ws->s == NULL || ws->ctx == NULL || ws->fin_asked ? HR_ECLOSED : 0;
}

int hr_websocket_send(hr_websocket_t *ws, int type, const void *data, size_t len) {
  struct wslay_event_msg m;
  int err = check(ws), rc;
  if (err != 0) return err;
  if (type != HR_WS_TEXT && type != HR_WS_BINARY) return HR_EINVAL;
  if (data == NULL && len > 0) return HR_EINVAL;
  if (type == HR_WS_TEXT && !hr__utf8_valid(data, len)) return HR_EINVAL;
  if (ws->close_queued || wslay_event_get_close_sent(ws->ctx)) return HR_ESTATE;
  if (wslay_event_get_queued_msg_length(ws->ctx) + hr__stream_queued(ws->s) > ws->high_water) {
    ws->want_drain = 1;
    hr__stream_want_drain(ws->s);
    return HR_EAGAIN;
  }
  m.opcode = type == HR_WS_TEXT ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME;
  m.msg = data;
  m.msg_length = len;
  rc = wslay_event_queue_msg(ws->ctx, &m);
  if (rc == WSLAY_ERR_NOMEM) {
    hr_stream_close(ws->s); /* nothing sensible left to say */
    ws->fin_asked = 1;
    return HR_ENOMEM;
  }
  if (rc != 0) return HR_ESTATE;
  ws->last_msg = now_of(ws);
  if (!ws->in_recv) flush(ws); /* inside a message callback: after it */
  return 0;
}

static int code_ok(uint16_t code) {
  /* RFC 6455 §7.4: what an endpoint may send. */
  if (code >= 3000 && code <= 4999) return 1;
  return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
}

int hr_websocket_close(hr_websocket_t *ws, uint16_t code, const char *reason,
                       size_t reason_len) {
  int err = check(ws), rc;
  if (err != 0) return err;
  if (reason_len > 123 || (reason == NULL && reason_len > 0) ||
      (code == 0 && reason_len > 0) || (code != 0 && !code_ok(code)) ||
      !hr__utf8_valid(reason, reason_len))
    return HR_EINVAL;
  if (ws->close_queued || wslay_event_get_close_sent(ws->ctx)) return HR_ESTATE;
  rc = wslay_event_queue_close(ws->ctx, code, (const uint8_t *)reason, reason_len);
  if (rc == WSLAY_ERR_NOMEM) return HR_ENOMEM;
  if (rc != 0) return HR_ESTATE;
  ws->close_queued = 1;
  if (!ws->in_recv) flush(ws);
  return 0;
}

/* A later turn after hr_websocket_pause(ws, 0): the held messages, then
 * the held bytes, while the owner does not pause again. */
static void run_resume(void *target, hr__fn_t fn, void *udata) {
  hr_websocket_t *ws = target;
  (void)fn;
  (void)udata;
  ws->resume_posted = 0;
  while (ws->ctx != NULL && !ws->fin_asked && !ws->paused && ws->held_msgs != NULL) {
    hr__ws_held_t *h = ws->held_msgs;
    ws->held_msgs = h->next;
    ws->cb.message(ws, h->type, h->data, h->len, ws->udata);
    ws->a->free(ws->a->ctx, h);
  }
  if (ws->ctx != NULL && !ws->fin_asked && !ws->paused && ws->held_msgs == NULL) {
    uint8_t *bytes = ws->held;
    size_t len = ws->held_len;
    ws->held = NULL;
    ws->held_len = 0;
    if (len > 0) feed(ws, bytes, len);
    ws->a->free(ws->a->ctx, bytes);
    update_reading(ws);
    flush(ws);
  }
  hr__ws_release(ws);
}

int hr_websocket_pause(hr_websocket_t *ws, int paused) {
  int err = check(ws);
  if (err != 0) return err;
  ws->paused = paused != 0;
  if (ws->paused) {
    if (!ws->in_recv) update_reading(ws); /* inside: feed does it */
    return 0;
  }
  if (ws->held_msgs == NULL && ws->held_len == 0) {
    if (!ws->in_recv) update_reading(ws);
    return 0;
  }
  if (ws->resume_posted) return 0;
  /* What is held is delivered on a later turn, never inside this call. */
  atomic_fetch_add_explicit(&ws->refs, 1, memory_order_relaxed);
  if (hr__worker_post(ws->w, run_resume, ws, NULL, NULL) != 0) {
    hr__ws_release(ws);
    return HR_ENOMEM;
  }
  ws->resume_posted = 1;
  return 0;
}

static void run_post(void *target, hr__fn_t fn, void *udata) {
  ((hr_websocket_post_cb)fn)(target, udata);
  hr__ws_release(target);
}

int hr_websocket_post(hr_websocket_t *ws, hr_websocket_post_cb cb, void *udata) {
  int err;
  if (ws == NULL || cb == NULL) return HR_EINVAL;
  /* Only ws->w, set before `ws` was handed out: the loop may be changing
   * the rest meanwhile. */
  atomic_fetch_add_explicit(&ws->refs, 1, memory_order_relaxed);
  err = hr__worker_post(ws->w, run_post, ws, (hr__fn_t)cb, udata);
  if (err != 0) hr__ws_release(ws);
  return err;
}

const char *hr_websocket_subprotocol(const hr_websocket_t *ws) {
  return ws != NULL ? ws->subprotocol : NULL;
}

void *hr_websocket_udata(const hr_websocket_t *ws) { return ws != NULL ? ws->udata : NULL; }

uv_loop_t *hr_websocket_loop(const hr_websocket_t *ws) {
  return ws != NULL ? ws->w->loop : NULL;
}
