/* SPDX-License-Identifier: MIT */
/*
 * A connection's output queue (out.c).  It exists only while the
 * connection has output queued or in flight: taken from the loop's pool
 * with the first byte queued, given back (with its buffer block) once
 * everything was written, so an idle connection holds none.
 *
 * These functions report errors by return value; they never close or free
 * the connection (that is conn.c's decision).
 */
#ifndef HR_SERVER_OUT_H
#define HR_SERVER_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "hroute/http.h"
#include "server/net/transport.h"

typedef struct hr__conn_s hr__conn_t;

/* One piece of output: bytes in the batch buffer (borrowed == NULL and
 * fd < 0, at `off`), a borrowed body (released through `release`), or
 * `len` bytes of the file `fd` from offset `off` (fd >= 0; released through
 * `file_release`, or closed when that is NULL). */
typedef struct hr__wseg_s {
  const char *borrowed;
  size_t off;
  size_t len;
  hr_release_cb release;
  hr_file_release_cb file_release;
  void *udata;
  hr_response_t *res; /* handed to release */
  int fd;
} hr__wseg_t;

#define HR__OUT_INLINE_SEGS 8

/* A batch of output: its memory segments leave with one system call, up
 * to a file segment, which leaves on its own (sendfile, or read into
 * `fbuf` a piece at a time), then the memory after it, and so on.  `pos`
 * is the first segment not yet written, of which `done` bytes are. */
typedef struct hr__wbatch_s {
  char *buf; /* a block of the loop's block pool while cap == block size */
  size_t len, cap;
  hr__wseg_t *segs; /* `inline_segs` until it outgrows them */
  size_t nsegs, segs_cap;
  uint64_t bytes;  /* queued bytes not yet written: buffer, borrowed, file */
  uint64_t fbytes; /* of which in files (they take no memory) */
  size_t pos, done;
  hr__wseg_t inline_segs[HR__OUT_INLINE_SEGS];
} hr__wbatch_t;

/* Bytes of a file read at a time for a transport without sendfile: on
 * the loop for a short file, on libuv's thread pool (a job per piece) for
 * one of HR__POOL_SENDFILE bytes or more. */
#define HR__FILE_PIECE 16384
#define HR__FILE_POOL_PIECE 65536


typedef struct hr__out_s {
  hr__wbatch_t pending;  /* being built */
  hr__wbatch_t inflight; /* being written, from its `pos` */
  hr__wreq_t wreq;
  size_t wend;           /* the write in flight ends before segment wend */
  uint64_t wbytes;       /* and holds this many bytes */
  unsigned wfile : 1;    /* of a file */
  uv_buf_t *wbufs;       /* inflight's buffers, while writing */
  size_t wbufs_cap;
  uv_buf_t small[16];
  char *fbuf;            /* fbuf_cap bytes, while a file is read */
  size_t fbuf_cap;
  size_t fready;         /* bytes of the current file piece in fbuf, read by a job */
  struct hr__fread_s *fjob; /* the piece being read on the thread pool (fread.h; owns fbuf) */
  uint64_t write_since;  /* loop time of the last write progress */
  size_t unacked;        /* the socket's unacknowledged bytes then */
  unsigned writing : 1;
  unsigned unacked_known : 1; /* the transport told `unacked` */
} hr__out_t;

struct hr__head_s;
int hr__out_append(hr__conn_t *c, const void *p, size_t n);
/* Renders the response head `h` (src/http/head.h) into the queue, with
 * `tail` (a short body, may be empty) right behind it.  0 or HR_ENOMEM. */
int hr__out_head(hr__conn_t *c, const struct hr__head_s *h, hr_span_t tail);
/* Room for `n` bytes at the end of the queue; then hr__out_commit. */
char *hr__out_reserve(hr__conn_t *c, size_t n);
int hr__out_commit(hr__conn_t *c, size_t n); /* 0 or HR_ENOMEM */
/* Queues a borrowed body (all or nothing); `release(res, p, udata)` runs
 * once it is written or dropped. */
int hr__out_borrow(hr__conn_t *c, hr_response_t *res, const void *p, size_t n,
                   hr_release_cb release, void *udata);
/* Queues `len` bytes of the file `fd` from `offset` (all or nothing);
 * `release(res, fd, udata)` runs once they are written or dropped, or the
 * fd is closed then when release is NULL. */
int hr__out_file(hr__conn_t *c, hr_response_t *res, int fd, uint64_t offset, uint64_t len,
                 hr_file_release_cb release, void *udata);
/* Our own write progressed (a transport write started or moved bytes):
 * the write deadline counts from now, and what the socket holds
 * unacknowledged now is what the peer's progress is measured against. */
void hr__out_progress(hr__conn_t *c);
/* Bytes queued and not yet written, files included. */
size_t hr__out_queued(const hr__conn_t *c);
/* The same without file bytes: the memory the queue holds for output,
 * which the write high-water mark bounds. */
size_t hr__out_queued_memory(const hr__conn_t *c);
/* Whether a write is in flight, or a file piece is being read for one. */
int hr__out_writing(const hr__conn_t *c);
/* Writes what is pending: a direct try-write, the rest handed to the
 * transport.  Returns 0 or a negative error (the connection is broken). */
int hr__out_flush(hr__conn_t *c);
/* The transport's write finished; returns `status`. */
int hr__out_write_done(hr__conn_t *c, int status);
/* Gives the queue back to the pool when nothing is queued or in flight. */
void hr__out_trim(hr__conn_t *c);
/* Drops everything queued (releasing borrowed bodies) and the queue. */
void hr__out_discard(hr__conn_t *c);

#endif /* HR_SERVER_OUT_H */
