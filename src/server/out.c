/* SPDX-License-Identifier: MIT */
/*
 * The connection's output queue.  Everything a connection sends is appended
 * to the `pending` batch (response heads and copied bodies into its buffer,
 * borrowed bodies as references) and written with one call when the current
 * processing step ends: all responses to the pipelined requests of one read
 * leave in one write.  A direct try-write goes first; what it could not take
 * is handed to the transport's write while the next batch is being built.
 */
#include <string.h>

#include "http/head.h"
#include "server/internal.h"

/* Largest segment: uv_buf_t lengths are unsigned ints elsewhere, and a
 * write returns a signed count. */
#define HR__SEG_MAX ((size_t)1 << 30)

static void batch_init(hr__wbatch_t *b) {
  b->buf = NULL;
  b->len = b->cap = 0;
  b->segs = b->inline_segs;
  b->nsegs = 0;
  b->segs_cap = HR__OUT_INLINE_SEGS;
  b->bytes = 0;
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
  o->writing = 0;
  o->write_since = uv_now(c->w->loop);
  c->out = o;
  return o;
}

static void batch_release(hr__conn_t *c, hr__wbatch_t *b, int keep_buffer) {
  size_t i;
  for (i = 0; i < b->nsegs; i++)
    if (b->segs[i].borrowed != NULL && b->segs[i].release != NULL)
      b->segs[i].release(b->segs[i].res, b->segs[i].borrowed, b->segs[i].udata);
  b->nsegs = 0;
  b->len = 0;
  b->bytes = 0;
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
    if (last != NULL && last->borrowed == NULL &&
        last->off + last->len == b->len && last->len < HR__SEG_MAX) {
      take = HR__SEG_MAX - last->len < n ? HR__SEG_MAX - last->len : n;
      last->len += take;
    } else {
      hr__wseg_t seg = {NULL, b->len, 0, NULL, NULL, NULL};
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
    seg.udata = udata;
    seg.res = res;
    if (batch_add_seg(c, b, seg) != 0) {
      b->nsegs = first; /* all or nothing */
      return HR_ENOMEM;
    }
    done += take;
  } while (done < n);
  b->bytes += n;
  return 0;
}

size_t hr__out_queued(const hr__conn_t *c) {
  return c->out == NULL ? 0 : c->out->pending.bytes + c->out->inflight.bytes;
}

int hr__out_writing(const hr__conn_t *c) {
  return c->out != NULL && c->out->writing;
}

static void fill_bufs(const hr__wbatch_t *b, uv_buf_t *bufs) {
  size_t i;
  for (i = 0; i < b->nsegs; i++) {
    const hr__wseg_t *s = &b->segs[i];
    const char *p = s->borrowed != NULL ? s->borrowed : b->buf + s->off;
    bufs[i] = uv_buf_init((char *)p, (unsigned)s->len);
  }
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
  o->pending.bytes = 0;
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

int hr__out_flush(hr__conn_t *c) {
  hr__out_t *o = c->out;
  hr__wbatch_t *b;
  uv_buf_t *bufs;
  ssize_t n;
  size_t skip;
  int err;
  if (o == NULL || o->writing || o->pending.nsegs == 0) return 0;
  b = &o->pending;
  bufs = wbufs_for(c, o, b->nsegs);
  if (bufs == NULL) return HR_ENOMEM;
  fill_bufs(b, bufs);
  n = c->t->ops->try_write(c->t, bufs, (unsigned)b->nsegs);
  if (n < 0) return (int)n;
  if ((size_t)n == b->bytes) {
    batch_release(c, b, 1);
    o->write_since = uv_now(c->w->loop);
    return 0;
  }
  if (n > 0) o->write_since = uv_now(c->w->loop);
  /* Partly written: the transport writes the rest from the buffers, and the
   * batch stays alive as `inflight` until write_done. */
  skip = 0;
  while (skip < b->nsegs && (size_t)n >= bufs[skip].len) {
    n -= (ssize_t)bufs[skip].len;
    skip++;
  }
  bufs[skip].base += n;
  bufs[skip].len -= (size_t)n;
  promote(o);
  o->wreq.bufs = bufs + skip;
  o->wreq.nbufs = (unsigned)(o->inflight.nsegs - skip);
  err = c->t->ops->write(c->t, &o->wreq);
  if (err != 0) return err;
  o->writing = 1;
  return 0;
}

int hr__out_write_done(hr__conn_t *c, int status) {
  hr__out_t *o = c->out;
  o->writing = 0;
  o->write_since = uv_now(c->w->loop);
  batch_release(c, &o->inflight, 1);
  return status;
}

void hr__out_trim(hr__conn_t *c) {
  hr__out_t *o = c->out;
  if (o == NULL || o->writing || o->pending.bytes != 0 || o->pending.nsegs != 0)
    return;
  batch_release(c, &o->pending, 0);
  batch_release(c, &o->inflight, 0);
  batch_free_segs(c, &o->pending);
  batch_free_segs(c, &o->inflight);
  if (o->wbufs != o->small) hr__mem_free(&c->w->mem, o->wbufs);
  hr__pool_put(&c->w->opool, o);
  c->out = NULL;
}

void hr__out_discard(hr__conn_t *c) {
  hr__out_t *o = c->out;
  if (o == NULL) return;
  o->writing = 0; /* the transport is closed: its write is dropped */
  batch_release(c, &o->pending, 1);
  batch_release(c, &o->inflight, 1);
  hr__out_trim(c);
}
