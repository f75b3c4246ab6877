/* SPDX-License-Identifier: MIT */
/*
 * A WebSocket connection over its upgraded stream: the stream's callbacks
 * (bytes to input.c, drain, the end, shutdown, the deadline), sending
 * (wslay_frame_send writes each frame's header and payload straight into
 * the connection's output queue), the close handshake (RFC 6455 §7), the
 * timers, pause and posts.
 *
 * Backpressure both ways: the owner's sends are refused (HR_EAGAIN) while
 * more than the server's high-water mark is queued, so what waits is the
 * mark plus one message; and while that much is queued the peer's bytes
 * are not read, so a peer that sends pings (answered with pongs) but reads
 * nothing fills its own TCP window, not the server's memory.
 */
#include <string.h>

#include "util/utf8.h"
#include "websocket/ws.h"

uint64_t hr__ws_now(const hr_websocket_t *ws) { return uv_now(hr_stream_loop(ws->stream)); }

void hr__ws_release(hr_websocket_t *ws) {
  /* acq_rel: every holder's use of *ws happens before the free. */
  if (atomic_fetch_sub_explicit(&ws->refs, 1, memory_order_acq_rel) == 1) {
    const hr_allocator_t *a = ws->a;
    hr__ws_pmd_free(ws);
    a->free(a->ctx, ws->subprotocol);
    a->free(a->ctx, ws);
  }
}

int hr__ws_close_code_ok(unsigned code, int received) {
  /* §7.4.1-2: what an endpoint may put in a close frame; 1015 and 1005,
   * 1006 never go on the wire, 1004 is reserved, 1012-1014 are IANA's. */
  (void)received;
  if (code >= 3000 && code <= 4999) return 1;
  return code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
}

/* ---- writing --------------------------------------------------------------- */

static ssize_t on_send(const uint8_t *data, size_t len, int flags, void *user) {
  hr_websocket_t *ws = user;
  (void)flags;
  if (hr_stream_write_past_mark(ws->s, data, len) != 0) return -1;
  return (ssize_t)len;
}

int hr__ws_send_frame(hr_websocket_t *ws, int opcode, const void *data, size_t len) {
  return hr__ws_send_frame_rsv(ws, opcode, 0, data, len);
}

int hr__ws_send_frame_rsv(hr_websocket_t *ws, int opcode, uint8_t rsv, const void *data,
                          size_t len) {
  struct wslay_frame_iocb io;
  ssize_t r;
  if (ws->broken) return HR_ECLOSED;
  if (hr__ws_frames(ws) != 0) {
    ws->broken = 1;
    return HR_ENOMEM;
  }
  memset(&io, 0, sizeof io);
  io.fin = 1;
  io.rsv = rsv;
  io.opcode = (uint8_t)opcode;
  io.payload_length = len;
  io.data = data;
  io.data_length = len;
  r = wslay_frame_send(ws->fc, &io);
  if (r < 0 || (size_t)r != len) {
    /* Out of memory in the output queue: the stream is closed on its
     * next turn, and wslay's frame state is not to be trusted again. */
    ws->broken = 1;
    return HR_ENOMEM;
  }
  return 0;
}

static void arm(hr_websocket_t *ws);
static int schedule_resume(hr_websocket_t *ws);
static void update_reading(hr_websocket_t *ws);

void hr__ws_send_close(hr_websocket_t *ws, uint16_t code, const void *reason, size_t len) {
  uint8_t p[125];
  if (ws->close_tx) return;
  ws->close_tx = 1;
  ws->code_tx = code != 0 ? code : HR__WS_NO_STATUS;
  if (code != 0) {
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    if (len > 0) memcpy(p + 2, reason, len);
  }
  hr__ws_send_frame(ws, WSLAY_CONNECTION_CLOSE, p, code != 0 ? len + 2 : 0);
  ws->close_sent_at = hr__ws_now(ws);
  arm(ws);
  /* Now the peer's close is read whatever held reading back (a pause, the
   * queue over the mark): what is held first, on a later turn. */
  if (!ws->in_pump) {
    if (ws->held_len > 0) schedule_resume(ws);
    update_reading(ws);
  }
}

/* The server closes the TCP connection first (§7.1.1): what is queued
 * goes out, then FIN. */
static void finish(hr_websocket_t *ws) {
  if (ws->fin_asked || ws->s == NULL) return;
  ws->fin_asked = 1;
  hr_stream_close(ws->s);
  /* What is queued still has to go: a peer that reads nothing is dropped
   * close_timeout_ms from now rather than left to the write timeout. */
  ws->fin_at = hr__ws_now(ws);
  if (ws->close_timeout_ms != 0) hr_stream_set_timeout(ws->s, ws->close_timeout_ms);
}

