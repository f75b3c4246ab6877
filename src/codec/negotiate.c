/* SPDX-License-Identifier: MIT */
/*
 * The response's content coding from the request's Accept-Encoding field
 * (RFC 9110 §12.5.3): codings with their weights (§12.4.2), "*" for any
 * coding not named, "x-gzip" as "gzip" (§8.4.1.3), q=0 as "not
 * acceptable".  The server's order breaks ties.
 */
#include <string.h>

#include "codec/codec.h"

/* The weight of "q=..." in thousandths (0..1000), or -1 when malformed. */
static int weight(hr_span_t v) {
  size_t i;
  int w;
  if (v.len == 0 || (v.ptr[0] != '0' && v.ptr[0] != '1')) return -1;
  w = (v.ptr[0] - '0') * 1000;
  if (v.len == 1) return w;
  if (v.ptr[1] != '.' || v.len > 5) return -1;
  for (i = 2; i < v.len; i++) {
    if (v.ptr[i] < '0' || v.ptr[i] > '9') return -1;
    w += (v.ptr[i] - '0') * (i == 2 ? 100 : i == 3 ? 10 : 1);
  }
  return w > 1000 ? -1 : w;
}

static hr_span_t trim(hr_span_t s) {
  while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) s.ptr++, s.len--;
  while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t')) s.len--;
  return s;
}

/* Which of hroute's codings a token names: 1..3, 0 for identity, -2 for
 * "*", -1 for another. */
static int coding_of(hr_span_t t) {
  int c;
  if (hr_span_eq(t, HR_SPAN_LIT("*"))) return -2;
  if (hr_span_eq_nocase(t, HR_SPAN_LIT("x-gzip"))) return HR_CODING_GZIP;
  for (c = 0; c < HR__CODINGS; c++)
    if (hr_span_eq_nocase(t, hr__coding_name(c))) return c;
  return -1;
}

int hr__coding_choose(hr_span_t accept, int present, const uint8_t *order, size_t n) {
  int q[HR__CODINGS], star = -1, best = 0, best_q = 0;
  const char *p = accept.ptr, *end = accept.ptr + accept.len;
  size_t i;
  if (!present) return 0; /* no field: any coding may do; identity is the safe one */
  for (i = 0; i < HR__CODINGS; i++) q[i] = -1;
  while (p < end) {
    const char *e = memchr(p, ',', (size_t)(end - p)), *semi;
    hr_span_t elem, name, params;
    int c, w = 1000;
    if (e == NULL) e = end;
    elem = trim((hr_span_t){p, (size_t)(e - p)});
    p = e + 1;
    if (elem.len == 0) continue;
    semi = memchr(elem.ptr, ';', elem.len);
    name = trim((hr_span_t){elem.ptr, semi ? (size_t)(semi - elem.ptr) : elem.len});
    if (semi != NULL) {
      params = trim((hr_span_t){semi + 1, (size_t)(elem.ptr + elem.len - semi - 1)});
      if (params.len < 2 || (params.ptr[0] != 'q' && params.ptr[0] != 'Q') || params.ptr[1] != '=')
        continue; /* only q is defined here; an element with others is skipped */
      if ((w = weight(trim((hr_span_t){params.ptr + 2, params.len - 2}))) < 0) continue;
    }
    c = coding_of(name);
    if (c == -2) star = w;
    else if (c >= 0 && w > q[c]) q[c] = w;
  }
  for (i = 0; i < n; i++) {
    int c = order[i], w = q[c] >= 0 ? q[c] : star;
    if (w > best_q) {
      best = c;
      best_q = w;
    }
  }
  return best;
}
