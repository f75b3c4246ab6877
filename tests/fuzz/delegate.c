/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the built-in header delegates: the first byte picks
 * the delegate, the rest is a field value.  No input may crash or read
 * outside the value; whatever parses must format, and the formatted text
 * must parse and format back to the same bytes (the canonical form is a
 * fixed point).
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
    &hr__delegate_cookies,      &hr__delegate_link,
};

/* Big enough for any of the value structs. */
typedef union value_u {
  hr_media_ranges_t a;
  hr_links_t b;
  hr_cache_control_t c;
  hr_etag_list_t d;
  hr_cookies_t e;
  hr_set_cookie_t f;
} value_t;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const hr_delegate_t *d;
  value_t v1, v2;
  char *in, out1[8192], out2[8192];
  size_t n1 = 0, n2 = 0;
  hr_span_t text;
  if (size < 1) return 0;
  d = delegates[data[0] % (sizeof(delegates) / sizeof(delegates[0]))];
  in = malloc(size - 1 ? size - 1 : 1); /* exact size: ASan sees over-reads */
  if (in == NULL) return 0;
  memcpy(in, data + 1, size - 1);
  text.ptr = in;
  text.len = size - 1;
  if (d->parse(text, &v1, d->udata) == 0 &&
      d->format(&v1, out1, sizeof(out1), &n1, d->udata) == 0) {
    text.ptr = out1;
    text.len = n1;
    if (d->parse(text, &v2, d->udata) != 0) abort();
    if (d->format(&v2, out2, sizeof(out2), &n2, d->udata) != 0) abort();
    if (n1 != n2 || memcmp(out1, out2, n1) != 0) abort();
  }
  free(in);
  return 0;
}
