/* SPDX-License-Identifier: MIT */
/*
 * The loop both HTTP/2 test clients run: one connection (h2sock.h), the
 * bytes queued for it, the records of what came back (h2seen.h), and the
 * bounded waits -- flush what is queued while reading, or run until a
 * condition holds.  A client plugs in how it consumes bytes read (on_read)
 * and, optionally, how it produces bytes to send before each step
 * (produce: the nghttp2 session client draws them from its session).  No
 * wait takes longer than RC_TIMEOUT_MS without progress, nor H2_LOOP_CAP_MS
 * in all.  One thread at a time.
 */
#ifndef HR_TEST_H2LOOP_H
#define HR_TEST_H2LOOP_H

#include "h2seen.h"
#include "h2sock.h"

/* The longest a run may take, whatever the progress. */
#define H2_LOOP_CAP_MS 60000

typedef struct h2_loop_s {
  h2s_t sock;
  h2_bytes_t out;        /* bytes queued, not yet sent */
  h2_conn_seen_t seen;   /* what the server sent; seen.closed once it ended */
  int reading;           /* 1: read while waiting; 0: never read (a slow
                            reader) */
  h2s_read_cb on_read;   /* consumes the bytes read; arg is `arg` */
  int (*produce)(void *arg); /* NULL, or queues bytes into out before each
                                step; nonzero ends the wait */
  void *arg;
} h2_loop_t;

/* A condition h2_loop_run waits for: nonzero when it holds. */
typedef int (*h2_loop_done_fn)(void *arg);

/* Opens the connection: 0, or -1 (l->sock.err).  Sets reading to 1. */
int h2_loop_open(h2_loop_t *l, int port, const h2s_options_t *o,
                 h2s_read_cb on_read, int (*produce)(void *arg), void *arg);
/* Sends what is queued (reading meanwhile, when reading).  Returns 0, or
 * -1 when the connection ended or RC_TIMEOUT_MS passed without progress
 * (l->sock.err EAGAIN: the server stopped reading). */
int h2_loop_flush(h2_loop_t *l);
/* Runs until done(done_arg) holds, the connection ends, or RC_TIMEOUT_MS
 * passes without progress.  Returns 1 when done holds, else 0. */
int h2_loop_run(h2_loop_t *l, h2_loop_done_fn done, void *done_arg);
/* Runs until the connection ends (reading turned on first).  Returns 1
 * when it ended, 0 when it was still open. */
int h2_loop_wait_closed(h2_loop_t *l);
/* Closes the connection (`rst`: with a TCP reset) and frees the buffers
 * and records. */
void h2_loop_close(h2_loop_t *l, int rst);

/* Streams to wait for with h2_loop_streams_closed. */
typedef struct h2_loop_streams_s {
  const h2_conn_seen_t *seen;
  const int32_t *ids;
  size_t n;
} h2_loop_streams_t;
/* Nonzero when a GOAWAY arrived (arg: the h2_conn_seen_t). */
int h2_loop_got_goaway(void *arg);
/* Nonzero when every stream in the h2_loop_streams_t at arg is closed. */
int h2_loop_streams_closed(void *arg);

#endif
