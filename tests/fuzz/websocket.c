/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the WebSocket input path without sockets: a fixed
 * opening handshake, then the input as the client's frames, fed in pieces
 * whose size the first input byte chooses, into a connection whose handler
 * echoes messages and, on some of them, pauses (resumed by a post), sends
 * a ping-sized burst or closes.  No input may crash, leak or hang, and
 * what the server writes after its 101 must be well-formed RFC 6455 server
 * frames: unmasked, FIN set (it never fragments), a known opcode, a
 * length in its shortest form, control frames of at most 125 bytes, text
 * and close reasons in UTF-8, a valid close code, and nothing after the
 * close frame.  The first byte's two high bits choose whether the
 * handshake offers permessage-deflate (RFC 7692), whether the server
 * keeps its windows (context takeover), or (3) that the input's first
 * line is the Sec-WebSocket-Extensions value offered (its control bytes
 * made 'x'), the server willing to keep windows: the input's frames may
 * then be compressed (RSV1), and every compressed frame the server writes
 * must inflate (zlib here, keeping its window unless the answer says
 * server_no_context_takeover) to a valid message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "server/internal.h"
#include "util/utf8.h"

#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static hr_router_t *router;
static hr_server_t *server;
static hr__worker_t *worker;
static unsigned char out[1 << 20];
static size_t out_len;
static int out_over;

static void sink(void *ctx, const char *p, size_t n) {
  (void)ctx;
  if (out_len + n > sizeof out) {
    out_over = 1;
    return;
  }
  memcpy(out + out_len, p, n);
  out_len += n;
}

static void resume(hr_websocket_t *ws, void *udata) {
  (void)udata;
  hr_websocket_pause(ws, 0);
}

static void on_message(hr_websocket_t *ws, int type, const void *data, size_t len,
                       void *udata) {
  static const char burst[100] = {0};
  (void)udata;
  if (len > 0 && ((const unsigned char *)data)[0] == 'P') {
    hr_websocket_pause(ws, 1);
    hr_websocket_post(ws, resume, NULL);
  } else if (len > 0 && ((const unsigned char *)data)[0] == 'C') {
    hr_websocket_close(ws, 4000, "asked", 5);
    return;
  } else if (len > 0 && ((const unsigned char *)data)[0] == 'B') {
    int i;
    for (i = 0; i < 50; i++) hr_websocket_send(ws, HR_WS_BINARY, burst, sizeof burst);
  }
  hr_websocket_send(ws, type, data, len);
}

static void on_closed(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata) {
  (void)ws;
  (void)how;
  (void)udata;
}

/* 0: no offer; 1: permessage-deflate without takeover; 2: with it; 3:
 * the input's own offer, takeover allowed. */
static int mode;
static int takeover; /* the answer left server_no_context_takeover out */

static void h_ws(hr_request_t *req, hr_response_t *res, void *udata) {
  static const hr_websocket_callbacks_t cbs = {.message = on_message, .closed = on_closed};
  hr_websocket_options_t o;
  (void)udata;
  hr_websocket_options_init(&o);
  o.max_message_bytes = 4096;
  o.deflate.enabled = 1;
  o.deflate.min_length = 8;
  if (mode >= 2) {
    o.deflate.context_takeover = 1;
    o.deflate.server_window_bits = 9;
    o.deflate.mem_level = 1;
  }
  hr_websocket_accept(req, res, &o, &cbs, NULL, NULL);
}

static void setup(void) {
  hr_server_options_t so;
  uv_loop_init(&loop);
  hr_router_new(&router, NULL);
  hr_router_add(router, "GET", "/ws", h_ws, NULL, NULL);
  hr_server_options_init(&so);
  so.write_high_water_bytes = 2048;
  hr_server_new(&server, router, &so);
  hr__server_attach_virtual(server, &loop);
  worker = hr__server_worker(server, 0);
}

static int code_ok(unsigned code) {
  return (code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006) ||
         (code >= 3000 && code <= 4999);
}

#ifdef HR_HAVE_ZLIB
static z_stream inf;
static int inf_ready;
static unsigned char plain[1 << 16];

/* A compressed frame's payload: it must inflate (the four bytes of
 * §7.2.2 put back), to a text message in UTF-8 when op is 1, and to at
 * most the 4096 bytes the server could have been sent. */
static void check_inflates(int op, const unsigned char *p, size_t len) {
  static const unsigned char tail[4] = {0, 0, 0xff, 0xff};
  int rc;
  if (inf_ready && !takeover) {
    inflateEnd(&inf);
    inf_ready = 0;
  }
  if (!inf_ready) {
    memset(&inf, 0, sizeof inf);
    if (inflateInit2(&inf, -15) != Z_OK) abort();
    inf_ready = 1;
  }
  inf.next_out = plain;
  inf.avail_out = sizeof plain;
  inf.next_in = (Bytef *)(uintptr_t)p;
  inf.avail_in = (uInt)len;
  rc = inflate(&inf, Z_SYNC_FLUSH);
  if ((rc != Z_OK && rc != Z_BUF_ERROR) || inf.avail_in != 0) abort();
  inf.next_in = (Bytef *)(uintptr_t)tail;
  inf.avail_in = 4;
  rc = inflate(&inf, Z_SYNC_FLUSH);
  if ((rc != Z_OK && rc != Z_BUF_ERROR) || inf.avail_in != 0 || inf.avail_out == 0) abort();
  if (sizeof plain - inf.avail_out > 4096) abort();
  if (op == 1 && !hr__utf8_valid(plain, sizeof plain - inf.avail_out)) abort();
}
#endif

