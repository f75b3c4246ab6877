/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the multipart/form-data parser: no input may crash
 * it or read outside the bytes given, and the result -- the error code and
 * the trace of parts, data and part ends -- must not depend on how the body
 * is split across calls (byte 0 chooses the split size, byte 1 the
 * boundary's length, 1 to 70, taken from the next bytes).  Data reported
 * never exceeds the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>
#include <hroute/multipart.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct trace_s {
  unsigned char *buf;
  size_t len, cap;
  size_t data_bytes;
} trace_t;

static void add(trace_t *t, const void *p, size_t n) {
  if (t->len + n > t->cap) {
    size_t cap = (t->len + n) * 2 + 64;
    t->buf = realloc(t->buf, cap);
    if (t->buf == NULL) abort();
    t->cap = cap;
  }
  memcpy(t->buf + t->len, p, n);
  t->len += n;
}

static int on_part(void *u, const hr_multipart_part_t *p) {
  add(u, "P", 1);
  add(u, p->name.ptr, p->name.len);
  add(u, "|", 1);
  if (p->filename.len) add(u, p->filename.ptr, p->filename.len);
  add(u, "|", 1);
  if (p->content_type.len) add(u, p->content_type.ptr, p->content_type.len);
  return 0;
}

static int on_data(void *u, hr_span_t d) {
  trace_t *t = u;
  t->data_bytes += d.len;
  add(u, "D", 1);
  add(u, d.ptr, d.len);
  return 0;
}

static int on_end(void *u) {
  add(u, "E", 1);
  return 0;
}

static int run(const char *body, size_t len, size_t step, hr_span_t boundary, trace_t *t,
               int *rc) {
  static const hr_multipart_cbs_t cbs = {on_part, on_data, on_end};
  hr_multipart_t *mp = malloc(sizeof *mp);
  size_t at;
  if (mp == NULL) abort();
  if (hr_multipart_init(mp, boundary, &cbs, t, NULL) != 0) {
    free(mp);
    return -1;
  }
  *rc = 0;
  for (at = 0; at < len && *rc == 0; at += step)
    *rc = hr_multipart_feed(mp, (hr_span_t){body + at, at + step <= len ? step : len - at});
  if (*rc == 0) *rc = hr_multipart_finish(mp);
  free(mp);
  return 0;
}

/* The trace without its 'D' bytes: each piece of data is marked 'D', and a
 * split changes how data is cut into pieces, not what it is or where the
 * parts begin and end; dropping every 'D' (markers and data bytes alike)
 * leaves a form that a split must not change. */
static size_t strip(const trace_t *t, unsigned char *out) {
  size_t i, n = 0;
  for (i = 0; i < t->len; i++)
    if (t->buf[i] != 'D') out[n++] = t->buf[i];
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  trace_t whole = {0}, split = {0};
  hr_span_t boundary;
  size_t blen, step;
  int rc1, rc2;
  unsigned char *a, *b;
  size_t na, nb;
  char *body;
  if (size < 3) return 0;
  step = (size_t)data[0] % 17 + 1;
  blen = (size_t)data[1] % 70 + 1;
  if (size < 2 + blen) return 0;
  boundary.ptr = (const char *)data + 2;
  boundary.len = blen;
  size -= 2 + blen;
  body = malloc(size ? size : 1);
  if (body == NULL) abort();
  memcpy(body, data + 2 + blen, size);
  if (run(body, size, size ? size : 1, boundary, &whole, &rc1) == 0 &&
      run(body, size, step, boundary, &split, &rc2) == 0) {
    if (rc1 != rc2) abort();
    if (whole.data_bytes != split.data_bytes) abort();
    if (whole.data_bytes > size) abort();
    a = malloc(whole.len + 1);
    b = malloc(split.len + 1);
    if (a == NULL || b == NULL) abort();
    na = strip(&whole, a);
    nb = strip(&split, b);
    if (na != nb || memcmp(a, b, na) != 0) abort();
    free(a);
    free(b);
  }
  free(whole.buf);
  free(split.buf);
  free(body);
  return 0;
}
