/* SPDX-License-Identifier: MIT */
/*
 * The connection's output queue.  Everything a connection sends is appended
 * to the `pending` batch (response heads and copied bodies into its buffer,
 * borrowed bodies as references) and written with one call when the current
 * processing step ends: all responses to the pipelined requests of one read
 * leave in one write.  A direct uv_try_write is tried first; what it could
 * not take goes out with uv_write while the next batch is being built.
 */
#include <string.h>

#include "server/internal.h"

/* Largest segment: uv_buf_t lengths are unsigned ints, and uv_try_write
 * returns an int count. */
#define HR__SEG_MAX ((size_t)1 << 30)

static void batch_release(hr__conn_t *c, hr__wbatch_t *b, int keep_buffer) {
  size_t i;
  for (i = 0; i < b->nsegs; i++)
    if (b->segs[i].borrowed != NULL && b->segs[i].release != NULL)
      b->segs[i].release(&c->res, b->segs[i].borrowed, b->segs[i].udata);
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

static int batch_add_seg(hr__conn_t *c, hr__wbatch_t *b, hr__wseg_t seg) {
  if (b->nsegs == b->segs_cap) {
    size_t cap = b->segs_cap ? b->segs_cap * 2 : 8;
    hr__wseg_t *n = hr__mem_realloc(&c->w->mem, b->segs, cap * sizeof(*n));
    if (n == NULL) return HR_ENOMEM;
    b->segs = n;
    b->segs_cap = cap;
  }
  b->segs[b->nsegs++] = seg;
  return 0;
}

char *hr__out_reserve(hr__conn_t *c, size_t n) {
  hr__wbatch_t *b = &c->pending;
  if (b->buf == NULL) {
    if (n <= c->w->bpool.block_size) {
      b->buf = hr__pool_get(&c->w->bpool);
      b->cap = c->w->bpool.block_size;
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
    if (b->cap == c->w->bpool.block_size) {
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
  hr__wbatch_t *b = &c->pending;
  while (n > 0) {
    hr__wseg_t *last = b->nsegs ? &b->segs[b->nsegs - 1] : NULL;
    size_t take;
    if (last != NULL && last->borrowed == NULL &&
        last->off + last->len == b->len && last->len < HR__SEG_MAX) {
      take = HR__SEG_MAX - last->len < n ? HR__SEG_MAX - last->len : n;
      last->len += take;
    } else {
      hr__wseg_t seg = {NULL, b->len, 0, NULL, NULL};
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

int hr__out_borrow(hr__conn_t *c, const void *p, size_t n, hr_release_cb cb,
                   void *udata) {
  hr__wbatch_t *b = &c->pending;
  size_t first = b->nsegs, done = 0;
  /* Pieces of at most HR__SEG_MAX bytes (a uv_buf_t length is an unsigned
   * int); the release callback goes with the last one. */
  do {
    hr__wseg_t seg;
    size_t take = n - done < HR__SEG_MAX ? n - done : HR__SEG_MAX;
    seg.borrowed = (const char *)p + done;
    seg.off = 0;
    seg.len = take;
    seg.release = done + take == n ? cb : NULL;
    seg.udata = udata;
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
  return c->pending.bytes + c->inflight.bytes;
}

static void fill_bufs(hr__wbatch_t *b, uv_buf_t *bufs) {
  size_t i;
  for (i = 0; i < b->nsegs; i++) {
    const hr__wseg_t *s = &b->segs[i];
    const char *p = s->borrowed != NULL ? s->borrowed : b->buf + s->off;
    bufs[i] = uv_buf_init((char *)p, (unsigned)s->len);
  }
}

static void on_write(uv_write_t *req, int status);

/* Swaps pending and inflight (the inflight batch is empty), keeping the old
 * inflight segment array for reuse. */
static void promote(hr__conn_t *c) {
  hr__wbatch_t t = c->inflight;
  c->inflight = c->pending;
  c->pending = t;
  c->pending.nsegs = 0;
  c->pending.len = 0;
  c->pending.bytes = 0;
}

void hr__out_flush(hr__conn_t *c) {
  hr__wbatch_t *b = &c->pending;
  uv_buf_t small[16], *bufs = small;
  size_t i, skip;
  int n;
  if (c->writing || c->closed || b->nsegs == 0) return;
  if (b->nsegs > 16) {
    bufs = hr__mem_alloc(&c->w->mem, b->nsegs * sizeof(uv_buf_t));
    if (bufs == NULL) {
      hr__conn_close(c);
      return;
    }
  }
  fill_bufs(b, bufs);
  if (c->sink != NULL) { /* no socket: everything goes to the sink at once */
    for (i = 0; i < b->nsegs; i++) c->sink(c->sink_ctx, bufs[i].base, bufs[i].len);
    if (bufs != small) hr__mem_free(&c->w->mem, bufs);
    batch_release(c, b, 1);
    return;
  }
  n = uv_try_write((uv_stream_t *)&c->tcp, bufs, (unsigned)b->nsegs);
  if (n == UV_EAGAIN || n == UV_ENOSYS) n = 0;
  if (n < 0) {
    if (bufs != small) hr__mem_free(&c->w->mem, bufs);
    hr__conn_close(c);
    return;
  }
  if ((size_t)n == b->bytes) {
    if (bufs != small) hr__mem_free(&c->w->mem, bufs);
    batch_release(c, b, 1);
    return;
  }
  /* Partly written: hand the rest to uv_write (which copies the buf array,
   * not the bytes: the batch stays alive as `inflight` until on_write). */
  skip = 0;
  while (skip < b->nsegs && (size_t)n >= bufs[skip].len) {
    n -= (int)bufs[skip].len;
    skip++;
  }
  bufs[skip].base += n;
  bufs[skip].len -= (size_t)n;
  promote(c);
  i = c->inflight.nsegs - skip;
  if (uv_write(&c->write_req, (uv_stream_t *)&c->tcp, bufs + skip,
               (unsigned)i, on_write) != 0) {
    if (bufs != small) hr__mem_free(&c->w->mem, bufs);
    hr__conn_close(c);
    return;
  }
  if (bufs != small) hr__mem_free(&c->w->mem, bufs);
  c->writing = 1;
  c->write_since = uv_now(c->w->loop);
}

static void on_write(uv_write_t *req, int status) {
  hr__conn_t *c = req->data;
  c->writing = 0;
  c->write_since = uv_now(c->w->loop);
  batch_release(c, &c->inflight, 0);
  if (status < 0) {
    hr__conn_close(c);
    hr__conn_maybe_free(c);
    return;
  }
  hr__conn_resume(c);
}

void hr__out_discard(hr__conn_t *c) {
  batch_release(c, &c->pending, 0);
  if (!c->writing) batch_release(c, &c->inflight, 0);
}

int hr__out_error_response(hr__conn_t *c, int status, hr_span_t extra) {
  char head[256];
  const char *reason = hr_status_reason(status);
  size_t rlen = strlen(reason);
  int n = snprintf(head, sizeof(head),
                   "HTTP/1.1 %d %s\r\n%.*sContent-Type: text/plain\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n",
                   status, reason, (int)c->w->date_len, c->w->date, rlen + 1);
  int err;
  if (n < 0 || (size_t)n >= sizeof(head)) return HR_EINVAL;
  err = hr__out_append(c, head, (size_t)n);
  if (err == 0 && extra.len) err = hr__out_append(c, extra.ptr, extra.len);
  if (err == 0) err = hr__out_append(c, "\r\n", 2);
  if (err == 0) err = hr__out_append(c, reason, rlen);
  if (err == 0) err = hr__out_append(c, "\n", 1);
  return err;
}