/* Checks the server's frames in out[at..out_len). */
static void check_frames(size_t at) {
  int closed = 0, deflated = memmem(out, at, "permessage-deflate", 18) != NULL;
  takeover = deflated && memmem(out, at, "server_no_context_takeover", 26) == NULL;
  while (at < out_len) {
    const unsigned char *f = out + at;
    size_t avail = out_len - at, hl = 2, len;
    int op;
    if (closed || avail < 2) abort();          /* after close; a cut header */
    op = f[0] & 0x0f;
    /* FIN; no RSV but RSV1 on a data frame when the extension is on */
    if ((f[0] & 0xf0) != 0x80 && !(deflated && (f[0] & 0xf0) == 0xc0 && (op == 1 || op == 2)))
      abort();
    if (f[1] & 0x80) abort();                  /* masked */
    if (op != 1 && op != 2 && op != 8 && op != 9 && op != 10) abort();
    len = f[1] & 0x7f;
    if (len == 126) {
      if (avail < 4) abort();
      len = (size_t)f[2] << 8 | f[3];
      if (len < 126) abort();
      hl = 4;
    } else if (len == 127) {
      size_t i;
      if (avail < 10) abort();
      for (len = 0, i = 2; i < 10; i++) len = len << 8 | f[i];
      if (len < 65536) abort();
      hl = 10;
    }
    if (avail - hl < len) abort();             /* a cut payload */
    if (op >= 8 && len > 125) abort();
    if ((f[0] & 0x40) != 0) {
#ifdef HR_HAVE_ZLIB
      check_inflates(op, f + hl, len);
#else
      abort(); /* no zlib: never agreed */
#endif
    } else if (op == 1 && !hr__utf8_valid(f + hl, len)) {
      abort();
    }
    if (op == 8) {
      if (len == 1) abort();
      if (len >= 2 && (!code_ok((unsigned)f[hl] << 8 | f[hl + 1]) ||
                       !hr__utf8_valid(f + hl + 2, len - 2)))
        abort();
      closed = 1;
    }
    at += hl + len;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char hs[] =
      "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  static const char hs_deflate[] =
      "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n";
  static char own[sizeof hs + 300];
  const char *h;
  size_t hlen;
  hr__conn_t *c;
  size_t step, off = 0, i;
  const unsigned char *head_end;
  if (server == NULL) setup();
  if (size < 1) return 0;
  step = (size_t)data[0] % 64 + 1;
  mode = data[0] >> 6;
  data++;
  size--;
  if (mode == 3) { /* the first line (at most 256 bytes) is the offer */
    const unsigned char *nl = memchr(data, '\n', size < 256 ? size : 256);
    size_t n = nl != NULL ? (size_t)(nl - data) : 0, k;
    memcpy(own, hs, sizeof hs - 3); /* without the final CRLF */
    hlen = sizeof hs - 3;
    memcpy(own + hlen, "Sec-WebSocket-Extensions: ", 26);
    hlen += 26;
    for (k = 0; k < n; k++) {
      unsigned char b = data[k];
      own[hlen++] = (char)(b < 0x20 || b >= 0x7f ? 'x' : b);
    }
    memcpy(own + hlen, "\r\n\r\n", 4);
    hlen += 4;
    if (nl != NULL) {
      data += n + 1;
      size -= n + 1;
    }
  }
  out_len = 0;
  out_over = 0;
  c = hr__vconn_new(worker, sink, NULL);
  if (c == NULL) return 0;
  if (mode == 3) {
    h = own;
  } else {
    h = mode == 0 ? hs : hs_deflate;
    hlen = mode == 0 ? sizeof hs - 1 : sizeof hs_deflate - 1;
  }
  if (hr__vconn_feed(c, h, hlen) != hlen) abort();
  while (off < size && !hr__vconn_closed(c)) {
    size_t n = size - off < step ? size - off : step;
    size_t took = hr__vconn_feed(c, (const char *)data + off, n);
    /* A paused stream takes nothing: run the loop for the resume. */
    for (i = 0; took == 0 && i < 4 && !hr__vconn_closed(c); i++) {
      uv_run(&loop, UV_RUN_NOWAIT);
      took = hr__vconn_feed(c, (const char *)data + off, n);
    }
    if (took == 0) break;
    off += took;
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  if (!hr__vconn_closed(c)) hr__vconn_eof(c);
  if (!hr__vconn_closed(c)) hr__conn_close(c);
  uv_run(&loop, UV_RUN_NOWAIT); /* close callbacks free the connection */
  if (out_over) return 0;
  if (out_len < 12 || memcmp(out, "HTTP/1.1 101", 12) != 0) abort();
  head_end = memmem(out, out_len, "\r\n\r\n", 4);
  if (head_end == NULL) abort();
  check_frames((size_t)(head_end - out) + 4);
#ifdef HR_HAVE_ZLIB
  if (inf_ready) inflateEnd(&inf);
  inf_ready = 0;
#endif
  return 0;
}
