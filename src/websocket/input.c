/* SPDX-License-Identifier: MIT */
/*
 * Reading a WebSocket connection: wslay_frame_recv takes the peer's bytes
 * through the recv callback and hands back each frame's payload in chunks,
 * unmasked; this file checks each frame against RFC 6455 and builds
 * messages:
 *   - §5.2: no RSV bit, except RSV1 on a message's first frame when
 *     permessage-deflate was negotiated (RFC 7692 §6.1), a known opcode, and
 *     a masked frame (§5.1: a client masks every frame); wslay itself
 *     refuses a fragmented or oversized control frame and a length not in
 *     its shortest form.  All fail the connection with 1002.
 *   - §5.4: a continuation only inside a fragmented message, a new text or
 *     binary frame only outside one (1002); control frames may come
 *     between fragments.
 *   - The message limit counts declared lengths, before any byte of the
 *     payload is stored: 1009, as soon as a frame's length is in, without
 *     waiting for its mask key or payload (header_refusal).
 *   - A compressed message is inflated when whole (deflate.c): at most
 *     max_message bytes (1009), valid DEFLATE (1007).
 *   - §8.1: a text message must be UTF-8, checked when it is whole (1007).
 *   - §5.5: a ping is answered with a pong of its payload; a pong proves
 *     the peer alive; a close frame is checked (§7.4: its code, its reason
 *     in UTF-8), answered with the same code and reason, and ends reading.
 * The loop stops when the owner pauses: what wslay already buffered stays
 * in its frame context, what the read gave beyond it is held here, and
 * both are read on the resume.
 */
#include <string.h>

#include "util/utf8.h"
#include "websocket/ws.h"

void hr__ws_input_free(hr_websocket_t *ws) {
  ws->a->free(ws->a->ctx, ws->msg);
  ws->msg = NULL;
  ws->msg_len = ws->msg_cap = 0;
  ws->a->free(ws->a->ctx, ws->held);
  ws->held = NULL;
  ws->held_len = 0;
}

/* The most bytes a message may take on the wire: max_message, and for a
 * compressed one room besides for data that did not shrink (a deflater
 * with small buffers writes short blocks: zlib at memLevel 1 adds 4% to
 * random bytes); the inflated size is checked exactly. */
static uint64_t wire_limit(const hr_websocket_t *ws, int deflated) {
  uint64_t slack = (ws->max_message >> 4) + 1024;
  if (!deflated) return ws->max_message;
  return ws->max_message > UINT64_MAX - slack ? UINT64_MAX : ws->max_message + slack;
}

/* Room for `more` bytes of message; the caller checked the limit. */
static int msg_reserve(hr_websocket_t *ws, size_t more) {
  size_t need = ws->msg_len + more, cap;
  uint64_t limit = wire_limit(ws, ws->msg_deflated);
  uint8_t *n;
  if (need <= ws->msg_cap) return 0;
  cap = ws->msg_cap ? ws->msg_cap : 256;
  while (cap < need) cap *= 2;
  if (cap > limit) cap = (size_t)limit;
  n = ws->a->realloc(ws->a->ctx, ws->msg, cap);
  if (n == NULL) return -1;
  ws->msg = n;
  ws->msg_cap = cap;
  return 0;
}

/* After a message: a large buffer is not kept for an idle connection. */
static void msg_reset(hr_websocket_t *ws) {
  ws->msg_type = 0;
  ws->msg_deflated = 0;
  ws->msg_len = 0;
  if (ws->msg_cap > 4096) {
    ws->a->free(ws->a->ctx, ws->msg);
    ws->msg = NULL;
    ws->msg_cap = 0;
  }
}

/* What a frame with this header is refused with: a close code, or 0.
 * Changes nothing (frame_start, header_refusal). */
static int frame_check(const hr_websocket_t *ws, int op, int rsv, int mask, uint64_t len) {
  int deflated = ws->msg_deflated;
  if (!mask) return HR__WS_PROTOCOL;
  if (op >= 8)
    return rsv == 0 && (op == WSLAY_CONNECTION_CLOSE || op == WSLAY_PING || op == WSLAY_PONG)
               ? 0
               : HR__WS_PROTOCOL;
  if (op == WSLAY_CONTINUATION_FRAME) {
    if (ws->msg_type == 0 || rsv != 0) return HR__WS_PROTOCOL;
  } else if (op == WSLAY_TEXT_FRAME || op == WSLAY_BINARY_FRAME) {
    /* RFC 7692 §6.1: RSV1 on the first frame marks a compressed message. */
    if (ws->msg_type != 0 || (rsv != 0 && (rsv != WSLAY_RSV1_BIT || ws->pmd == NULL)))
      return HR__WS_PROTOCOL;
    deflated = rsv != 0;
  } else {
    return HR__WS_PROTOCOL;
  }
  /* A new message starts with msg_len 0 (msg_reset). */
  return len > wire_limit(ws, deflated) - ws->msg_len ? HR__WS_TOO_BIG : 0;
}

