/* SPDX-License-Identifier: MIT */
/*
 * The connection's output queue.  Everything a connection sends is appended
 * to the `pending` batch (response heads and copied bodies into its buffer,
 * borrowed bodies and file ranges as references) and written when the
 * current processing step ends: all responses to the pipelined requests of
 * one read leave in one write, up to a file, which leaves with sendfile(2)
 * where the transport has it and is otherwise read a piece at a time into
 * one buffer, never faster than the peer takes it.  A direct try-write
 * goes first; what has to wait is handed to the transport's write while the
 * next batch is being built.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "http/head.h"
#include "server/conn/conn.h"
#include "server/conn/fread.h"

/* Largest segment: uv_buf_t lengths are unsigned ints elsewhere, and a
 * write returns a signed count. */
#define HR__SEG_MAX ((size_t)1 << 30)

static void batch_init(hr__wbatch_t *b) {
  b->buf = NULL;
  b->len = b->cap = 0;
  b->segs = b->inline_segs;
  b->nsegs = 0;
  b->segs_cap = HR__OUT_INLINE_SEGS;
  b->bytes = b->fbytes = 0;
  b->pos = b->done = 0;
}

static hr__out_t *out_get(hr__conn_t *c) {
  hr__out_t *o = c->out;
  if (o != NULL) return o;
  o = hr__pool_get(&c->w->opool);
  if (o == NULL) return NULL;
  batch_init(&o->pending);
  batch_init(&o->inflight);
  o->wbufs = o->small;
  o->wbufs_cap = sizeof(o->small) / sizeof(o->small[0]);
  o->fbuf = NULL;
  o->fbuf_cap = o->fready = 0;
  o->fjob = NULL;
  o->writing = 0;
  o->unacked_known = 0;
  o->write_since = uv_now(c->w->loop);
  c->out = o;
  return o;
}

static void seg_release(hr__wseg_t *s) {
  if (s->fd >= 0) {
    if (s->file_release != NULL)
      s->file_release(s->res, s->fd, s->udata);
    else
      close(s->fd);
  } else if (s->borrowed != NULL && s->release != NULL) {
    s->release(s->res, s->borrowed, s->udata);
  }
}

/* Written or dropped: every borrowed body and file is released. */
static void batch_release(hr__conn_t *c, hr__wbatch_t *b, int keep_buffer) {
  size_t i;
  for (i = 0; i < b->nsegs; i++) seg_release(&b->segs[i]);
  b->nsegs = 0;
  b->len = 0;
  b->bytes = b->fbytes = 0;
  b->pos = b->done = 0;
  if (!keep_buffer && b->buf != NULL) {
    if (b->cap == c->w->bpool.block_size)
      hr__pool_put(&c->w->bpool, b->buf);
    else
      hr__mem_free(&c->w->mem, b->buf);
    b->buf = NULL;
    b->cap = 0;
  }
}

static void batch_free_segs(hr__conn_t *c, hr__wbatch_t *b) {
  if (b->segs != b->inline_segs) hr__mem_free(&c->w->mem, b->segs);
  b->segs = b->inline_segs;
  b->segs_cap = HR__OUT_INLINE_SEGS;
}

static int batch_add_seg(hr__conn_t *c, hr__wbatch_t *b, hr__wseg_t seg) {
  if (b->nsegs == b->segs_cap) {
    size_t cap = b->segs_cap * 2;
    hr__wseg_t *n;
    if (b->segs == b->inline_segs) {
      n = hr__mem_alloc(&c->w->mem, cap * sizeof(*n));
      if (n != NULL) memcpy(n, b->segs, b->nsegs * sizeof(*n));
    } else {
      n = hr__mem_realloc(&c->w->mem, b->segs, cap * sizeof(*n));
    }
    if (n == NULL) return HR_ENOMEM;
    b->segs = n;
    b->segs_cap = cap;
  }
  b->segs[b->nsegs++] = seg;
  return 0;
}

