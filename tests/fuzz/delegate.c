/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the built-in header delegates: the first byte picks
 * the delegate, the rest is a field value.  No input may crash or read
 * outside the value; whatever parses must format, and the formatted text
 * must parse and format back to the same bytes (the canonical form is a
 * fixed point).  Each parse first runs with no memory, then with exactly
 * the bytes that run asked for (hr_mem_buffer_t.need) in a heap block of
 * that size, so ASan sees any item written past what a parser counted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "delegate/builtin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const hr_delegate_t *const delegates[] = {
    &hr__delegate_int64,        &hr__delegate_uint64,    &hr__delegate_date,
    &hr__delegate_media_type,   &hr__delegate_media_ranges, &hr__delegate_etag,
    &hr__delegate_etag_list,    &hr__delegate_cache_control, &hr__delegate_set_cookie,
    &hr__delegate_cookies,      &hr__delegate_link,      &hr__delegate_forwarded,
};

/* Big enough for any of the value structs. */
typedef union value_u {
  hr_media_ranges_t a;
  hr_links_t b;
  hr_forwarded_t fw;
  hr_cache_control_t c;
  hr_etag_list_t d;
  hr_cookies_t e;
  hr_set_cookie_t f;
} value_t;

/* Parses `text` with exactly the memory it needs; *block is that memory
 * (free it after the value).  Returns as the parser. */
static int parse_exact(const hr_delegate_t *d, hr_span_t text, value_t *v, void **block) {
  hr_mem_buffer_t b;
  int rc;
  *block = NULL;
  hr_mem_buffer_init(&b, NULL, 0);
  rc = d->parse(text, v, &b.mem, d->udata);
  if (rc != HR_ENOMEM) return rc;
  if (b.need == 0) abort(); /* HR_ENOMEM without asking for memory */
  *block = malloc(b.need);
  if (*block == NULL) return HR_ENOMEM;
  hr_mem_buffer_init(&b, *block, b.need);
  rc = d->parse(text, v, &b.mem, d->udata);
  if (rc == HR_ENOMEM) abort(); /* need was not enough */
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const hr_delegate_t *d;
  value_t v1, v2;
  char *in, out1[8192], out2[8192];
  size_t n1 = 0, n2 = 0;
  hr_span_t text;
  void *m1 = NULL, *m2 = NULL;
  if (size < 1) return 0;
  d = delegates[data[0] % (sizeof(delegates) / sizeof(delegates[0]))];
  in = malloc(size - 1 ? size - 1 : 1); /* exact size: ASan sees over-reads */
  if (in == NULL) return 0;
  memcpy(in, data + 1, size - 1);
  text.ptr = in;
  text.len = size - 1;
  if (parse_exact(d, text, &v1, &m1) == 0 &&
      d->format(&v1, out1, sizeof(out1), &n1, d->udata) == 0) {
    text.ptr = out1;
    text.len = n1;
    if (parse_exact(d, text, &v2, &m2) != 0) abort();
    if (d->format(&v2, out2, sizeof(out2), &n2, d->udata) != 0) abort();
    if (n1 != n2 || memcmp(out1, out2, n1) != 0) abort();
  }
  free(m1);
  free(m2);
  free(in);
  return 0;
}
