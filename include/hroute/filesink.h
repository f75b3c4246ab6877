/* SPDX-License-Identifier: MIT */
/** @file
 * Saving a streaming request body, or one multipart/form-data part, to a
 * file or a descriptor without blocking the loop: the bytes are copied
 * into a bounded queue and written by libuv's thread pool (uv_fs_open,
 * uv_fs_write, uv_fs_fsync, uv_fs_close, uv_fs_unlink, one request at a
 * time, in order), and the body is paused (hr_request_body_pause) while
 * more than a high-water mark waits, so a disk slower than the client
 * costs the server that mark plus one piece of memory, not the body.
 * A write that fails (disk full, a file size limit, an I/O error) is
 * reported once, with libuv's code (the negated errno), to the sink's
 * callback, and every later write is refused: an upload is either written
 * whole or reported failed, never cut short in silence.  A short write
 * goes on from where it stopped.
 *
 * The shape, on a streaming route (HR_BODY_STREAM):
 *
 *     handler:        hr_file_sink_open(&sink, req, path, &o, saved, up);
 *                     hr_request_read_body(req, body, up);
 *     body(piece):    hr_file_sink_write(sink, piece)  (an error: the
 *                     callback is coming; or abort, then answer)
 *     body(status 1): hr_file_sink_finish(sink)
 *     body(< 0):      hr_file_sink_abort(sink), then complete the response
 *     saved(status):  answer 201, or hr_file_sink_http_status(status)
 *
 * For multipart/form-data (multipart.h), one sink per part: open it in
 * on_part, write in on_data, finish in on_part_end.  examples/upload.c is
 * a complete service.
 *
 * Threads: every call here is made on the loop thread that serves the
 * request (the handler's, its body callback's); the sink's callback runs
 * there too.  Calls from another thread return HR_ETHREAD (open cannot
 * tell, and must not be made from one).  The thread pool only ever sees
 * the queued bytes and the descriptor.
 *
 * Lifetime: a sink lives from a successful open until its callback
 * returned, or until hr_file_sink_abort returned, whichever comes first;
 * after that the handle must not be used (the memory of writes still in
 * flight after an abort is the sink's own, freed when they end).  A sink
 * uses `req` (to pause and resume its body) until then, or until a call
 * on it returned a write error: so complete the request's response only
 * after every sink of it called back, was aborted, or refused a write.
 * After a refused write the callback still runs (with `udata`): keep what
 * it points to until then, or abort the sink, which cancels it.  A client
 * that goes away is heard of through the body callback (status < 0) or,
 * once the body ended, the response's abort callback (hr_response_on_abort):
 * abort the sinks there, then complete the response.
 */
#ifndef HROUTE_FILESINK_H
#define HROUTE_FILESINK_H

#include <stdint.h>

#include "common.h"
#include "http.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A file or descriptor being written from a request body. */
typedef struct hr_file_sink_s hr_file_sink_t;

/** The default high-water mark: 256 KiB. */
#define HR_FILE_SINK_HIGH_WATER 262144u

/** How a sink writes; hr_file_sink_options_init fills the defaults in
 * brackets.  Copied by the open calls. */
