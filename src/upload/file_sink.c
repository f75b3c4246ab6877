/* SPDX-License-Identifier: MIT */
/*
 * A request body written to a file or a descriptor on libuv's thread pool
 * (include/hroute/filesink.h).  The sink keeps a queue of copied blocks and
 * one uv_fs request at a time, in order: the open, then writes (a writev of
 * what is queued, at most MAX_IOV blocks), then at the end an fsync, a
 * close and, for a failure, an unlink; a uv_work_t that does nothing puts
 * the callback on a later loop turn when no file operation is left to
 * carry it.  Only the public API is used (http.h's pause and resume), as
 * an application's own writer would.
 *
 * Lifetime: the record outlives its requests on the pool.  `busy` says one
 * is in flight; abort only marks the record, and whatever completes next
 * carries on to the close and the free, so a request never completes into
 * freed memory.  The request (`req`) is touched only to pause and resume
 * its body, and only until the sink lets go of it: before its callback,
 * at a failure, at an abort (filesink.h states the handler's side).
 *
 * Memory: blocks of at least BLOCK_MIN bytes, filled in order; a block
 * that a write was submitted for is sealed (the pool reads it) and never
 * appended to again.  What is allocated is the queue plus at most two
 * partly filled blocks, so the body's pause bounds it too.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <uv.h>

#include "hroute/error.h"
#include "hroute/filesink.h"

/* Smallest block: a piece larger than this gets a block of its own size. */
#define BLOCK_MIN 16384
/* Most blocks one writev takes (Linux's IOV_MAX is 1024). */
#define MAX_IOV 64

typedef struct block_s {
  struct block_s *next;
  size_t off;  /* bytes of data[] already written */
  size_t len;  /* bytes of data[] filled */
  size_t cap;
  int sealed;  /* a write was submitted for it: no more appends */
  char data[];
} block_t;

struct hr_file_sink_s {
  uv_fs_t fs;      /* the one file request on the pool */
  uv_work_t defer; /* or the no-op that carries the callback */
  uv_loop_t *loop;
  uv_thread_t thread;
  hr_request_t *req; /* NULL once the sink let go of it */
  const hr_allocator_t *a;
  hr_file_sink_cb cb;
  void *udata;
  hr_file_sink_options_t o;
  char *path; /* a copy, for the unlink; NULL for a descriptor */
  int fd;     /* -1 while opening and after the close */
  int err;    /* the first failure, 0 until one */
  unsigned own : 1;      /* opened here: closed here */
  unsigned opened : 1;   /* the open succeeded: a file to remove */
  unsigned busy : 1;     /* fs or defer is in flight */
  unsigned paused : 1;   /* the sink paused the body */
  unsigned finishing : 1;
  unsigned synced : 1;
  unsigned removed : 1;
  unsigned aborted : 1;
  block_t *head, *tail;
  size_t queued;     /* bytes of the blocks not yet written */
  uint64_t accepted; /* bytes taken by hr_file_sink_write */
  uint64_t written;
};

static void pump(hr_file_sink_t *s);

static int on_thread(const hr_file_sink_t *s) {
  uv_thread_t self = uv_thread_self();
  return uv_thread_equal(&self, &s->thread);
}

void hr_file_sink_options_init(hr_file_sink_options_t *o) {
  if (o == NULL) return;
  memset(o, 0, sizeof *o);
  o->high_water_bytes = HR_FILE_SINK_HIGH_WATER;
  o->low_water_bytes = 0; /* a quarter of whatever high_water_bytes becomes */
  o->mode = 0644;
  o->remove_on_error = 1;
}

/* ---- the queue ------------------------------------------------------------ */

/* Frees the blocks; while a write is in flight the sealed ones at the head
 * stay (the pool reads them), and its completion frees them. */
static void drop_queue(hr_file_sink_t *s) {
  block_t **at = &s->head, *b, *last = NULL;
  while ((b = *at) != NULL) {
    if (s->busy && b->sealed) {
      last = b;
      at = &b->next;
      continue;
    }
    *at = b->next;
    s->queued -= b->len - b->off;
    s->a->free(s->a->ctx, b);
  }
  s->tail = last;
}

