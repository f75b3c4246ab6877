/* SPDX-License-Identifier: MIT */
/*
 * Memory for the items of list-valued typed values: the bump allocator over
 * caller storage (hr_mem_buffer_t), and the one request per value that the
 * built-in parsers make, sized by counting separators in the field.
 */
#include <stdint.h>
#include <string.h>

#include "delegate/builtin.h"

#define ALIGN 8u

static size_t round_up(size_t n) { return (n + (ALIGN - 1)) & ~(size_t)(ALIGN - 1); }

static void *buffer_alloc(void *ctx, size_t size) {
  hr_mem_buffer_t *b = ctx;
  size_t start = round_up(b->used), padded = round_up(size);
  if (padded < size || start < b->used) return NULL; /* size_t overflow */
  /* Every request counts toward need, fitting or not. */
  b->need = round_up(b->need) + padded;
  if (start > b->cap || padded > b->cap - start) return NULL;
  b->used = start + padded;
  return b->buf + start;
}

void hr_mem_buffer_init(hr_mem_buffer_t *b, void *buf, size_t cap) {
  /* Pieces start 8-byte aligned whatever buf is: skip to the first such
   * address (then a buffer of need bytes plus 7 is always enough). */
  size_t skip = buf == NULL ? 0 : (size_t)(-(uintptr_t)buf & (ALIGN - 1));
  b->mem.alloc = buffer_alloc;
  b->mem.ctx = b;
  b->buf = buf == NULL || skip >= cap ? NULL : (char *)buf + skip;
  cap = b->buf == NULL ? 0 : cap - skip;
  b->cap = cap;
  b->used = 0;
  b->need = 0;
}

/* Bytes of `text` equal to `c`: a byte-wide count per run of at most 255
 * bytes, so that the inner loop vectorises without widening every lane. */
static size_t count_byte(hr_span_t text, char c) {
  size_t i = 0, n = 0;
  while (i < text.len) {
    size_t j, run = text.len - i < 255 ? text.len - i : 255;
    unsigned char k = 0;
    for (j = 0; j < run; j++) k = (unsigned char)(k + (text.ptr[i + j] == c));
    n += k;
    i += run;
  }
  return n;
}

/* The exact count of hr__count_list, one byte at a time. */
static void count_exact(hr_span_t text, char sep, unsigned flags, size_t *items,
                        size_t *params) {
  const unsigned char *p = (const unsigned char *)text.ptr, *end = p + text.len;
  /* Whether the current element, and the current parameter, count once
   * they turn out non-empty; and whether they did. */
  int elem_open = (flags & HR__COUNT_FIRST) != 0, elem_full = 0;
  int param_open = 0, param_full = 0;
  size_t n = 0, np = 0;
  while (p < end) {
    unsigned c = *p++;
    if (c == '"' && (flags & (HR__COUNT_QUOTES | HR__COUNT_ETAGS))) {
      /* A quoted-string (escapes skipped) or an opaque tag (none), taken
       * whole: separators inside belong to it. */
      while (p < end && *p != '"') {
        if (*p == '\\' && (flags & HR__COUNT_QUOTES) && p + 1 < end) p++;
        p++;
      }
      if (p < end) p++;
      elem_full = param_full = 1;
    } else if (c == '<' && (flags & HR__COUNT_ANGLE)) {
      while (p < end && *p != '>') p++;
      if (p < end) p++;
      elem_full = param_full = 1;
    } else if (c == (unsigned char)sep) {
      n += elem_open && elem_full;
      np += param_open && param_full;
      elem_open = 1;
      elem_full = 0;
      param_open = param_full = 0;
    } else if (c == ';' && params != NULL) {
      np += param_open && param_full;
      param_open = 1;
      param_full = 0;
      elem_full = 1;
    } else if (c != ' ' && c != '\t') {
      elem_full = param_full = 1;
    }
  }
  n += elem_open && elem_full;
  np += param_open && param_full;
  *items = n;
  if (params != NULL) *params = np;
}

/* Items need 4 bytes of field at least ("a/b," or "a=1;"): while the
 * separators are no denser than that, counting them is bound enough (the
 * memory stays within a small multiple of the field), and much faster than
 * the exact walk, which only dense separators (",,,,") need. */
void hr__count_list(hr_span_t text, char sep, unsigned flags, size_t *items, size_t *params) {
  size_t n = count_byte(text, sep) + ((flags & HR__COUNT_FIRST) != 0);
  size_t np = params != NULL ? count_byte(text, ';') : 0;
  if ((n + np) * 4 <= text.len + 4) {
    *items = n;
    if (params != NULL) *params = np;
    return;
  }
  count_exact(text, sep, flags, items, params);
}

int hr__mem_items(const hr_mem_t *mem, size_t n1, size_t s1, void **p1, size_t n2,
                  size_t s2, void **p2) {
  size_t a, b;
  char *p;
  *p1 = NULL;
  if (p2 != NULL) *p2 = NULL;
  if (n1 == 0 && n2 == 0) return 0;
  if (mem == NULL || mem->alloc == NULL) return HR_ENOMEM;
  if (s1 != 0 && n1 > SIZE_MAX / s1) return HR_ENOMEM;
  if (s2 != 0 && n2 > SIZE_MAX / s2) return HR_ENOMEM;
  a = round_up(n1 * s1);
  b = n2 * s2;
  if (a < n1 * s1 || b > SIZE_MAX - a) return HR_ENOMEM;
  p = mem->alloc(mem->ctx, a + b);
  if (p == NULL) return HR_ENOMEM;
  if (n1 != 0) *p1 = p;
  if (n2 != 0 && p2 != NULL) *p2 = p + a;
  return 0;
}
