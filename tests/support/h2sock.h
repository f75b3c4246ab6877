/* SPDX-License-Identifier: MIT */
/*
 * The byte stream under the HTTP/2 test clients: a loopback TCP connection,
 * plain (the raw client's socket, rawclient.h) or TLS (tlsfx.h's client,
 * offering an ALPN list), switched to non-blocking after connecting so a
 * client can read while it writes and never deadlocks against a server
 * that stops reading while it answers.  Waits are bounded: no progress for
 * RC_TIMEOUT_MS fails the call (errno EAGAIN in err), so a server bug fails
 * a test instead of hanging it.  One thread at a time.
 */
#ifndef HR_TEST_H2SOCK_H
#define HR_TEST_H2SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rawclient.h"
#include "tlsfx.h"

/* A growable byte buffer: bytes p[off..len) are pending (not yet sent, or
 * not yet parsed).  Zero-initialise it; h2_bytes_free releases it. */
typedef struct h2_bytes_s {
  uint8_t *p;
  size_t off, len, cap;
} h2_bytes_t;

/* Appends n bytes (p may be NULL: n zero bytes).  Returns where they start
 * in b->p (valid until the next append). */
uint8_t *h2_bytes_add(h2_bytes_t *b, const void *p, size_t n);
/* Drops the first n pending bytes; the buffer is compacted when empty. */
void h2_bytes_consume(h2_bytes_t *b, size_t n);
/* Pending bytes. */
size_t h2_bytes_pending(const h2_bytes_t *b);
void h2_bytes_free(h2_bytes_t *b);

/* How to reach the server. */
typedef struct h2s_options_s {
  /* NULL: plain TCP.  Else TLS, trusting this certificate. */
  const tf_cert_t *trust;
  /* TLS: the ALPN list offered, wire format; NULL offers "h2" alone. */
  const char *alpn;
  size_t alpn_len;
  /* TLS: the SNI name; NULL sends none. */
  const char *sni;
  /* > 0: SO_RCVBUF in bytes, set before connecting (plain) or right after
   * the handshake (TLS): a small buffer makes a slow reader push back
   * sooner. */
  int rcvbuf;
} h2s_options_t;

typedef struct h2s_s {
  int fd;
  rc_t *plain;     /* plain TCP: the connection (its buffer is unused) */
  tf_conn_t tls;   /* TLS: the connection, when is_tls */
  int is_tls;
  int eof;         /* the peer closed (a read returned 0) */
  int err;         /* errno of the last failure (EAGAIN: timed out) */
} h2s_t;

/* Fills `o` with the defaults: plain TCP, no receive-buffer change. */
void h2s_options_init(h2s_options_t *o);
/* Connects to 127.0.0.1:port (and completes the TLS handshake).  Returns 0,
 * or -1 with *s closed and s->err set (ECONNREFUSED, EPROTO for a refused
 * handshake...). */
int h2s_open(h2s_t *s, int port, const h2s_options_t *o);
/* The protocol ALPN selected ("h2", "http/1.1"), NUL-terminated into out;
 * "" when none was (or on plain TCP).  Returns out. */
char *h2s_alpn(const h2s_t *s, char *out, size_t cap);
/* Writes what the socket takes now.  Returns the bytes written (> 0), 0
 * when it would block, or -1 on an error (s->err). */
ssize_t h2s_write_some(h2s_t *s, const void *p, size_t n);
/* Reads what is there now.  Returns the bytes read (> 0), 0 when nothing
 * is ready, or -1 at EOF (s->eof) or on an error (s->err). */
ssize_t h2s_read_some(h2s_t *s, void *p, size_t n);
/* Waits up to `ms` for the socket to become readable (`want_read`) or
 * writable (`want_write`).  Returns a mask: 1 readable, 2 writable; 0 on
 * timeout.  TLS bytes already decrypted count as readable. */
int h2s_wait(h2s_t *s, int want_read, int want_write, int ms);
/* Writes every byte, waiting while the socket is full; RC_TIMEOUT_MS
 * without progress fails it.  Never reads.  Returns 0, or -1 (s->err:
 * EAGAIN timed out, EPIPE / ECONNRESET the server closed). */
int h2s_send_all(h2s_t *s, const void *p, size_t n);
/* Receives bytes read by h2s_step; returns 0 to go on, -1 to stop. */
typedef int (*h2s_read_cb)(void *arg, const uint8_t *p, size_t n);
/* One step of a client's loop: waits up to `ms` for the socket to be
 * writable (when `out` has pending bytes) or readable (when `reading`),
 * then writes what it takes from `out` and passes what was read to
 * on_read.  Returns 1 when something was written or read, 0 when nothing
 * happened within `ms`, -1 when the connection ended (s->eof or s->err) or
 * on_read asked to stop. */
int h2s_step(h2s_t *s, h2_bytes_t *out, int reading, int ms,
             h2s_read_cb on_read, void *arg);
/* Closes the connection (TLS: after a close_notify when possible); `rst`
 * nonzero closes with SO_LINGER 0, so the server sees a reset. */
void h2s_close(h2s_t *s, int rst);

#endif