/* Copies `data` to the end of the queue.  0 or HR_ENOMEM (part of it may
 * be queued then: the sink fails, which drops it). */
static int append(hr_file_sink_t *s, const char *p, size_t len) {
  while (len > 0) {
    block_t *b = s->tail;
    size_t n;
    if (b == NULL || b->sealed || b->len == b->cap) {
      size_t cap = len > BLOCK_MIN ? len : BLOCK_MIN;
      b = s->a->malloc(s->a->ctx, sizeof *b + cap);
      if (b == NULL) return HR_ENOMEM;
      b->next = NULL;
      b->off = b->len = 0;
      b->cap = cap;
      b->sealed = 0;
      if (s->tail != NULL)
        s->tail->next = b;
      else
        s->head = b;
      s->tail = b;
    }
    n = b->cap - b->len < len ? b->cap - b->len : len;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    s->queued += n;
    p += n;
    len -= n;
  }
  return 0;
}

/* `n` bytes at the head were written: frees the blocks done with. */
static void consume(hr_file_sink_t *s, size_t n) {
  while (n > 0 && s->head != NULL) {
    block_t *b = s->head;
    size_t k = b->len - b->off < n ? b->len - b->off : n;
    b->off += k;
    n -= k;
    s->queued -= k;
    s->written += k;
    if (b->off == b->len) {
      s->head = b->next;
      if (s->head == NULL) s->tail = NULL;
      s->a->free(s->a->ctx, b);
    }
  }
}

/* ---- the request ---------------------------------------------------------- */

/* The sink is done with the request: it resumes a body it paused (the
 * handler may answer next, which ends the body first) and never touches
 * `req` again. */
static void let_go(hr_file_sink_t *s) {
  if (s->req != NULL && s->paused) (void)hr_request_body_resume(s->req);
  s->paused = 0;
  s->req = NULL;
}

static void fail(hr_file_sink_t *s, int err) {
  if (s->err == 0) s->err = err;
  drop_queue(s);
  let_go(s);
}

/* ---- the pool's requests ---------------------------------------------------- */

static void free_sink(hr_file_sink_t *s) {
  const hr_allocator_t *a = s->a;
  s->busy = 0;
  drop_queue(s);
  a->free(a->ctx, s->path);
  a->free(a->ctx, s);
}

static void noop_work(uv_work_t *w) { (void)w; }

/* The end, on a loop turn after the call that led to it. */
static void after_defer(uv_work_t *w, int status) {
  hr_file_sink_t *s = w->data;
  hr_file_sink_cb cb = s->cb;
  (void)status;
  s->busy = 0;
  if (s->aborted) {
    /* Aborted with its result on the way: a file it wrote whole is
     * removed all the same (nobody was told it was saved). */
    pump(s);
    return;
  }
  let_go(s);
  s->cb = NULL;
  cb(s, s->err, s->written, s->udata);
  free_sink(s);
}

static void on_open(uv_fs_t *r) {
  hr_file_sink_t *s = r->data;
  ssize_t res = r->result;
  uv_fs_req_cleanup(r);
  s->busy = 0;
  if (res < 0) {
    if (!s->aborted) fail(s, (int)res);
  } else {
    s->fd = (int)res;
    s->opened = 1;
  }
  pump(s);
}

static void on_write(uv_fs_t *r) {
  hr_file_sink_t *s = r->data;
  ssize_t res = r->result;
  uv_fs_req_cleanup(r);
  s->busy = 0;
  /* libuv writes again after a short write and returns what the whole
   * writev took; an error after some bytes comes back as that short
   * count, and the error itself at the next write, from where it stopped. */
  if (res > 0) consume(s, (size_t)res);
  if (s->aborted || s->err != 0) {
    drop_queue(s);
  } else if (res < 0) {
    fail(s, (int)res);
  } else if (res == 0) {
    fail(s, UV_EIO); /* no progress: never spin on it */
  } else if (s->paused && !s->finishing && s->queued <= s->o.low_water_bytes &&
             s->req != NULL) {
    (void)hr_request_body_resume(s->req);
    s->paused = 0;
  }
  pump(s);
}

