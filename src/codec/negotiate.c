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

void hr__accept_init(hr__accept_t *a) {
  int i;
  for (i = 0; i < HR__CODINGS; i++) a->q[i] = -1;
  a->star = -1;
}

/* The weight of an element's parameters (";q=0.5;x=y"): q's, or 1000 when
 * there is none; -1 when q is malformed. */
static int params_weight(hr_span_t params) {
  const char *p = params.ptr, *end = params.ptr + params.len;
  int w = 1000;
  while (p < end) {
    const char *e = memchr(p, ';', (size_t)(end - p));
    hr_span_t param;
    if (e == NULL) e = end;
    param = trim((hr_span_t){p, (size_t)(e - p)});
    p = e + 1;
    if (param.len >= 2 && (param.ptr[0] == 'q' || param.ptr[0] == 'Q') && param.ptr[1] == '=')
      w = weight(trim((hr_span_t){param.ptr + 2, param.len - 2}));
  }
  return w;
}

void hr__accept_add(hr__accept_t *a, hr_span_t line) {
  const char *p = line.ptr, *end = line.ptr + line.len;
  while (p < end) {
    const char *e = memchr(p, ',', (size_t)(end - p)), *semi;
    hr_span_t elem, name;
    int c, w = 1000;
    if (e == NULL) e = end;
    elem = trim((hr_span_t){p, (size_t)(e - p)});
    p = e + 1;
    if (elem.len == 0) continue;
    semi = memchr(elem.ptr, ';', elem.len);
    name = trim((hr_span_t){elem.ptr, semi ? (size_t)(semi - elem.ptr) : elem.len});
    if (semi != NULL &&
        (w = params_weight((hr_span_t){semi + 1, (size_t)(elem.ptr + elem.len - semi - 1)})) < 0)
      continue; /* a malformed weight: the element is not understood */
    c = coding_of(name);
    if (c == -2) a->star = w > a->star ? w : a->star;
    else if (c >= 0 && w > a->q[c]) a->q[c] = w;
  }
}

int hr__accept_pick(const hr__accept_t *a, const uint8_t *order, size_t n) {
  int best = 0, best_q = 0, identity_q;
  size_t i;
  for (i = 0; i < n; i++) {
    int c = order[i], w = a->q[c] >= 0 ? a->q[c] : a->star;
    if (w > best_q) {
      best = c;
      best_q = w;
    }
  }
  /* Identity is always acceptable unless refused; it wins only when the
   * client weighs it above the best coding (named, or by "*"). */
  identity_q = a->q[0] >= 0 ? a->q[0] : a->star;
  return identity_q > best_q ? 0 : best;
}

int hr__coding_choose(hr_span_t accept, int present, const uint8_t *order, size_t n) {
  hr__accept_t a;
  if (!present) return 0; /* no field: any coding may do; identity is the safe one */
  hr__accept_init(&a);
  hr__accept_add(&a, accept);
  return hr__accept_pick(&a, order, n);
}