void hr__ws_fail(hr_websocket_t *ws, uint16_t code) {
  hr__ws_send_close(ws, code, NULL, 0);
  ws->read_done = 1;
  finish(ws);
}

void hr__ws_settle(hr_websocket_t *ws) {
  if (ws->close_tx && (ws->close_rx || ws->read_done)) finish(ws);
}

/* ---- reading --------------------------------------------------------------- */

static int over_mark(const hr_websocket_t *ws) {
  return ws->s != NULL && hr_stream_queued(ws->s) > hr_stream_high_water(ws->s);
}

/* The stream is read while the owner does not pause, the output is under
 * the mark, and nothing is held. */
static void update_reading(hr_websocket_t *ws) {
  int want;
  if (ws->s == NULL || ws->fin_asked) return;
  /* Once the server's close is out nothing but that close is queued, and
   * the peer's close is read whatever the pause or the output. */
  want = ws->held_len == 0 && (ws->close_tx || (!ws->paused && !over_mark(ws)));
  if (want == ws->stream_paused) {
    ws->stream_paused = !want;
    hr_stream_pause(ws->s, !want);
  }
  /* Whatever paused the stream before, the queue being over the mark now
   * needs the drain to call this again (a resume may have sent past the
   * mark without any send being refused). */
  if (!want && !ws->close_tx && over_mark(ws)) hr_stream_want_drain(ws->s);
}

static void after_input(hr_websocket_t *ws) {
  if (ws->broken) {
    finish(ws);
    return;
  }
  hr__ws_settle(ws);
  update_reading(ws);
}

static void on_read(hr_stream_t *s, const char *data, size_t len, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  ws->last_rx = hr__ws_now(ws);
  ws->ping_out = 0;
  if (ws->over || ws->read_done || ws->fin_asked) return; /* dropped */
  if (!hr__ws_reading(ws) || ws->held_len > 0) { /* read before the pause took hold */
    hr__ws_input_hold(ws, (const uint8_t *)data, len);
    update_reading(ws);
    return;
  }
  hr__ws_input(ws, (const uint8_t *)data, len);
  after_input(ws);
}

