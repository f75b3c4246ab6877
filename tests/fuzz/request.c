/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the whole request path without sockets: bytes go
 * into a connection (strictness scanner, llhttp, routing, limits, bodies,
 * dispatch, responses) in pieces whose size the first input byte chooses.
 * No input may crash, leak, or make the server write a response that does
 * not start with "HTTP/1.1 ".
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

static void sink(void *ctx, const char *p, size_t n) {
  (void)ctx;
  if (out_len == 0 && (n < 9 || memcmp(p, "HTTP/1.1 ", 9) != 0)) out_bad = 1;
  out_len += n;
}

static void setup(void) {
  hr_server_options_t so;
  uv_loop_init(&loop);
  hr_router_new(&router, NULL);
  fz_add_request_routes(router);
  hr_server_options_init(&so);
  so.max_header_bytes = 2048;
  so.max_request_line_bytes = 512;
  so.max_header_fields = 16;
  so.max_body_bytes = 4096;
  hr_server_new(&server, router, &so);
  hr__server_attach_virtual(server, &loop);
  worker = hr__server_worker(server, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hr__conn_t *c;
  size_t step, off = 0;
  if (server == NULL) setup();
  if (size < 1) return 0;
  step = (size_t)data[0] % 64 + 1;
  data++;
  size--;
  out_len = 0;
  out_bad = 0;
  c = hr__vconn_new(worker, sink, NULL);
  if (c == NULL) return 0;
  while (off < size && !hr__vconn_closed(c)) {
    size_t n = size - off < step ? size - off : step;
    size_t took = hr__vconn_feed(c, (const char *)data + off, n);
    if (took == 0) break;
    off += took;
  }
  if (!hr__vconn_closed(c)) hr__vconn_eof(c);
  if (!hr__vconn_closed(c)) hr__conn_close(c);
  uv_run(&loop, UV_RUN_NOWAIT); /* close callbacks free the connection */
  if (out_bad) abort();
  return 0;
}