/* The first chunk of a frame: its header is known. */
static int frame_start(hr_websocket_t *ws, const struct wslay_frame_iocb *io) {
  int op = io->opcode, rc = frame_check(ws, op, io->rsv, io->mask, io->payload_length);
  if (rc != 0) return rc;
  if (op >= 8) {
    ws->ctrl_op = (uint8_t)op;
    ws->ctrl_len = 0;
  } else if (op != WSLAY_CONTINUATION_FRAME) {
    ws->msg_type = op == WSLAY_TEXT_FRAME ? HR_WS_TEXT : HR_WS_BINARY;
    ws->msg_deflated = io->rsv != 0;
  }
  return 0;
}

/* wslay hands a frame's header over only with its first payload byte, so
 * a frame that declares more than the message limit would wait for one
 * (and a peer that never sends it would hold the connection).  When wslay
 * wants more bytes between frames, what it holds is the next frame's
 * header, in part: the last given - taken bytes it was given, which
 * ws->tail keeps.  Once its length is in, the header is checked as
 * frame_start will check it.  Returns a close code, or 0. */
static int header_refusal(const hr_websocket_t *ws) {
  uint64_t k = ws->given - ws->taken, len;
  const uint8_t *h;
  size_t ext, i;
  if (ws->in_frame || k < 2 || k > sizeof ws->tail) return 0;
  h = ws->tail + sizeof ws->tail - k;
  len = h[1] & 0x7f;
  ext = len == 126 ? 2 : len == 127 ? 8 : 0;
  if (k < 2 + ext) return 0;
  if (ext > 0)
    for (len = 0, i = 0; i < ext; i++) len = len << 8 | h[2 + i];
  return frame_check(ws, h[0] & 0x0f, (h[0] >> 4) & 7, (h[1] & 0x80) != 0, len);
}

static int close_frame(hr_websocket_t *ws) {
  unsigned code;
  if (ws->ctrl_len == 0) {
    ws->code_rx = HR__WS_NO_STATUS;
    ws->close_rx = 1;
    hr__ws_send_close(ws, 0, NULL, 0);
    return 0;
  }
  if (ws->ctrl_len == 1) return HR__WS_PROTOCOL;
  code = (unsigned)ws->ctrl[0] << 8 | ws->ctrl[1];
  if (!hr__ws_close_code_ok(code, 1)) return HR__WS_PROTOCOL;
  if (!hr__utf8_valid(ws->ctrl + 2, ws->ctrl_len - 2u)) return HR__WS_BAD_DATA;
  ws->code_rx = (uint16_t)code;
  ws->reason_len = (uint8_t)(ws->ctrl_len - 2); /* it stays at ctrl + 2: read_done follows */
  ws->close_rx = 1;
  /* §5.5.1: answered with the same code (and here the same reason). */
  hr__ws_send_close(ws, (uint16_t)code, ws->ctrl + 2, ws->reason_len);
  return 0;
}

/* The last chunk of a frame. */
static int frame_end(hr_websocket_t *ws, const struct wslay_frame_iocb *io) {
  if (ws->ctrl_op != 0) {
    int op = ws->ctrl_op;
    ws->ctrl_op = 0;
    if (op == WSLAY_PING) {
      if (!ws->close_tx && hr__ws_send_frame(ws, WSLAY_PONG, ws->ctrl, ws->ctrl_len) != 0)
        return -1;
      return 0;
    }
    if (op == WSLAY_PONG) return 0; /* any byte already proved the peer alive */
    return close_frame(ws);
  }
  if (!io->fin) return 0;
  {
    int type = ws->msg_type, deflated = ws->msg_deflated, rc;
    const uint8_t *data = ws->msg_len > 0 ? ws->msg : (const uint8_t *)"";
    size_t len = ws->msg_len;
    if (deflated && (rc = hr__ws_pmd_inflate(ws, ws->msg, ws->msg_len, &data, &len)) != 0)
      return rc;
    if (type == HR_WS_TEXT && !hr__utf8_valid(data, len)) return HR__WS_BAD_DATA;
    ws->last_msg = hr__ws_now(ws);
    ws->msg_type = 0; /* a message callback may pause; the next frame starts anew */
    ws->msg_deflated = 0;
    /* Read past a pause only to find the peer's close (the server's is
     * out): what comes before it is dropped. */
    if (!ws->paused) ws->cb.message(ws, type, len > 0 ? data : (const uint8_t *)"", len, ws->udata);
    if (deflated) hr__ws_pmd_delivered(ws);
  }
  msg_reset(ws);
  return 0;
}

/* One chunk from wslay_frame_recv.  Returns 0, a close code to fail
 * with, or -1 (a write failed: the connection is going). */