typedef struct hr_file_sink_options_s {
  /** [HR_FILE_SINK_HIGH_WATER] bytes queued (accepted, not yet written)
   * above which the request body is paused; 0 is the default.  What is
   * queued never passes this mark by more than one piece (the write that
   * crossed it).  Sinks of one request share its pause: when another sink
   * resumes the body (the part before, saved), one more piece may come
   * before this one pauses it again. */
  size_t high_water_bytes;
  /** [0: high_water_bytes / 4] the body is resumed once the queue falls
   * to this or below (so setting only the high-water mark is enough).
   * Above high_water_bytes: HR_EINVAL. */
  size_t low_water_bytes;
  /** [0: none] more bytes than this in all: the write that would pass it
   * is refused with HR_ETOOLARGE (nothing of it is queued) and the sink
   * fails with that status. */
  uint64_t max_bytes;
  /** [0644] permission bits of a file hr_file_sink_open creates (before
   * the umask). */
  unsigned mode;
  /** [0] 1: hr_file_sink_open creates the file or fails with UV_EEXIST
   * (O_EXCL: an existing file, or a symbolic link, is never written
   * through); 0: an existing file is truncated (O_TRUNC). */
  int exclusive;
  /** [0] 1: fsync(2) the descriptor before the sink reports success, so
   * that a 201 means the bytes are on stable storage (a descriptor that
   * cannot be synced, a pipe or a socket, is taken as synced). */
  int sync;
  /** [1] 1: a file hr_file_sink_open opened is removed (unlink(2)) when
   * the sink fails or is aborted, so no partial file is left; 0: kept.
   * Nothing is removed for a descriptor (hr_file_sink_open_fd). */
  int remove_on_error;
  /** [NULL: libc's] where the sink's record and queue come from;
   * hr_response_allocator(res) gives the server's. */
  const hr_allocator_t *allocator;
} hr_file_sink_options_t;

/** Fills `o` with the defaults above.  Any thread. */
HR_EXTERN void hr_file_sink_options_init(hr_file_sink_options_t *o);

/**
 * Called once per sink, on the request's loop thread, never inside a call
 * on the sink: when everything it took was written (and, with `sync`,
 * fsynced) and a file it opened is closed (status 0), or when it failed
 * (status < 0: the descriptor it opened is closed and, with
 * remove_on_error, the file removed).  `bytes` is what reached the file
 * or descriptor.  status is 0, or
 *   UV_ENOSPC, UV_EFBIG, -EDQUOT, UV_EIO, ...  a write, fsync or close
 *              failed (libuv's codes are negated errno values: -status is
 *              the errno; a write that made no progress is UV_EIO; a file
 *              past RLIMIT_FSIZE is UV_EFBIG only where SIGXFSZ is
 *              ignored, its default action ends the process);
 *   UV_EEXIST, UV_EACCES, UV_ENOENT, ...  hr_file_sink_open could not
 *              open the path (nothing was written);
 *   HR_ETOOLARGE  max_bytes was passed;
 *   HR_ENOMEM  a write could not be queued.
 * hr_file_sink_http_status(status) is the answer for it.  `sink` is valid
 * during the call only: it is freed when the callback returns.  The
 * request's body is no longer paused by the sink when this runs (unless
 * the sink refused a write before, when it let go of the request then).
 */
typedef void (*hr_file_sink_cb)(hr_file_sink_t *sink, int status, uint64_t bytes,
                                void *udata);

/**
 * Opens `path` for writing (O_WRONLY | O_CREAT | O_CLOEXEC, with O_EXCL or
 * O_TRUNC as opts->exclusive says, mode opts->mode) on the thread pool and
 * returns the sink at once: writes made before the file is open are
 * queued, and an open that fails is reported to `cb` (UV_EEXIST,
 * UV_EACCES, ...).  `path` is copied.  The sink closes the descriptor it
 * opened.  `req` is the request whose body is written: a streaming route's
 * (HR_BODY_STREAM), whose body the sink pauses and resumes; `opts` may be
 * NULL (the defaults).
 *
 * Returns 0 and stores the sink in *out (`cb` runs exactly once later,
 * unless the sink is aborted first), or HR_EINVAL (a NULL argument, a
 * low-water mark above the high-water mark), HR_ENOMEM; on an error nothing was opened and `cb` never runs.  Loop
 * thread of the request.
 */
HR_EXTERN int hr_file_sink_open(hr_file_sink_t **out, hr_request_t *req, const char *path,
                                const hr_file_sink_options_t *opts, hr_file_sink_cb cb,
                                void *udata);