char *hr__out_reserve(hr__conn_t *c, size_t n) {
  hr__out_t *o = out_get(c);
  hr__wbatch_t *b;
  size_t block = c->w->bpool.block_size;
  if (o == NULL) return NULL;
  b = &o->pending;
  if (b->buf == NULL) {
    if (n <= block) {
      b->buf = hr__pool_get(&c->w->bpool);
      b->cap = block;
    } else {
      b->buf = hr__mem_alloc(&c->w->mem, n);
      b->cap = n;
    }
    if (b->buf == NULL) {
      b->cap = 0;
      return NULL;
    }
  } else if (b->cap - b->len < n) {
    size_t cap = b->cap * 2;
    char *nb;
    if (cap < b->len + n) cap = b->len + n;
    if (b->cap == block) {
      nb = hr__mem_alloc(&c->w->mem, cap);
      if (nb == NULL) return NULL;
      memcpy(nb, b->buf, b->len);
      hr__pool_put(&c->w->bpool, b->buf);
    } else {
      nb = hr__mem_realloc(&c->w->mem, b->buf, cap);
      if (nb == NULL) return NULL;
    }
    b->buf = nb;
    b->cap = cap;
  }
  return b->buf + b->len;
}

int hr__out_commit(hr__conn_t *c, size_t n) {
  hr__wbatch_t *b = &c->out->pending;
  while (n > 0) {
    hr__wseg_t *last = b->nsegs ? &b->segs[b->nsegs - 1] : NULL;
    size_t take;
    if (last != NULL && last->borrowed == NULL && last->fd < 0 &&
        last->off + last->len == b->len && last->len < HR__SEG_MAX) {
      take = HR__SEG_MAX - last->len < n ? HR__SEG_MAX - last->len : n;
      last->len += take;
    } else {
      hr__wseg_t seg = {NULL, b->len, 0, NULL, NULL, NULL, NULL, -1};
      take = n < HR__SEG_MAX ? n : HR__SEG_MAX;
      seg.len = take;
      /* Out of memory for the segment array: the bytes stay unqueued. */
      if (batch_add_seg(c, b, seg) != 0) return HR_ENOMEM;
    }
    b->len += take;
    b->bytes += take;
    n -= take;
  }
  return 0;
}

int hr__out_append(hr__conn_t *c, const void *p, size_t n) {
  char *dst;
  if (n == 0) return 0;
  dst = hr__out_reserve(c, n);
  if (dst == NULL) return HR_ENOMEM;
  memcpy(dst, p, n);
  return hr__out_commit(c, n);
}

int hr__out_head(hr__conn_t *c, const hr__head_t *h, hr_span_t tail) {
  char *p = hr__out_reserve(c, hr__head_max(h) + tail.len);
  size_t n;
  if (p == NULL) return HR_ENOMEM;
  n = hr__head_render(h, p);
  if (tail.len) memcpy(p + n, tail.ptr, tail.len);
  return hr__out_commit(c, n + tail.len);
}

int hr__out_borrow(hr__conn_t *c, hr_response_t *res, const void *p, size_t n,
                   hr_release_cb release, void *udata) {
  hr__out_t *o = out_get(c);
  hr__wbatch_t *b;
  size_t first, done = 0;
  if (o == NULL) return HR_ENOMEM;
  b = &o->pending;
  first = b->nsegs;
  /* Pieces of at most HR__SEG_MAX bytes; the release callback goes with the
   * last one. */
  do {
    hr__wseg_t seg;
    size_t take = n - done < HR__SEG_MAX ? n - done : HR__SEG_MAX;
    seg.borrowed = (const char *)p + done;
    seg.off = 0;
    seg.len = take;
    seg.release = done + take == n ? release : NULL;
    seg.file_release = NULL;
    seg.udata = udata;
    seg.res = res;
    seg.fd = -1;
    if (batch_add_seg(c, b, seg) != 0) {
      b->nsegs = first; /* all or nothing */
      return HR_ENOMEM;
    }
    done += take;
  } while (done < n);
  b->bytes += n;
  return 0;
}

int hr__out_file(hr__conn_t *c, hr_response_t *res, int fd, uint64_t offset, uint64_t len,
                 hr_file_release_cb release, void *udata) {
  hr__out_t *o = out_get(c);
  hr__wseg_t seg;
  if (o == NULL) return HR_ENOMEM;
  if (len > SIZE_MAX || offset > SIZE_MAX - len) return HR_EINVAL;
  seg.borrowed = NULL;
  seg.off = (size_t)offset;
  seg.len = (size_t)len;
  seg.release = NULL;
  seg.file_release = release;
  seg.udata = udata;
  seg.res = res;
  seg.fd = fd;
  if (batch_add_seg(c, &o->pending, seg) != 0) return HR_ENOMEM;
  o->pending.bytes += len;
  o->pending.fbytes += len;
  return 0;
}

size_t hr__out_queued(const hr__conn_t *c) {
  return c->out == NULL ? 0 : c->out->pending.bytes + c->out->inflight.bytes;
}