static void on_fsync(uv_fs_t *r) {
  hr_file_sink_t *s = r->data;
  ssize_t res = r->result;
  uv_fs_req_cleanup(r);
  s->busy = 0;
  s->synced = 1;
  /* EINVAL: a descriptor that cannot be synced (a pipe, a socket) holds
   * nothing to sync. */
  if (res < 0 && res != UV_EINVAL && !s->aborted) fail(s, (int)res);
  pump(s);
}

static void on_close(uv_fs_t *r) {
  hr_file_sink_t *s = r->data;
  ssize_t res = r->result;
  uv_fs_req_cleanup(r);
  s->busy = 0;
  s->fd = -1;
  /* A close can report a write-back failure (NFS): the bytes may be lost. */
  if (res < 0 && !s->aborted) fail(s, (int)res);
  pump(s);
}

static void on_unlink(uv_fs_t *r) {
  hr_file_sink_t *s = r->data;
  uv_fs_req_cleanup(r);
  s->busy = 0;
  pump(s);
}

static int submit_write(hr_file_sink_t *s) {
  uv_buf_t iov[MAX_IOV];
  unsigned n = 0;
  block_t *b;
  for (b = s->head; b != NULL && n < MAX_IOV; b = b->next) {
    b->sealed = 1;
    iov[n++] = uv_buf_init(b->data + b->off, (unsigned)(b->len - b->off));
  }
  return uv_fs_write(s->loop, &s->fs, s->fd, iov, n, -1, on_write);
}

/* Starts the next step when none is in flight: a write, the fsync, the
 * close, the unlink, then the callback (deferred) or, after an abort, the
 * free. */
static void pump(hr_file_sink_t *s) {
  int rc;
  for (;;) {
    if (s->busy) return;
    if (s->err == 0 && !s->aborted) {
      if (s->head != NULL) {
        rc = submit_write(s);
        if (rc == 0) break;
        fail(s, rc);
        continue;
      }
      if (!s->finishing) return;
      if (s->o.sync && !s->synced) {
        rc = uv_fs_fsync(s->loop, &s->fs, s->fd, on_fsync);
        if (rc == 0) break;
        fail(s, rc);
        continue;
      }
    }
    /* The end: success (finished, written, synced), a failure, an abort. */
    if (s->own && s->fd >= 0) {
      rc = uv_fs_close(s->loop, &s->fs, s->fd, on_close);
      if (rc == 0) break;
      /* Cannot happen with a callback; close it here rather than leak. */
      uv_fs_close(s->loop, &s->fs, s->fd, NULL);
      uv_fs_req_cleanup(&s->fs);
      s->fd = -1;
      continue;
    }
    if ((s->err != 0 || s->aborted) && s->opened && s->path != NULL &&
        s->o.remove_on_error && !s->removed) {
      s->removed = 1;
      if (uv_fs_unlink(s->loop, &s->fs, s->path, on_unlink) == 0) break;
      continue;
    }
    if (s->aborted) {
      free_sink(s);
      return;
    }
    if (uv_queue_work(s->loop, &s->defer, noop_work, after_defer) == 0) break;
    return; /* cannot fail with both callbacks given */
  }
  s->busy = 1;
}

/* ---- the calls ---------------------------------------------------------------- */

static int make(hr_file_sink_t **out, hr_request_t *req, const hr_file_sink_options_t *opts,
                hr_file_sink_cb cb, void *udata) {
  hr_file_sink_options_t o;
  const hr_allocator_t *a;
  hr_file_sink_t *s;
  if (out == NULL || req == NULL || cb == NULL) return HR_EINVAL;
  if (opts != NULL)
    o = *opts;
  else
    hr_file_sink_options_init(&o);
  if (o.high_water_bytes == 0) o.high_water_bytes = HR_FILE_SINK_HIGH_WATER;
  if (o.low_water_bytes == 0) o.low_water_bytes = o.high_water_bytes / 4;
  if (o.low_water_bytes > o.high_water_bytes) return HR_EINVAL;
  a = o.allocator != NULL ? o.allocator : hr_allocator_default();
  s = a->malloc(a->ctx, sizeof *s);
  if (s == NULL) return HR_ENOMEM;
  memset(s, 0, sizeof *s);
  s->fs.data = s;
  s->defer.data = s;
  s->loop = hr_request_loop(req);
  s->thread = uv_thread_self();
  s->req = req;
  s->a = a;
  s->cb = cb;
  s->udata = udata;
  s->o = o;
  s->fd = -1;
  *out = s;
  return 0;
}