/**
 * The same for a descriptor the caller owns and keeps: the sink writes to
 * it from its current position (write(2), so a pipe, a FIFO or a socket
 * works) and never closes it; close it in the callback or after the
 * abort.  The writes run on the thread pool, where a blocking descriptor
 * may block (holding one of libuv's pool threads, UV_THREADPOOL_SIZE, 4 by
 * default): a non-blocking one that is full fails with UV_EAGAIN.
 * opts->mode, exclusive and remove_on_error do not apply.  Returns as
 * hr_file_sink_open, HR_EINVAL also for fd < 0.  Loop thread.
 */
HR_EXTERN int hr_file_sink_open_fd(hr_file_sink_t **out, hr_request_t *req, int fd,
                                   const hr_file_sink_options_t *opts, hr_file_sink_cb cb,
                                   void *udata);

/**
 * Queues a copy of `data` (any length; empty is a no-op) to be written
 * after what was queued before.  When more than high_water_bytes are
 * queued afterwards, the request's body is paused (hr_request_body_pause,
 * also from inside the body callback: the rest of the current read waits)
 * until the queue falls to low_water_bytes.
 *
 * Returns 0, or
 *   the sink's failure (UV_ENOSPC, UV_EEXIST, ... as the callback gets
 *              it): a write or the open failed before; nothing is queued,
 *              the callback is still to come (or running), and the sink
 *              let go of the request (it will not resume its body);
 *   HR_ETOOLARGE  max_bytes would be passed (the sink fails with it);
 *   HR_ENOMEM  the copy could not be made (the sink fails with it);
 *   HR_ESTATE  after hr_file_sink_finish;
 *   HR_EINVAL  a NULL sink, or data.ptr NULL with data.len > 0;
 *   HR_ETHREAD another thread: nothing was done.
 * Loop thread.
 */
HR_EXTERN int hr_file_sink_write(hr_file_sink_t *sink, hr_span_t data);

/**
 * No more writes: what is queued is written, then (opts->sync) fsynced,
 * then a file the sink opened is closed, then the callback runs with the
 * result.  Until then the request's body stays paused when anything is
 * left to do, so that the next part of a multipart body is not taken
 * faster than this one is saved (for a whole body, which has ended, the
 * pause changes nothing).  Returns 0 (the result comes to the callback,
 * also for a sink that failed already), HR_ESTATE (called twice),
 * HR_EINVAL (NULL), HR_ETHREAD.  Loop thread.
 */
HR_EXTERN int hr_file_sink_finish(hr_file_sink_t *sink);

/**
 * Gives up: nothing more is written (what is in flight on the thread pool
 * completes there), a file the sink opened is closed and, with
 * remove_on_error, removed, and the callback never runs.  The sink does
 * not touch `req` again, not even to resume a body it paused (resume it
 * yourself to go on reading; an answer ends it anyway), so the response
 * may be completed as soon as this returned: the way out when the client
 * went away (a body status < 0, the abort callback) or the handler
 * answers early.  The handle is invalid afterwards; the sink frees itself
 * once its last request on the pool ended.  NULL is a no-op; so is a call
 * from another thread (a bug, which is not checked further).  Loop
 * thread.
 */
HR_EXTERN void hr_file_sink_abort(hr_file_sink_t *sink);

/** Bytes accepted and not yet written (the queue, what is in flight
 * included).  Loop thread. */
HR_EXTERN size_t hr_file_sink_queued(const hr_file_sink_t *sink);

/** Bytes written so far.  Loop thread. */
HR_EXTERN uint64_t hr_file_sink_written(const hr_file_sink_t *sink);

/**
 * The HTTP status that answers a sink's failure `err`: 507 Insufficient
 * Storage (RFC 4918 §11.5) for a full disk, a quota or a file size limit
 * (UV_ENOSPC, -EDQUOT, UV_EFBIG), 413 for HR_ETOOLARGE, 409 Conflict for
 * UV_EEXIST (an exclusive open found the name taken), 503 for HR_ENOMEM,
 * 500 for the rest (an I/O error, a path that cannot be opened); 201 for
 * 0.  Any thread.
 */
HR_EXTERN int hr_file_sink_http_status(int err);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_FILESINK_H */
