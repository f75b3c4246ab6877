/* SPDX-License-Identifier: MIT */
/*
 * A blocking loopback HTTP/1.1 test client over plain sockets.  Every socket
 * has a hard receive and send timeout (RC_TIMEOUT_MS) so a server bug fails
 * a test instead of hanging it, and TCP_NODELAY so split sends leave as
 * separate segments.  The reader keeps a buffer per connection, so pipelined
 * responses that arrive in one segment are read one at a time.
 *
 * The same calls speak HTTP/2 on a connection made by rc_connect_h2: the
 * request text a test writes goes out as HTTP/2 requests (rch2.h says how
 * it is translated), and rc_read_response builds the response from the
 * stream's record as if it had come as HTTP/1.1 text -- the status line
 * "HTTP/1.1 <code> <reason>" from hr_status_reason, the field lines (names
 * in lower case, as HTTP/2 sends them; rc_header ignores case), the body
 * and a raw rendering of all three -- so that one test's assertions hold
 * for both.  What has no HTTP/2 equivalent stays HTTP/1.1's: chunked,
 * nchunks and until_close are 0, read_chunk and read_pause_us are
 * ignored.
 */
#ifndef HR_TEST_RAWCLIENT_H
#define HR_TEST_RAWCLIENT_H

#include <stddef.h>
#include <sys/types.h>

#define RC_TIMEOUT_MS 5000

struct rch2_s;

typedef struct rc_s {
  int fd;
  struct rch2_s *h2; /* HTTP/2 (rc_connect_h2), else NULL */
  char *buf;         /* received, not yet consumed bytes are buf[off..len) */
  size_t off, len, cap;
  int eof;           /* the peer closed: a read returned 0 */
  int err;           /* errno of the last failed read or send, else 0 */
  size_t read_chunk; /* >0: read at most this many bytes per recv */
  unsigned read_pause_us; /* >0: pause before each recv (a slow reader) */
  size_t received;   /* total bytes received */
  size_t sent;       /* total bytes sent (HTTP/2: the frames the session
                        sent by itself included, as of the last call) */
} rc_t;

typedef struct rc_header_s {
  char *name;
  char *value;
} rc_header_t;

/* Result codes of rc_read_response. */
enum {
  RC_OK = 0,
  RC_EOF = -1,    /* the connection was closed before any byte */
  RC_ERR = -2,    /* read failed (timeout: err EAGAIN; reset: ECONNRESET) */
  RC_TRUNC = -3,  /* closed in the middle of a response */
  RC_BAD = -4     /* the bytes are not an HTTP/1.1 response */
};

typedef struct rc_response_s {
  int status;          /* e.g. 200; -1 when none was read */
  char *status_line;   /* "HTTP/1.1 200 OK", without CRLF */
  rc_header_t *headers;
  size_t nheaders;
  char *body;          /* decoded body, NUL-terminated for convenience */
  size_t body_len;
  char *raw;           /* the response exactly as received */
  size_t raw_len;
  int chunked;         /* body used the chunked transfer coding */
  size_t nchunks;      /* data chunks received (chunked only) */
  int until_close;     /* body was delimited by the connection closing */
  rc_header_t *trailers; /* trailer fields (chunked: the trailer section;
                            HTTP/2: the HEADERS frame after the DATA) */
  size_t ntrailers;
  int stream_id;       /* HTTP/2: the stream it came on; 0 over HTTP/1.1 */
} rc_response_t;

/* errno of the last failed rc_connect*. */
extern int rc_connect_errno;

/* Connects to 127.0.0.1:port.  Returns NULL on failure (see
 * rc_connect_errno). */
rc_t *rc_connect(int port);
/* Connects to a numeric IPv4 or IPv6 address; `rcvbuf` > 0 sets SO_RCVBUF
 * before connecting (a small window makes a slow reader push back). */
rc_t *rc_connect_ex(const char *host, int port, int rcvbuf);
/* Connects to 127.0.0.1:port and speaks HTTP/2 with prior knowledge (the
 * listener must have hr_listen_options_t.h2 = HR_H2_ON).  NULL on
 * failure. */
rc_t *rc_connect_h2(int port);
void rc_close(rc_t *c);
/* Closes with SO_LINGER 0, so the peer sees a reset. */
void rc_close_rst(rc_t *c);
/* Makes a later rc_close send a reset (SO_LINGER 0). */
void rc_set_rst_on_close(rc_t *c);
/* Half-closes the sending side (shutdown SHUT_WR). */
void rc_shutdown_wr(rc_t *c);

/* Sends every byte.  Returns 0 or -errno (HTTP/2: -EPROTO for text that
 * is no request, -EPIPE when the connection ended). */
int rc_send(rc_t *c, const void *data, size_t len);
int rc_send_str(rc_t *c, const char *s);
/* Sends data[0..at) and data[at..len) as two sends `pause_us` apart. */
int rc_send_split(rc_t *c, const void *data, size_t len, size_t at,
                  unsigned pause_us);
/* Sends one byte per send, `pause_us` apart. */
int rc_send_bytewise(rc_t *c, const void *data, size_t len, unsigned pause_us);

/* Reads one response.  `head`: the request was HEAD (no body follows).
 * Returns RC_OK or an RC_* error; `r` is always safe to rc_response_free.
 * HTTP/2: RC_OK when the stream ended (END_STREAM), RC_TRUNC when it was
 * reset or the connection ended after the head, RC_EOF when either came
 * before any head, RC_ERR (err EAGAIN) on a timeout, RC_BAD when a HEAD
 * response had a body; an interim (1xx) head is not a response. */
int rc_read_response(rc_t *c, rc_response_t *r, int head);
void rc_response_free(rc_response_t *r);
/* Frees every response not yet freed (after a failed assertion). */
void rc_free_all_responses(void);
/* First value of a field (case-insensitive name), or NULL. */
const char *rc_header(const rc_response_t *r, const char *name);
size_t rc_header_count(const rc_response_t *r, const char *name);
/* First value of a trailer field (case-insensitive name), or NULL. */
const char *rc_trailer(const rc_response_t *r, const char *name);

/* Whether the server said the connection ends after response `r`:
 * HTTP/1.1 "Connection: close"; HTTP/2 a GOAWAY received by the time the
 * response was read. */
int rc_told_to_close(const rc_t *c, const rc_response_t *r);

/* After a response: does the connection end here?  Returns 1 on EOF with no
 * further byte, 2 on a reset with no further byte, 0 when more bytes came
 * (or are buffered), -1 on timeout (still open after RC_TIMEOUT_MS). */
int rc_expect_closed(rc_t *c);
/* Nonzero when rc_read_response's result means "closed, no response". */
int rc_closed_without_response(const rc_t *c, int read_rc);
/* Reads and discards until EOF or reset.  Returns 1 then, -1 on timeout.
 * *discarded (may be NULL) gets the byte count (buffered bytes included). */
int rc_drain_until_closed(rc_t *c, size_t *discarded);
/* HTTP/2: rc_expect_closed and rc_drain_until_closed run the session until
 * the connection ends, reading what comes; 1 then (discarded 0), -1 on
 * timeout. */
/* Whether bytes are ready to read within `ms` (poll).  1, 0, or -1.
 * HTTP/2: whether the socket is readable. */
int rc_readable(rc_t *c, int ms);

#endif
