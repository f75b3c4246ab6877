/* SPDX-License-Identifier: MIT */
/*
 * A blocking loopback HTTP/2 test client on nghttp2's client session
 * (nghttp2_session_client_new, mem_recv / mem_send), over plain TCP with
 * prior knowledge (h2c: the preface and SETTINGS first, RFC 9113 §3.3) or
 * over TLS with ALPN "h2" (§3.2).  A test submits requests (each returns
 * its stream id), then runs the client until the streams it names are
 * closed; every stream's response (status, field lines, body, trailers, a
 * reset's error code) and the connection's events (GOAWAY, SETTINGS,
 * closing) are in c->io.seen (h2seen.h).  nghttp2 checks what the server
 * sends as a strict client would: a malformed response resets its stream
 * (close_error PROTOCOL_ERROR) and a malformed connection ends the session
 * (c->session_error), so a test that asserts a clean close catches both.
 * The client can stop reading (c->io.reading = 0, a slow reader), announce
 * any initial window (0 included) and open its windows only when told
 * (manual_window).  Frames nghttp2 would refuse to send are h2raw.h's
 * job.  Every wait is bounded (h2loop.h).  One thread at a time.
 */
#ifndef HR_TEST_H2CLIENT_H
#define HR_TEST_H2CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "h2frames.h"
#include "h2loop.h"

/* Connection settings; h2c_options_init fills the defaults. */
typedef struct h2c_options_s {
  h2s_options_t sock;  /* transport: plain (h2c) by default, or TLS */
  /* SETTINGS_INITIAL_WINDOW_SIZE announced for the server's streams, in
   * bytes (0 is a zero window); -1 (the default) announces none: 65535. */
  int64_t initial_window;
  /* > 65535: the connection's window the client opens at once, in bytes
   * (at most 2^31 - 1); else the default 65535. */
  int32_t connection_window;
  /* 1: the client never opens a flow-control window by itself; only
   * h2c_open_window does.  0 (default): nghttp2 opens them as data arrives. */
  int manual_window;
} h2c_options_t;

/* A request to submit.  Everything is copied by h2c_submit. */
typedef struct h2c_request_s {
  const char *method;    /* NULL: "GET" */
  const char *path;      /* NULL: "/" */
  const char *authority; /* NULL: "127.0.0.1:<port>"; "": none sent */
  const char *scheme;    /* NULL: "http", or "https" over TLS */
  const h2f_field_t *fields; /* extra field lines (lowercase names) */
  size_t nfields;
  const void *body;      /* request body bytes (may be NULL) */
  size_t body_len;
  /* 1: the body goes on with h2c_send_body, which ends it; 0: body (if
   * any) is the whole body.  With neither a body nor open, HEADERS carries
   * END_STREAM. */
  int open;
  const h2f_field_t *trailers; /* sent after the body's last byte */
  size_t ntrailers;
} h2c_request_t;

/* One request body being sent (internal to h2client.c). */
typedef struct h2c_upload_s h2c_upload_t;

typedef struct h2c_s {
  h2_loop_t io;            /* the connection, its queue and its records */
  nghttp2_session *session;
  h2c_upload_t *uploads;   /* request bodies being sent */
  char authority[32];      /* "127.0.0.1:<port>" */
  h2_block_t block;        /* the header block being received (the session
                              delivers one block at a time) */
  int session_error;       /* nghttp2 error that ended the session (the
                              server broke the protocol), else 0 */
  unsigned long invalid_frames; /* frames nghttp2 found invalid */
  int last_invalid;        /* the nghttp2 error of the last of them */
} h2c_t;

/* Fills `o`: plain TCP, the default window, automatic window updates. */
void h2c_options_init(h2c_options_t *o);
/* Connects to 127.0.0.1:port and sends the preface and SETTINGS (ALPN must
 * have selected "h2" over TLS).  Returns a client, or NULL (connection or
 * handshake failed, ALPN did not select h2). */
h2c_t *h2c_connect(int port, const h2c_options_t *o);
/* Submits a request.  Returns its stream id (> 0), or a negative nghttp2
 * error code.  Nothing is sent until the client runs. */
int32_t h2c_submit(h2c_t *c, const h2c_request_t *r);
/* A GET (or any bodiless method) of `path`: h2c_submit's result. */
int32_t h2c_get(h2c_t *c, const char *method, const char *path);
/* Adds a trailer field (lower-case name) to an open request's body, sent
 * after its last byte (before h2c_send_body ends it).  Returns 0, or -1
 * (no open body, or it was ended). */
int h2c_add_trailer(h2c_t *c, int32_t id, const char *name, const char *value);
/* Adds body bytes to an open request (h2c_request_t.open); `end` ends the
 * body (trailers, if any, follow).  Returns 0, or -1 (no open body). */
int h2c_send_body(h2c_t *c, int32_t id, const void *p, size_t n, int end);
/* Manual windows: queues WINDOW_UPDATE frames that open stream `id`'s
 * window and the connection's by n bytes each (1 to 2^31 - 1), so the
 * server may send n more DATA bytes on that stream (a stream submitted
 * but not yet sent is serialised first, so the update reaches it).
 * Returns 0 or an nghttp2 error code. */
int h2c_open_window(h2c_t *c, int32_t id, int32_t n);
/* Runs until every stream in ids[0..n) is closed, the connection ends, or
 * RC_TIMEOUT_MS passes without progress.  Returns 1 when they all closed,
 * else 0. */
int h2c_wait(h2c_t *c, const int32_t *ids, size_t n);
/* h2c_wait for one stream; returns its record (NULL when it did not
 * close). */
h2_stream_t *h2c_wait1(h2c_t *c, int32_t id);
/* Runs until done(arg) holds (see h2_loop_run).  1 or 0. */
int h2c_run(h2c_t *c, h2_loop_done_fn done, void *arg);
/* Runs until a GOAWAY arrived.  1 or 0. */
int h2c_wait_goaway(h2c_t *c);
/* Runs until the connection ended.  1 or 0. */
int h2c_wait_closed(h2c_t *c);
/* Sends a GOAWAY(NO_ERROR) and closes; frees the client.  NULL: no-op. */
void h2c_close(h2c_t *c);

#endif