size_t hr__out_queued_memory(const hr__conn_t *c) {
  const hr__out_t *o = c->out;
  return o == NULL ? 0
                   : o->pending.bytes - o->pending.fbytes + o->inflight.bytes -
                         o->inflight.fbytes;
}

int hr__out_writing(const hr__conn_t *c) {
  return c->out != NULL && (c->out->writing || c->out->fjob != NULL);
}

/* Swaps pending and inflight (inflight is empty), keeping the old inflight
 * buffer block and segment array for reuse. */
static void promote(hr__out_t *o) {
  hr__wbatch_t t = o->inflight;
  o->inflight = o->pending;
  o->pending = t;
  /* The inline arrays moved with the copy: point at the right ones. */
  if (o->inflight.segs == o->pending.inline_segs)
    o->inflight.segs = o->inflight.inline_segs;
  if (o->pending.segs == o->inflight.inline_segs)
    o->pending.segs = o->pending.inline_segs;
  o->pending.nsegs = 0;
  o->pending.len = 0;
  o->pending.bytes = o->pending.fbytes = 0;
  o->pending.pos = o->pending.done = 0;
}

/* Buffers for `n` segments: the inline array or a heap one kept for later
 * writes of this queue. */
static uv_buf_t *wbufs_for(hr__conn_t *c, hr__out_t *o, size_t n) {
  uv_buf_t *nb;
  if (n <= o->wbufs_cap) return o->wbufs;
  nb = hr__mem_alloc(&c->w->mem, n * sizeof(uv_buf_t));
  if (nb == NULL) return NULL;
  if (o->wbufs != o->small) hr__mem_free(&c->w->mem, o->wbufs);
  o->wbufs = nb;
  o->wbufs_cap = n;
  return nb;
}

/* `n` bytes of batch `b` (of a file range when `file`) went to the
 * transport: they leave the queue and count as sent. */
static void sent(hr__conn_t *c, hr__wbatch_t *b, uint64_t n, int file) {
  b->bytes -= n;
  if (file) b->fbytes -= n;
  hr__stat_add(&c->w->st_bytes_sent, n);
}

/* Hands the rest of the current unit to the transport's write: the batch
 * becomes (or stays) `inflight`, and writing stops until write_done. */
static int wait_for_room(hr__conn_t *c, hr__wbatch_t *b, size_t wend, uint64_t wbytes,
                         int file) {
  hr__out_t *o = c->out;
  int err;
  if (b == &o->pending) promote(o);
  o->wend = wend;
  o->wbytes = wbytes;
  o->wfile = (unsigned)(file != 0);
  err = c->t->ops->write(c->t, &o->wreq);
  if (err != 0) return err;
  o->writing = 1;
  hr__out_progress(c);
  return 1;
}

void hr__out_progress(hr__conn_t *c) {
  hr__out_t *o = c->out;
  size_t unread;
  o->unacked_known = c->t->ops->queues != NULL &&
                     c->t->ops->queues(c->t, &unread, &o->unacked) == 0;
  /* The deadline counts from no earlier than that measure: the loop's
   * time may be older (taken before this turn's callbacks, or before the
   * thread was preempted), and acknowledgements after it are in `unacked`
   * already. */
  if (o->unacked_known) uv_update_time(c->w->loop);
  o->write_since = uv_now(c->w->loop);
}

/* The memory segments from b->pos up to the next file: one try-write,
 * and the transport's write for what is left.  Returns 0 (written), 1
 * (waiting) or a negative error. */
static int run_memory(hr__conn_t *c, hr__wbatch_t *b) {
  hr__out_t *o = c->out;
  size_t end = b->pos, i, k;
  uint64_t total = 0, left;
  uv_buf_t *bufs;
  ssize_t n;
  unsigned more;
  while (end < b->nsegs && b->segs[end].fd < 0) end++;
  bufs = wbufs_for(c, o, end - b->pos);
  if (bufs == NULL) return HR_ENOMEM;
  for (i = b->pos; i < end; i++) {
    const hr__wseg_t *s = &b->segs[i];
    const char *p = s->borrowed != NULL ? s->borrowed : b->buf + s->off;
    size_t skip = i == b->pos ? b->done : 0;
    bufs[i - b->pos] = uv_buf_init((char *)p + skip, (unsigned)(s->len - skip));
    total += s->len - skip;
  }
  /* A file right behind: let the head leave in one segment with it. */
  more = end < b->nsegs && b->segs[end].len > 0 ? HR__WRITE_MORE : 0;
  n = c->t->ops->try_write(c->t, bufs, (unsigned)(end - b->pos), more);
  if (n < 0) return (int)n;
  if (n > 0) o->write_since = uv_now(c->w->loop);
  sent(c, b, (uint64_t)n, 0);
  if ((uint64_t)n == total) {
    b->pos = end;
    b->done = 0;
    return 0;
  }
  left = total - (uint64_t)n;
  for (k = 0; (size_t)n >= bufs[k].len; k++) n -= (ssize_t)bufs[k].len;
  bufs[k].base += n;
  bufs[k].len -= (size_t)n;
  o->wreq.bufs = bufs + k;
  o->wreq.nbufs = (unsigned)(end - b->pos - k);
  o->wreq.flags = more;
  o->wreq.fd = -1;
  return wait_for_room(c, b, end, left, 0);
}

