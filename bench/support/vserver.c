/* SPDX-License-Identifier: MIT */
/*
 * A virtual server and connection for in-process benchmarks (see
 * vserver.h): the whole request path of the server -- strictness scan,
 * llhttp, routing, invoker, response rendering, output queue -- without
 * sockets or system calls.
 */
#include <string.h>

#include "vserver.h"

static void sink(void *ctx, const char *p, size_t n) {
  bench_vserver_t *v = ctx;
  v->out_bytes += n;
  if (v->capture == NULL) return;
  if (v->capture_cap - v->capture_len < n) {
    v->capture_overflow = 1;
    return;
  }
  memcpy(v->capture + v->capture_len, p, n);
  v->capture_len += n;
}

int bench_vserver_open(bench_vserver_t *v, uv_loop_t *loop,
                       hr_router_t *router) {
  int err;
  memset(v, 0, sizeof(*v));
  v->loop = loop;
  if ((err = hr_server_new(&v->server, router, NULL)) != 0) return err;
  if ((err = hr__server_attach_virtual(v->server, loop)) != 0) {
    hr_server_free(v->server);
    return err;
  }
  v->conn = hr__vconn_new(hr__server_worker(v->server, 0), sink, v);
  if (v->conn == NULL) {
    bench_vserver_close(v);
    return HR_ENOMEM;
  }
  return 0;
}

size_t bench_vserver_feed(bench_vserver_t *v, const char *p, size_t n) {
  return hr__vconn_feed(v->conn, p, n);
}

int bench_vserver_capture(bench_vserver_t *v, const char *req, size_t n,
                          char *buf, size_t cap, size_t *len) {
  size_t took;
  v->capture = buf;
  v->capture_cap = cap;
  v->capture_len = 0;
  v->capture_overflow = 0;
  took = hr__vconn_feed(v->conn, req, n);
  v->capture = NULL;
  *len = v->capture_len;
  return took == n && !v->capture_overflow ? 0 : -1;
}

static void on_closed(hr_server_t *server, void *udata) {
  bench_vserver_t *v = udata;
  (void)server;
  v->closed = 1;
}

void bench_vserver_close(bench_vserver_t *v) {
  int i;
  if (v->server == NULL) return;
  if (v->conn != NULL && !hr__vconn_closed(v->conn)) hr__conn_close(v->conn);
  v->conn = NULL; /* freed by its close callback */
  if (hr_server_close(v->server, 0, on_closed, v) == 0) {
    /* Close callbacks and the zero shutdown deadline are due at once: a
     * few turns of the loop finish the shutdown. */
    for (i = 0; i < 1000 && !v->closed; i++) uv_run(v->loop, UV_RUN_NOWAIT);
  }
  hr_server_free(v->server); /* refuses, leaking, if it is still running */
  v->server = NULL;
}
