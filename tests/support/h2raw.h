/* SPDX-License-Identifier: MIT */
/*
 * A hand-driven HTTP/2 client connection for attack tests: the test builds
 * every frame it sends (h2frames.h) into h2r_out(r), in any order and of
 * any validity, and h2r_flush sends them while reading what the server
 * answers.  The reader splits the server's bytes into frames itself,
 * decodes header blocks with its own HPACK inflater, and records what it
 * saw in r->io.seen (h2seen.h): statuses, bodies, RST_STREAM codes, GOAWAY,
 * SETTINGS.  By default it behaves as a client that keeps its side of the
 * protocol -- it acknowledges the server's SETTINGS and PINGs and returns
 * flow-control credit for DATA at once -- and each can be turned off.
 * With r->io.reading 0 it is a client that never reads (a slow reader, a
 * flood while not reading).  Every wait is bounded (h2loop.h).  One thread
 * at a time.
 */
#ifndef HR_TEST_H2RAW_H
#define HR_TEST_H2RAW_H

#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "h2frames.h"
#include "h2loop.h"

typedef struct h2r_s {
  h2_loop_t io;          /* the connection, its queue and its records */
  h2_bytes_t in;         /* bytes read, not yet a whole frame */
  h2_bytes_t block;      /* the server's header block being received */
  h2_block_t decoding;   /* the stream that block belongs to */
  int block_end_stream;  /* its HEADERS frame carried END_STREAM */
  nghttp2_hd_deflater *enc; /* our HPACK encoder (the connection's) */
  nghttp2_hd_inflater *dec; /* the server's, mirrored */
  int32_t next_stream;   /* the next client stream id: 1, 3, 5... */
  char authority[32];    /* "127.0.0.1:<port>" */
  const char *scheme;    /* "http" or "https" */
  int auto_ack;          /* 1 (default): ACK the server's SETTINGS and PING */
  int auto_window;       /* 1 (default): return DATA's credit at once */
  int decode_error;      /* nghttp2 error of a header block that failed to
                            decode (the server's HPACK was bad), else 0 */
} h2r_t;

/* Connects to 127.0.0.1:port and sends the connection preface and an
 * empty SETTINGS frame.  Returns 0, or -1 with *r closed (r->io.sock.err).
 * h2r_close frees it either way. */
int h2r_open(h2r_t *r, int port, const h2s_options_t *o);
/* The same with auto_ack as given from the first byte read: 0 makes a
 * client that has not acknowledged the server's SETTINGS (until it sends
 * h2f_settings_ack itself). */
int h2r_open_ack(h2r_t *r, int port, const h2s_options_t *o, int auto_ack);
/* Where frames to send are built (h2f_*): r->io.out. */
h2_bytes_t *h2r_out(h2r_t *r);
/* Queues a request's HEADERS frame (END_HEADERS; END_STREAM when
 * `end_stream`) on the next client stream id, with the n extra fields
 * (may be NULL), and returns that id.  Nothing is sent until h2r_flush. */
int32_t h2r_request(h2r_t *r, const char *method, const char *path,
                    int end_stream, const h2f_field_t *extra, size_t n);
/* h2_loop_flush: sends what is queued, reading meanwhile.  0 or -1. */
int h2r_flush(h2r_t *r);
/* Runs until stream `id` is closed (END_STREAM or RST_STREAM).  1 or 0. */
int h2r_wait_stream(h2r_t *r, int32_t id);
/* Runs until a GOAWAY arrived.  1 or 0. */
int h2r_wait_goaway(h2r_t *r);
/* Runs until the connection ended (reading turned on first).  1 or 0. */
int h2r_wait_closed(h2r_t *r);
/* Closes the socket and frees everything, records included. */
void h2r_close(h2r_t *r);

#endif