/* A file read for a transport without sendfile: this many bytes of it in
 * one processing step at most, then the rest waits for the transport. */
#define HR__FILE_STEP ((uint64_t)1 << 20)

/* A piece read on the thread pool (fread.h) is back. */
static void piece_back(void *owner, char *buf, size_t cap, ssize_t n) {
  hr__conn_t *c = owner;
  hr__out_t *o = c->out;
  o->fjob = NULL;
  o->fbuf = buf;
  o->fbuf_cap = cap;
  if (n <= 0) {
    hr__conn_output_failed(c, n == 0 ? UV_EOF : (int)n); /* it shrank */
  } else {
    o->fready = (size_t)n;
    hr__conn_kick(c); /* run_file writes the piece */
  }
}

/* Reads `len` bytes at `off` of `fd` into the piece buffer on the thread
 * pool.  Returns 0 (started), or -1 (then the caller reads on the loop). */
static int fjob_start(hr__conn_t *c, int fd, uint64_t off, size_t len) {
  hr__out_t *o = c->out;
  o->fjob = hr__fread_start(c, fd, off, o->fbuf, o->fbuf_cap, len, piece_back, c);
  if (o->fjob == NULL) return -1;
  o->fbuf = NULL; /* the job's until it is back */
  o->fbuf_cap = 0;
  return 0;
}

/* The piece buffer, of at least `cap` bytes. */
static int fbuf_get(hr__conn_t *c, size_t cap) {
  hr__out_t *o = c->out;
  if (o->fbuf != NULL && o->fbuf_cap >= cap) return 0;
  if (o->fbuf != NULL) hr__mem_free(&c->w->mem, o->fbuf);
  o->fbuf_cap = 0;
  if ((o->fbuf = hr__mem_alloc(&c->w->mem, cap)) == NULL) return HR_ENOMEM;
  o->fbuf_cap = cap;
  return 0;
}

/* The file segment at b->pos: sendfile while the socket takes it, else
 * pieces read into o->fbuf (on the thread pool for a long file).  Returns
 * 0 (all of it written), 1 (waiting) or a negative error (UV_EOF: the file
 * ended before its length). */
static int run_file(hr__conn_t *c, hr__wbatch_t *b, uint64_t *budget) {
  hr__out_t *o = c->out;
  hr__wseg_t *s = &b->segs[b->pos];
  int pool = s->len >= HR__POOL_SENDFILE;
  while (b->done < s->len) {
    uint64_t off = (uint64_t)s->off + b->done;
    size_t left = s->len - b->done;
    ssize_t n;
    if (c->t->ops->try_sendfile != NULL) {
      /* A long range goes to the transport's write at once, which sends it
       * off the loop (tcp.c); a short one is tried here first. */
      n = pool ? 0 : c->t->ops->try_sendfile(c->t, s->fd, &off, left);
      if (n < 0) return (int)n;
      if (n > 0) o->write_since = uv_now(c->w->loop);
      b->done += (size_t)n;
      sent(c, b, (uint64_t)n, 1);
      if ((size_t)n == left) break;
      o->wreq.bufs = NULL;
      o->wreq.nbufs = 0;
      o->wreq.flags = 0;
      o->wreq.fd = s->fd;
      o->wreq.foff = off;
      o->wreq.flen = left - (size_t)n;
      return wait_for_room(c, b, b->pos + 1, left - (size_t)n, 1);
    }
    /* A piece: the one a job read, or read one (a job for a long file),
     * then write it now while the transport takes it and this step's
     * budget lasts, else through the transport's write. */
    if (o->fready > 0) {
      n = (ssize_t)o->fready;
      o->fready = 0;
    } else {
      size_t piece = pool ? HR__FILE_POOL_PIECE : HR__FILE_PIECE;
      if (fbuf_get(c, piece) != 0) return HR_ENOMEM;
      if (left > piece) left = piece;
      if (pool && fjob_start(c, s->fd, off, left) == 0) return 1; /* piece_back kicks */
      do
        n = pread(s->fd, o->fbuf, left, (off_t)off);
      while (n < 0 && errno == EINTR);
      if (n < 0) return -errno;
      if (n == 0) return UV_EOF; /* it shrank */
    }
    o->small[0] = uv_buf_init(o->fbuf, (unsigned)n);
    if (*budget >= (uint64_t)n) {
      ssize_t w = c->t->ops->try_write(c->t, o->small, 1, 0);
      if (w < 0) return (int)w;
      if (w > 0) o->write_since = uv_now(c->w->loop);
      b->done += (size_t)w;
      sent(c, b, (uint64_t)w, 1);
      *budget -= (uint64_t)w;
      if (w == n) continue;
      o->small[0].base += w;
      o->small[0].len -= (size_t)w;
      n -= w;
    }
    o->wreq.bufs = o->small;
    o->wreq.nbufs = 1;
    o->wreq.flags = 0;
    o->wreq.fd = -1;
    /* wend SIZE_MAX: a piece of the file at b->pos, not its end. */
    return wait_for_room(c, b, SIZE_MAX, (uint64_t)n, 1);
  }
  b->pos++;
  b->done = 0;
  return 0;
}

