/* SPDX-License-Identifier: MIT */
/*
 * A server without sockets for in-process benchmarks: one router served by
 * a virtual server (hr__server_attach_virtual: one worker on a loop the
 * benchmark owns, no listener) with one persistent virtual connection.
 * Requests are fed as bytes and processed at once; the responses go to a
 * sink that only counts bytes, except when the caller asks for a copy of
 * one response (to check it).  Single-threaded: everything runs on the
 * thread that owns the loop, which the caller does not run while feeding.
 */
#ifndef BENCH_VSERVER_H
#define BENCH_VSERVER_H

#include <stddef.h>
#include <stdint.h>

#include <hroute.h>

#include "server/internal.h"

typedef struct bench_vserver_s {
  uv_loop_t *loop;
  hr_server_t *server;
  hr__conn_t *conn;
  uint64_t out_bytes;   /* every byte the server wrote so far */
  char *capture;        /* non-NULL during bench_vserver_capture() */
  size_t capture_len, capture_cap;
  int capture_overflow;
  int closed;           /* the server's shutdown callback ran */
} bench_vserver_t;

/*
 * Creates the server for `router` on `loop` and opens the connection.
 * Returns 0 or an hroute error code (the structure is then unusable and
 * needs no close).
 */
int bench_vserver_open(bench_vserver_t *v, uv_loop_t *loop,
                       hr_router_t *router);

/* Feeds `n` bytes; returns how many the connection took (n unless it closed
 * or stopped reading). */
size_t bench_vserver_feed(bench_vserver_t *v, const char *p, size_t n);

/*
 * Feeds one request and copies everything the server wrote meanwhile into
 * `buf` (capacity `cap`); stores the length in *len.  Returns 0, or -1 when
 * the request was not taken whole or the output did not fit.
 */
int bench_vserver_capture(bench_vserver_t *v, const char *req, size_t n,
                          char *buf, size_t cap, size_t *len);

/* Closes the connection and the server (runs `loop` until the server's
 * shutdown completed), then frees the server.  The router is the caller's. */
void bench_vserver_close(bench_vserver_t *v);

#endif /* BENCH_VSERVER_H */
