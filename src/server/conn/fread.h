/* SPDX-License-Identifier: MIT */
/*
 * A piece of a file read on libuv's thread pool for a connection's output
 * (conn/out.c for HTTP/1.1 over transports without sendfile, h2/h2_proto.c
 * for DATA frames), so that a slow disk never stalls the loop.  While it
 * runs the job owns the piece's buffer and a descriptor of the file of its
 * own (a handler may close its descriptor meanwhile), and holds the
 * connection record (hr__conn_hold).  Its owner may forget it (the
 * response or stream ended): the job then frees the buffer when it is back
 * and calls nothing.  Loop thread only.
 */
#ifndef HR_SERVER_CONN_FREAD_H
#define HR_SERVER_CONN_FREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct hr__conn_s hr__conn_t;
typedef struct hr__fread_s hr__fread_t;

/* The piece is back, on the loop thread: `buf` (cap bytes, the owner's
 * again) holds `n` bytes of it; n 0 means the file ended before (it
 * shrank), a negative n is an errno or libuv error. */
typedef void (*hr__fread_done_fn)(void *owner, char *buf, size_t cap, ssize_t n);

/* Reads `len` bytes (len <= cap) at `off` of `fd` into `buf` (cap bytes,
 * the job's until it is back).  Returns the job, or NULL (out of memory or
 * descriptors: `buf` is still the caller's, who reads on the loop). */
hr__fread_t *hr__fread_start(hr__conn_t *c, int fd, uint64_t off, char *buf, size_t cap,
                             size_t len, hr__fread_done_fn done, void *owner);

/* The owner no longer wants the piece: `done` is not called; the job
 * frees the buffer when it is back. */
void hr__fread_forget(hr__fread_t *j);

#endif /* HR_SERVER_CONN_FREAD_H */