static void on_drain(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  if (ws->s == NULL || ws->fin_asked) return;
  update_reading(ws);
  if (ws->want_drain && !ws->close_tx && !over_mark(ws)) {
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
  how.code = ws->close_rx ? ws->code_rx : HR__WS_ABNORMAL;
  if (ws->close_rx) {
    how.reason = (const char *)ws->ctrl + 2;
    how.reason_len = ws->reason_len;
  }
  how.sent_code = ws->close_tx ? ws->code_tx : 0;
  if (ws->fc != NULL) wslay_frame_context_free(ws->fc);
  ws->fc = NULL;
  ws->over = 1;
  hr__ws_input_free(ws);
  hr__ws_pmd_end(ws);
  ws->s = NULL;
  ws->cb.closed(ws, &how, ws->udata);
  hr__ws_release(ws); /* the connection's reference */
}

static void on_shutdown(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  if (ws->cb.shutdown != NULL)
    ws->cb.shutdown(ws, ws->udata);
  else if (!ws->close_tx)
    hr__ws_send_close(ws, HR__WS_GOING_AWAY, "server shutting down", 20);
}

/* ---- timers ---------------------------------------------------------------- */

static void due_min(uint64_t *due, uint64_t at) {
  if (*due == 0 || at < *due) *due = at;
}

/* Sets the stream's deadline to the earliest of the connection's. */
static void arm(hr_websocket_t *ws) {
  uint64_t due = 0, now;
  if (ws->s == NULL || ws->fin_asked) return;
  if (ws->close_tx && ws->close_timeout_ms != 0)
    due_min(&due, ws->close_sent_at + ws->close_timeout_ms);
  if (!ws->close_tx) {
    if (ws->ping_out && ws->ping_timeout_ms != 0)
      due_min(&due, ws->ping_sent + ws->ping_timeout_ms);
    else if (!ws->ping_out && ws->ping_interval_ms != 0)
      due_min(&due, ws->last_rx + ws->ping_interval_ms);
    if (ws->idle_timeout_ms != 0) due_min(&due, ws->last_msg + ws->idle_timeout_ms);
  }
  now = hr__ws_now(ws);
  hr_stream_set_timeout(ws->s, due == 0 ? 0 : due > now ? due - now : 1);
}

/* Frees wslay's context while nothing of a frame is in it: no frame is
 * half read (every byte given to it was part of a whole header or
 * payload) and sending leaves it between frames after every call. */
static void rest(hr_websocket_t *ws) {
  if (ws->fc == NULL || ws->in_frame || ws->given != ws->taken || ws->in_pump) return;
  wslay_frame_context_free(ws->fc);
  ws->fc = NULL;
}

static void on_timeout(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  uint64_t now = hr__ws_now(ws);
  (void)s;
  if (ws->over) return;
  if (ws->fin_asked) { /* the FIN still waits behind output nobody reads */
    if (ws->close_timeout_ms != 0 && now >= ws->fin_at + ws->close_timeout_ms)
      hr_stream_abort(ws->s);
    return;
  }
  rest(ws);
  if (ws->close_tx) {
    /* The peer's close frame never came: FIN when everything went out,
     * else the peer reads nothing either and the connection is dropped
     * (not left to the write timeout). */
    if (ws->close_timeout_ms != 0 && now >= ws->close_sent_at + ws->close_timeout_ms) {
      if (hr_stream_queued(ws->s) > 0) {
        ws->fin_asked = 1;
        hr_stream_abort(ws->s);
      } else {
        finish(ws);
      }
      return;
    }
  } else if (ws->ping_out && ws->ping_timeout_ms != 0 &&
             now >= ws->ping_sent + ws->ping_timeout_ms) {
    /* It answers nothing: dropped; closed says 1006. */
    ws->fin_asked = 1;
    hr_stream_abort(ws->s);
    return;
  } else if (ws->idle_timeout_ms != 0 && now >= ws->last_msg + ws->idle_timeout_ms) {
    hr__ws_send_close(ws, HR__WS_GOING_AWAY, "idle", 4);
    return;
  } else if (!ws->ping_out && ws->ping_interval_ms != 0 &&
             now >= ws->last_rx + ws->ping_interval_ms) {
    if (hr__ws_send_frame(ws, WSLAY_PING, NULL, 0) != 0) {
      finish(ws);
      return;
    }
    ws->ping_out = 1;
    ws->ping_sent = now;
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

int hr__ws_frames(hr_websocket_t *ws) {
  static const struct wslay_frame_callbacks cbs = {on_send, hr__ws_recv_cb, NULL};
  if (ws->fc != NULL) return 0;
  if (wslay_frame_context_init(&ws->fc, &cbs, ws) != 0) {
    ws->fc = NULL;
    return -1;
  }
  ws->given = ws->taken = 0;
  return 0;
}

int hr__ws_session_init(hr_websocket_t *ws, const hr_websocket_options_t *o) {
  ws->max_message = o->max_message_bytes;
  ws->ping_interval_ms = o->ping_interval_ms;
  ws->ping_timeout_ms = o->ping_timeout_ms;
  ws->idle_timeout_ms = o->idle_timeout_ms;
  ws->close_timeout_ms = o->close_timeout_ms;
  return 0;
}

void hr__ws_session_start(hr_websocket_t *ws) {
  ws->last_rx = ws->last_msg = hr__ws_now(ws);
  arm(ws);
}

void hr__ws_session_free(hr_websocket_t *ws) {
  if (ws->fc != NULL) wslay_frame_context_free(ws->fc);
  ws->fc = NULL;
  hr__ws_release(ws);
}

/* ---- the owner's calls ------------------------------------------------------- */

static int check(const hr_websocket_t *ws) {
  int err;
  if (ws == NULL) return HR_EINVAL;
  if ((err = hr_stream_check_thread(ws->stream)) != 0) return err;
  return ws->s == NULL || ws->over || ws->fin_asked || ws->broken ? HR_ECLOSED : 0;
}

/* Sends a message, compressed when permessage-deflate was agreed and it
 * pays (deflate.c decides).  0 or HR_ENOMEM (the connection fails). */
static int send_message(hr_websocket_t *ws, int type, int raw, const void *data, size_t len) {
  int op = type == HR_WS_TEXT ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME, rc;
  const uint8_t *z;
  size_t zlen;
  if (ws->pmd == NULL || raw) return hr__ws_send_frame(ws, op, data, len);
  rc = hr__ws_pmd_compress(ws, data, len, &z, &zlen);
  if (rc == 1) return hr__ws_send_frame(ws, op, data, len);
  if (rc != 0) { /* a compressor that keeps its window is not to be trusted again */
    ws->broken = 1;
    hr_stream_abort(ws->s); /* closed follows, on a later turn */
    return HR_ENOMEM;
  }
  rc = hr__ws_send_frame_rsv(ws, op, WSLAY_RSV1_BIT, z, zlen);
  hr__ws_pmd_sent(ws);
  return rc;
}

int hr_websocket_send(hr_websocket_t *ws, int type, const void *data, size_t len) {
  int err = check(ws), raw = (type & HR_WS_UNCOMPRESSED) != 0;
  if (err != 0) return err;
  type &= ~HR_WS_UNCOMPRESSED;
  if ((type != HR_WS_TEXT && type != HR_WS_BINARY) || (data == NULL && len > 0))
    return HR_EINVAL;
  if (type == HR_WS_TEXT && !hr__utf8_valid(data, len)) return HR_EINVAL;
  if (ws->close_tx) return HR_ESTATE; /* §5.5.1: no data after a close frame */
  if (over_mark(ws)) {
    ws->want_drain = 1;
    hr_stream_want_drain(ws->s);
    return HR_EAGAIN;
  }
  if (send_message(ws, type, raw, data, len) != 0) return HR_ENOMEM;
  ws->last_msg = hr__ws_now(ws);
  return 0;
}

int hr_websocket_close(hr_websocket_t *ws, uint16_t code, const char *reason,
                       size_t reason_len) {
  int err = check(ws);
  if (err != 0) return err;
  if (reason_len > 123 || (reason == NULL && reason_len > 0) ||
      (code == 0 && reason_len > 0) || (code != 0 && !hr__ws_close_code_ok(code, 0)) ||
      !hr__utf8_valid(reason, reason_len))
    return HR_EINVAL;
  if (ws->close_tx) return HR_ESTATE;
  hr__ws_send_close(ws, code, reason, reason_len);
  if (ws->broken) return HR_ENOMEM;
  if (!ws->in_pump) hr__ws_settle(ws); /* inside: after the read */
  return 0;
}

/* A later turn after hr_websocket_pause(ws, 0), or after the server's
 * close while paused: what was held is read, while frames are read. */
static void run_resume(hr_stream_t *s, void *udata) {
  hr_websocket_t *ws = udata;
  (void)s;
  ws->resume_posted = 0;
  if (ws->s != NULL && !ws->over && !ws->fin_asked && hr__ws_reading(ws) && !ws->read_done) {
    hr__ws_input(ws, NULL, 0);
    after_input(ws);
  }
  hr__ws_release(ws);
}

/* Reads what is held on a later turn, never inside the owner's call. */
static int schedule_resume(hr_websocket_t *ws) {
  if (ws->resume_posted) return 0;
  atomic_fetch_add_explicit(&ws->refs, 1, memory_order_relaxed);
  if (hr_stream_post(ws->stream, run_resume, ws) != 0) {
    hr__ws_release(ws);
    return HR_ENOMEM;
  }
  ws->resume_posted = 1;
  return 0;
}

int hr_websocket_pause(hr_websocket_t *ws, int paused) {
  int err = check(ws);
  if (err != 0) return err;
  ws->paused = paused != 0;
  if (!ws->paused && (err = schedule_resume(ws)) != 0) return err;
  if (!ws->in_pump) update_reading(ws); /* inside: after the read */
  return 0;
}

static void run_post(hr_stream_t *s, hr_stream_fn fn, void *udata) {
  hr_websocket_t *ws = hr_stream_udata(s);
  ((hr_websocket_post_cb)fn)(ws, udata);
  hr__ws_release(ws);
}

int hr_websocket_post(hr_websocket_t *ws, hr_websocket_post_cb cb, void *udata) {
  int err;
  if (ws == NULL || cb == NULL) return HR_EINVAL;
  /* Only ws->stream, set before `ws` was handed out: the loop may be
   * changing the rest meanwhile. */
  atomic_fetch_add_explicit(&ws->refs, 1, memory_order_relaxed);
  err = hr_stream_post_fn(ws->stream, run_post, (hr_stream_fn)cb, udata);
  if (err != 0) hr__ws_release(ws);
  return err;
}

const char *hr_websocket_subprotocol(const hr_websocket_t *ws) {
  return ws != NULL ? ws->subprotocol : NULL;
}

int hr_websocket_deflated(const hr_websocket_t *ws) { return ws != NULL && ws->pmd != NULL; }

void *hr_websocket_udata(const hr_websocket_t *ws) { return ws != NULL ? ws->udata : NULL; }

uv_loop_t *hr_websocket_loop(const hr_websocket_t *ws) {
  return ws != NULL ? hr_stream_loop(ws->stream) : NULL;
}