static int chunk(hr_websocket_t *ws, const struct wslay_frame_iocb *io) {
  int rc;
  if (!ws->in_frame) {
    if ((rc = frame_start(ws, io)) != 0) return rc;
    ws->in_frame = 1;
    ws->frame_got = 0;
    /* The header wslay consumed: it takes only the shortest length form. */
    ws->taken += 2 + (io->payload_length < 126 ? 0 : io->payload_length < 65536 ? 2 : 8) +
                 (io->mask ? 4 : 0);
  }
  ws->taken += io->data_length;
  if (io->data_length > 0) {
    if (ws->ctrl_op != 0) { /* at most 125 bytes in all: wslay checked */
      memcpy(ws->ctrl + ws->ctrl_len, io->data, io->data_length);
      ws->ctrl_len = (uint8_t)(ws->ctrl_len + io->data_length);
    } else {
      if (msg_reserve(ws, io->data_length) != 0) return HR__WS_INTERNAL;
      memcpy(ws->msg + ws->msg_len, io->data, io->data_length);
      ws->msg_len += io->data_length;
    }
    ws->frame_got += io->data_length;
  }
  if (ws->frame_got < io->payload_length) return 0;
  ws->in_frame = 0;
  return frame_end(ws, io);
}

/* Appends n bytes to those held for later. */
static int hold(hr_websocket_t *ws, const uint8_t *p, size_t n) {
  uint8_t *b;
  if (n == 0) return 0;
  b = ws->a->realloc(ws->a->ctx, ws->held, ws->held_len + n);
  if (b == NULL) return -1;
  memcpy(b + ws->held_len, p, n);
  ws->held = b;
  ws->held_len += n;
  return 0;
}

void hr__ws_input_hold(hr_websocket_t *ws, const uint8_t *data, size_t len) {
  if (hold(ws, data, len) != 0) hr__ws_fail(ws, HR__WS_INTERNAL);
}

/* Reads frames from what wslay buffered and from ws->in. */
static void pump(hr_websocket_t *ws) {
  if (hr__ws_frames(ws) != 0) {
    ws->broken = 1; /* not even a close frame can be framed */
    return;
  }
  ws->in_pump = 1;
  while (hr__ws_reading(ws) && !ws->read_done && !ws->broken) {
    struct wslay_frame_iocb io;
    ssize_t r;
    int rc;
    memset(&io, 0, sizeof io);
    r = wslay_frame_recv(ws->fc, &io);
    if (r == WSLAY_ERR_WANT_READ) {
      rc = header_refusal(ws); /* a header that waits for its payload */
      if (rc > 0) hr__ws_fail(ws, (uint16_t)rc);
      break;
    }
    if (r < 0) { /* a control frame fragmented or over 125 bytes, a long length */
      hr__ws_fail(ws, HR__WS_PROTOCOL);
      break;
    }
    rc = chunk(ws, &io);
    if (rc > 0) hr__ws_fail(ws, (uint16_t)rc);
    if (rc != 0) break;
    if (ws->close_rx) ws->read_done = 1;
  }
  ws->in_pump = 0;
}

void hr__ws_input(hr_websocket_t *ws, const uint8_t *data, size_t len) {
  const uint8_t *src = data, *rest;
  size_t left;
  /* Bytes behind held ones go behind them. */
  if (ws->held_len > 0) {
    if (hold(ws, data, len) != 0) hr__ws_fail(ws, HR__WS_INTERNAL);
    src = ws->held;
    len = ws->held_len;
  }
  ws->in = src;
  ws->in_len = len;
  pump(ws);
  rest = ws->in;
  left = ws->in_len;
  ws->in = NULL;
  ws->in_len = 0;
  if (ws->read_done || ws->broken) {
    ws->held_len = 0; /* nothing more is read */
  } else if (src == ws->held && src != NULL) {
    memmove(ws->held, rest, left);
    ws->held_len = left;
  } else if (hold(ws, rest, left) != 0) {
    hr__ws_fail(ws, HR__WS_INTERNAL);
  }
}

ssize_t hr__ws_recv_cb(uint8_t *buf, size_t len, int flags, void *user) {
  hr_websocket_t *ws = user;
  size_t n = ws->in_len < len ? ws->in_len : len;
  (void)flags;
  if (n == 0) return -1; /* wslay_frame_recv answers WSLAY_ERR_WANT_READ */
  memcpy(buf, ws->in, n);
  /* The last bytes given, for header_refusal. */
  if (n >= sizeof ws->tail) {
    memcpy(ws->tail, buf + n - sizeof ws->tail, sizeof ws->tail);
  } else {
    memmove(ws->tail, ws->tail + n, sizeof ws->tail - n);
    memcpy(ws->tail + sizeof ws->tail - n, buf, n);
  }
  ws->given += n;
  ws->in += n;
  ws->in_len -= n;
  return (ssize_t)n;
}
