/* SPDX-License-Identifier: MIT */
/*
 * The Range field (RFC 9110 §14.1.2, §14.2) against a representation of a
 * known size:
 *   Range        = ranges-specifier = range-unit "=" range-set
 *   range-set    = 1#range-spec
 *   range-spec   = int-range / suffix-range / other-range
 *   int-range    = first-pos "-" [ last-pos ]
 *   suffix-range = "-" suffix-length
 * Only "bytes" is a unit here; anything else, or a malformed set, means
 * the field is ignored (§14.2: a server MAY ignore it), and so it is for a
 * file of 0 bytes.  An int-range whose first-pos is past the end, and a
 * suffix of length 0, are unsatisfiable; the rest are clamped to the size
 * (a last-pos too large for 64 bits too).  Sets that would make the server send
 * far more than one copy of the file (more than HR__MAX_RANGES ranges,
 * overlapping ranges, more bytes in all than the size) are ignored too,
 * as §14.2 allows for exactly that reason.
 */
#include "static/static.h"

static int skip_ows(const char *p, const char *e, const char **out) {
  while (p < e && (*p == ' ' || *p == '\t')) p++;
  *out = p;
  return p < e;
}

/* 1*DIGIT into *v, a value past 2^64-1 saturating (it only ever means
 * "to the end" or "past the end"); 0, or -1 when no digit is next. */
static int digits(const char **pp, const char *e, uint64_t *v) {
  const char *p = *pp;
  uint64_t n = 0;
  if (p == e || *p < '0' || *p > '9') return -1;
  while (p < e && *p >= '0' && *p <= '9') {
    unsigned d = (unsigned)(*p++ - '0');
    n = n > (UINT64_MAX - d) / 10 ? UINT64_MAX : n * 10 + d;
  }
  *pp = p;
  *v = n;
  return 0;
}

int hr__range_parse(hr_span_t value, uint64_t size, hr__range_t *out) {
  const char *p = value.ptr, *e = value.ptr + value.len;
  uint64_t total = 0;
  int n = 0, seen = 0, i, j;
  if (value.len < 6 || (p[0] | 0x20) != 'b' || (p[1] | 0x20) != 'y' || (p[2] | 0x20) != 't' ||
      (p[3] | 0x20) != 'e' || (p[4] | 0x20) != 's' || p[5] != '=')
    return 0;
  p += 6;
  /* An empty representation has no byte to range over: a client that
   * sends "bytes=0-" to everything gets the (empty) whole, as from Go. */
  if (size == 0) return 0;
  for (;;) {
    uint64_t first, last;
    int suffix = 0;
    if (!skip_ows(p, e, &p)) break;
    if (*p == ',') { /* an empty list element (§5.6.1) */
      p++;
      continue;
    }
    if (*p == '-') {
      p++;
      suffix = 1;
      if (digits(&p, e, &last) != 0) return 0;
      first = 0;
    } else {
      if (digits(&p, e, &first) != 0 || p == e || *p != '-') return 0;
      p++;
      last = UINT64_MAX;
      if (p < e && *p >= '0' && *p <= '9' && digits(&p, e, &last) != 0) return 0;
      if (last < first) return 0; /* invalid (§14.1.1) */
    }
    skip_ows(p, e, &p);
    if (p < e && *p != ',') return 0;
    if (p < e) p++;
    if (++seen > HR__MAX_RANGES) return 0;
    if (suffix) {
      if (last == 0 || size == 0) continue; /* unsatisfiable */
      first = last >= size ? 0 : size - last;
      last = size - 1;
    } else {
      if (first >= size) continue; /* unsatisfiable */
      if (last >= size) last = size - 1;
    }
    out[n].first = first;
    out[n].last = last;
    total += last - first + 1;
    if (total > size) return 0; /* more than the file: not worth serving */
    n++;
  }
  if (seen == 0) return 0;
  if (n == 0) return -1;
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++)
      if (out[i].first <= out[j].last && out[j].first <= out[i].last) return 0;
  return n;
}