int hr_file_sink_open(hr_file_sink_t **out, hr_request_t *req, const char *path,
                      const hr_file_sink_options_t *opts, hr_file_sink_cb cb, void *udata) {
  hr_file_sink_t *s;
  size_t n;
  int flags, rc;
  if (path == NULL || out == NULL) return HR_EINVAL;
  rc = make(&s, req, opts, cb, udata);
  if (rc != 0) return rc;
  n = strlen(path) + 1;
  s->path = s->a->malloc(s->a->ctx, n);
  if (s->path == NULL) {
    free_sink(s);
    return HR_ENOMEM;
  }
  memcpy(s->path, path, n);
  s->own = 1;
  flags = O_WRONLY | O_CREAT | O_CLOEXEC | (s->o.exclusive ? O_EXCL : O_TRUNC);
  rc = uv_fs_open(s->loop, &s->fs, s->path, flags, (int)s->o.mode, on_open);
  if (rc != 0) {
    free_sink(s);
    return rc;
  }
  s->busy = 1;
  *out = s;
  return 0;
}

int hr_file_sink_open_fd(hr_file_sink_t **out, hr_request_t *req, int fd,
                         const hr_file_sink_options_t *opts, hr_file_sink_cb cb, void *udata) {
  hr_file_sink_t *s;
  int rc;
  if (fd < 0 || out == NULL) return HR_EINVAL;
  rc = make(&s, req, opts, cb, udata);
  if (rc != 0) return rc;
  s->fd = fd;
  *out = s;
  return 0;
}

int hr_file_sink_write(hr_file_sink_t *s, hr_span_t data) {
  int rc;
  if (s == NULL || (data.ptr == NULL && data.len > 0)) return HR_EINVAL;
  if (!on_thread(s)) return HR_ETHREAD;
  if (s->finishing) return HR_ESTATE;
  if (s->err != 0) return s->err;
  if (data.len == 0) return 0;
  if (s->o.max_bytes != 0 &&
      (s->accepted > s->o.max_bytes || data.len > s->o.max_bytes - s->accepted)) {
    fail(s, HR_ETOOLARGE);
    pump(s);
    return HR_ETOOLARGE;
  }
  rc = append(s, data.ptr, data.len);
  if (rc != 0) {
    fail(s, rc);
    pump(s);
    return rc;
  }
  s->accepted += data.len;
  if (s->queued > s->o.high_water_bytes && s->req != NULL) {
    /* Every time, not once: another sink of the request (the part before
     * this one) may have resumed the body since. */
    (void)hr_request_body_pause(s->req);
    s->paused = 1;
  }
  pump(s);
  return 0;
}

int hr_file_sink_finish(hr_file_sink_t *s) {
  if (s == NULL) return HR_EINVAL;
  if (!on_thread(s)) return HR_ETHREAD;
  if (s->finishing) return HR_ESTATE;
  s->finishing = 1;
  if (s->req != NULL) {
    /* Held until the callback, which resumes it (let_go). */
    (void)hr_request_body_pause(s->req);
    s->paused = 1;
  }
  pump(s);
  return 0;
}

void hr_file_sink_abort(hr_file_sink_t *s) {
  if (s == NULL || !on_thread(s)) return;
  s->aborted = 1;
  s->req = NULL;
  s->paused = 0;
  s->cb = NULL;
  drop_queue(s);
  pump(s);
}

size_t hr_file_sink_queued(const hr_file_sink_t *s) { return s != NULL ? s->queued : 0; }

uint64_t hr_file_sink_written(const hr_file_sink_t *s) { return s != NULL ? s->written : 0; }

int hr_file_sink_http_status(int err) {
  if (err == 0) return 201;
  if (err == HR_ETOOLARGE) return 413;
  if (err == HR_ENOMEM) return 503;
  if (err == UV_EEXIST) return 409;
  if (err == UV_ENOSPC || err == UV_EFBIG || err == -EDQUOT) return 507;
  return 500;
}
