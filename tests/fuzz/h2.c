/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for HTTP/2 without sockets: bytes go into an h2c
 * connection (the frame scanner, nghttp2's session, the streams as
 * exchanges, routing, bodies, dispatch, responses as frames) in pieces
 * whose size the first input byte chooses.  Its low bit chooses what comes
 * first: the input alone after the client preface, or the preface and an
 * empty SETTINGS frame, so that the fuzzer starts past both.  No input may
 * crash or leak, and what the server writes must begin with its SETTINGS
 * frame (RFC 9113 §3.4).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "server/internal.h"
#include "fuzzroutes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static hr_router_t *router;
static hr_server_t *server;
static hr__worker_t *worker;
static size_t out_len;
static int out_bad;

/* The client connection preface, and an empty SETTINGS frame. */
static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
static const char settings[] = "\0\0\0\4\0\0\0\0\0";

static void sink(void *ctx, const char *p, size_t n) {
  (void)ctx;
  /* The server's first frame: SETTINGS (type 4) on stream 0. */
  if (out_len == 0 && (n < 9 || p[3] != 4 || memcmp(p + 5, "\0\0\0\0", 4) != 0)) out_bad = 1;
  out_len += n;
}

static void setup(void) {
  hr_server_options_t so;
  uv_loop_init(&loop);
  hr_router_new(&router, NULL);
  fz_add_request_routes(router);
  hr_server_options_init(&so);
  so.max_header_bytes = 2048;
  so.max_header_fields = 16;
  so.max_body_bytes = 4096;
  so.h2_max_concurrent_streams = 8;
  hr_server_new(&server, router, &so);
  hr__server_attach_virtual(server, &loop);
  worker = hr__server_worker(server, 0);
}

static int feed(hr__conn_t *c, const char *p, size_t n, size_t step) {
  size_t off = 0;
  while (off < n && !hr__vconn_closed(c)) {
    size_t k = n - off < step ? n - off : step;
    size_t took = hr__vconn_feed(c, p + off, k);
    if (took == 0) return -1;
    off += took;
    uv_run(&loop, UV_RUN_NOWAIT); /* what the step kicked to a later turn */
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hr__conn_t *c;
  size_t step;
  int with_settings;
  if (server == NULL) setup();
  if (size < 1) return 0;
  step = (size_t)(data[0] >> 1) % 64 + 1;
  with_settings = data[0] & 1;
  data++;
  size--;
  out_len = 0;
  out_bad = 0;
  c = hr__vconn_new_h2c(worker, sink, NULL);
  if (c == NULL) return 0;
  if (feed(c, preface, sizeof preface - 1, step) == 0 &&
      (!with_settings || feed(c, settings, sizeof settings - 1, step) == 0))
    feed(c, (const char *)data, size, step);
  if (!hr__vconn_closed(c)) hr__vconn_eof(c);
  if (!hr__vconn_closed(c)) hr__conn_close(c);
  uv_run(&loop, UV_RUN_NOWAIT); /* close callbacks free the connection */
  if (out_bad) abort();
  return 0;
}
