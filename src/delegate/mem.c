/* SPDX-License-Identifier: MIT */
/*
 * Memory for the items of list-valued typed values: the bump allocator over
 * caller storage (hr_mem_buffer_t), and the one request per value that the
 * built-in parsers make, sized by counting separators in the field.
 */
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
  b->mem.alloc = buffer_alloc;
  b->mem.ctx = b;
  b->buf = buf;
  b->cap = buf == NULL ? 0 : cap;
  b->used = 0;
  b->need = 0;
}

size_t hr__count_byte(hr_span_t text, char c) {
  size_t i = 0, n = 0;
  /* A byte-wide count per run of at most 255 bytes: the inner loop
   * vectorises without widening every lane to size_t. */
  while (i < text.len) {
    size_t j, run = text.len - i < 255 ? text.len - i : 255;
    unsigned char k = 0;
    for (j = 0; j < run; j++) k = (unsigned char)(k + (text.ptr[i + j] == c));
    n += k;
    i += run;
  }
  return n;
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
