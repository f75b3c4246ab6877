/* SPDX-License-Identifier: MIT */
/*
 * application/x-www-form-urlencoded splitting and decoding (form.h).
 */
#include <string.h>

#include "hroute/error.h"
#include "hroute/form.h"
#include "util/text.h"

int hr_form_next(hr_span_t *rest, hr_form_pair_t *pair) {
  const char *p, *end;
  if (rest->len == 0) return 0; /* also {NULL, 0}: no pointer arithmetic */
  p = rest->ptr;
  end = rest->ptr + rest->len;
  while (p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p)), *e = amp ? amp : end, *eq;
    if (e == p) { /* an empty pair */
      p++;
      continue;
    }
    eq = memchr(p, '=', (size_t)(e - p));
    pair->key.ptr = p;
    pair->key.len = (size_t)((eq ? eq : e) - p);
    pair->value.ptr = eq ? eq + 1 : e;
    pair->value.len = eq ? (size_t)(e - eq - 1) : 0;
    rest->ptr = amp ? amp + 1 : end;
    rest->len = (size_t)(end - rest->ptr);
    return 1;
  }
  rest->ptr = end;
  rest->len = 0;
  return 0;
}

int hr_form_decode(hr_span_t in, char *out, size_t *outlen) {
  size_t i, n = 0;
  for (i = 0; i < in.len; i++) {
    unsigned char c = (unsigned char)in.ptr[i];
    if (c == '+') {
      out[n++] = ' ';
    } else if (c == '%') {
      int h = i + 2 < in.len ? hr__hex_value((unsigned char)in.ptr[i + 1]) : -1;
      int l = h >= 0 ? hr__hex_value((unsigned char)in.ptr[i + 2]) : -1;
      if (l < 0) return HR_EPARSE;
      out[n++] = (char)(h * 16 + l);
      i += 2;
    } else {
      out[n++] = (char)c;
    }
  }
  *outlen = n;
  return 0;
}
