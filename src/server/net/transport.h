/* SPDX-License-Identifier: MIT */
/*
 * The transport: what a connection reads from and writes to, as a small
 * table of operations.  A connection never knows which implementation it
 * has: TCP (tcp.c, a socket polled by the loop) and the loopback sink
 * (sink.c, bytes fed and collected in process, for tests, fuzzing and the
 * in-process benchmarks) are the two there are; TLS is meant to be the third.
 *
 * The owner (the connection) hears back through a table of events, each
 * called on the loop thread and never inside the operation that caused it.
 * Until the `closed` event the transport's memory must stay valid; the owner
 * frees it after that event, not before.
 */
#ifndef HR_SERVER_TRANSPORT_H
#define HR_SERVER_TRANSPORT_H

#include <sys/socket.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "hroute/tls.h"

typedef struct hr__transport_s hr__transport_t;

/* A write that completes later: the caller owns the request and the bytes
 * its buffers point at until the write_done event.  `bufs` is advanced by
 * the transport as bytes leave.  With fd >= 0 (only for a transport with
 * try_sendfile) it writes `flen` bytes of the file `fd` from `foff`
 * instead, both advanced as they leave. */
#define HR__WRITE_MORE 1u

/* File ranges at least this long are sent on libuv's thread pool by the
 * TCP transport's write (sendfile reads the disk). */
#define HR__POOL_SENDFILE ((size_t)64 << 10)

typedef struct hr__wreq_s {
  uv_buf_t *bufs;
  unsigned nbufs;
  unsigned flags; /* HR__WRITE_MORE, as for try_write */
  int fd;
  uint64_t foff, flen;
} hr__wreq_t;

typedef struct hr__transport_events_s {
  /* Where the next read goes.  A buffer of length 0 means "none": the read
   * event then gets UV_ENOBUFS. */
  void (*alloc)(void *owner, uv_buf_t *buf);
  /* `nread` > 0 bytes were read into the last buffer from alloc; UV_EOF
   * when the peer shut its write side; another negative libuv error when
   * the connection failed. */
  void (*read)(void *owner, ssize_t nread);
  /* Part of the write started by ops->write went out (more is to come):
   * the write is progressing. */
  void (*write_progress)(void *owner);
  /* The write started by ops->write completed (0) or failed (< 0). */
  void (*write_done)(void *owner, int status);
  /* The transport is closed; its memory may be freed now. */
  void (*closed)(void *owner);
} hr__transport_events_t;