/* Writes `b` from its position until everything went or something waits.
 * Returns 0 (all written), 1 (waiting) or a negative error. */
static int run_batch(hr__conn_t *c, hr__wbatch_t *b) {
  uint64_t budget = HR__FILE_STEP;
  while (b->pos < b->nsegs) {
    int rc = b->segs[b->pos].fd >= 0 ? run_file(c, b, &budget) : run_memory(c, b);
    if (rc != 0) return rc;
  }
  return 0;
}

int hr__out_flush(hr__conn_t *c) {
  hr__out_t *o = c->out;
  int rc;
  if (o == NULL || o->writing || o->fjob != NULL) return 0;
  if (o->inflight.nsegs != 0) {
    /* A batch that waited: go on with it, then release it. */
    if ((rc = run_batch(c, &o->inflight)) != 0) return rc < 0 ? rc : 0;
    batch_release(c, &o->inflight, 1);
  }
  if (o->pending.nsegs == 0) return 0;
  if ((rc = run_batch(c, &o->pending)) != 0) return rc < 0 ? rc : 0;
  batch_release(c, &o->pending, 1); /* all of it went at once */
  return 0;
}

int hr__out_write_done(hr__conn_t *c, int status) {
  hr__out_t *o = c->out;
  hr__wbatch_t *b = &o->inflight;
  o->writing = 0;
  o->write_since = uv_now(c->w->loop);
  if (status < 0) return status;
  /* The write covered the rest of a unit; hr__out_flush goes on from here
   * (the owner settles after this event). */
  sent(c, b, o->wbytes, o->wfile);
  if (o->wend == SIZE_MAX) {
    b->done += (size_t)o->wbytes;
    if (b->done == b->segs[b->pos].len) {
      b->pos++;
      b->done = 0;
    }
  } else {
    b->pos = o->wend;
    b->done = 0;
  }
  return 0;
}

void hr__out_trim(hr__conn_t *c) {
  hr__out_t *o = c->out;
  if (o == NULL || o->writing || o->fjob != NULL || o->pending.nsegs != 0 ||
      o->inflight.nsegs != 0)
    return;
  batch_release(c, &o->pending, 0);
  batch_release(c, &o->inflight, 0);
  batch_free_segs(c, &o->pending);
  batch_free_segs(c, &o->inflight);
  if (o->wbufs != o->small) hr__mem_free(&c->w->mem, o->wbufs);
  if (o->fbuf != NULL) hr__mem_free(&c->w->mem, o->fbuf);
  o->fbuf = NULL;
  o->fbuf_cap = o->fready = 0;
  hr__pool_put(&c->w->opool, o);
  c->out = NULL;
}

void hr__out_discard(hr__conn_t *c) {
  hr__out_t *o = c->out;
  if (o == NULL) return;
  o->writing = 0; /* the transport is closed: its write is dropped */
  if (o->fjob != NULL) { /* it frees the buffer it holds when it is back */
    hr__fread_forget(o->fjob);
    o->fjob = NULL;
  }
  o->fready = 0;
  batch_release(c, &o->pending, 1);
  batch_release(c, &o->inflight, 1);
  hr__out_trim(c);
}