typedef struct hr__transport_ops_s {
  /* Start / stop read events.  Return 0 or a libuv error. */
  int (*read_start)(hr__transport_t *t);
  void (*read_stop)(hr__transport_t *t);
  /* Writes what it can of `bufs` now.  HR__WRITE_MORE in `flags`: more
   * follows at once (a file after a response head), so TCP may hold these
   * bytes back to leave in one segment with it (MSG_MORE).  Returns the
   * number of bytes written (0 when nothing could be), or a negative libuv
   * error. */
  ssize_t (*try_write)(hr__transport_t *t, const uv_buf_t *bufs, unsigned n,
                       unsigned flags);
  /* Writes all of req->bufs (or its file range); write_done follows.  One
   * write at a time.  Returns 0 or a negative libuv error (write_done then
   * never runs). */
  int (*write)(hr__transport_t *t, hr__wreq_t *req);
  /* Sends what it can now of `len` bytes of the file `fd` from `*off`
   * without copying them through user space, advancing *off.  Returns the
   * bytes sent (0 when there is no room now), UV_EOF when the file ends
   * first, or a negative libuv error.  NULL for a transport that cannot
   * (TLS, the sink): the output queue reads the file for it. */
  ssize_t (*try_sendfile)(hr__transport_t *t, int fd, uint64_t *off, size_t len);
  /* Shuts the write side down (FIN) once no write is in flight.  Returns 0
   * or a negative libuv error. */
  int (*shutdown)(hr__transport_t *t);
  /* Closes: no event but `closed` follows, and a write in flight is
   * dropped (write_done does not run).  `abort` asks for an abortive close
   * (TCP: a reset instead of FIN, unsent bytes discarded), for a message
   * cut short that the peer must not take for a complete one. */
  void (*close)(hr__transport_t *t, int abort);
  /* Addresses (*len in: the size of *addr; out: the address length).
   * Return 0 or a negative libuv error (UV_ENOTCONN without a socket). */
  int (*peer)(const hr__transport_t *t, struct sockaddr *addr, int *len);
  int (*local)(const hr__transport_t *t, struct sockaddr *addr, int *len);
  /* What the kernel holds for the connection's socket: bytes received and
   * not yet read (*unread), and bytes written that the peer has not yet
   * acknowledged (*unacked).  Returns 0, or a negative libuv error
   * (UV_ENOTSUP without a socket: the sink).  For deadlines: a timer that
   * fires late, or a slow reader that the writable event reports only
   * every half a send buffer, is judged by what the peer did. */
  int (*queues)(const hr__transport_t *t, size_t *unread, size_t *unacked);
  /* What TLS negotiated: 0, or HR_ENOTFOUND (not TLS). */
  int (*tls_info)(const hr__transport_t *t, hr_tls_info_t *info);
  /* The verified client certificate, into memory from `alloc(ctx, n)`:
   * 0, HR_ENOTFOUND (not TLS, or none), HR_ENOMEM. */
  int (*tls_client)(const hr__transport_t *t, int der,
                    void *(*alloc)(void *ctx, size_t n), void *ctx,
                    hr_span_t *subject, hr_span_t *cert);
  /* For a transport made raw (TLS behind a PROXY protocol header): the
   * owner has read the header, and what it read after it, `early` (n
   * bytes, copied), is the transport's own (the start of the TLS
   * handshake); from now on it reads as itself.  Returns 0 or HR_ENOMEM.
   * NULL for a transport whose bytes are the owner's from the first (TCP,
   * the sink). */
  int (*begin)(hr__transport_t *t, const char *early, size_t n);
} hr__transport_ops_t;

/* The common head of every transport. */
struct hr__transport_s {
  const hr__transport_ops_t *ops;
  const hr__transport_events_t *ev;
  void *owner;
};

/* Advances `req` past `n` written bytes (and empty buffers); returns 1
 * when all of it is written. */
int hr__wreq_advance(hr__wreq_t *req, size_t n);
/* tls_info and tls_client of a transport that is not TLS: HR_ENOTFOUND. */
int hr__no_tls_info(const hr__transport_t *t, hr_tls_info_t *info);
int hr__no_tls_client(const hr__transport_t *t, int der,
                      void *(*alloc)(void *ctx, size_t n), void *ctx,
                      hr_span_t *subject, hr_span_t *cert);

/* Blocks SIGPIPE in the calling thread for good (a worker thread the
 * server started), so file bodies go out without masking it per call. */
void hr__tcp_block_sigpipe(void);

/* The TCP transport's size, for allocating it behind a connection record. */
size_t hr__tcp_size(void);
/* Makes a TCP transport at `t` (hr__tcp_size() bytes) over the connected,
 * non-blocking socket `fd`, which it then owns (closed by ops->close).
 * Long file ranges are sent on libuv's thread pool, with jobs from `a`
 * (NULL: always on the loop).  Returns 0 or a libuv error (the caller
 * still owns fd then). */
int hr__tcp_init(hr__transport_t *t, uv_loop_t *loop, const hr_allocator_t *a, int fd,
                 const hr__transport_events_t *ev, void *owner);

/* The loopback sink (sink.c): output goes to `sink` synchronously, input is
 * fed by the caller. */
typedef void (*hr__sink_cb)(void *ctx, const char *p, size_t n);
size_t hr__sink_size(void);
void hr__sink_init(hr__transport_t *t, uv_loop_t *loop, hr__sink_cb sink,
                   void *ctx, const hr__transport_events_t *ev, void *owner);
/* Feeds bytes as if read, while the owner reads and has buffer room;
 * returns how many were taken. */
size_t hr__sink_feed(hr__transport_t *t, const char *p, size_t n);
/* Reports the end of input (UV_EOF) as if read. */
void hr__sink_eof(hr__transport_t *t);

#endif /* HR_SERVER_TRANSPORT_H */
