/* SPDX-License-Identifier: MIT */
/*
 * Response head rendering and the Date field (see head.h).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hroute/http.h"
#include "http/head.h"

size_t hr__head_max(const hr__head_t *h) {
  return 9 + 4 + strlen(hr_status_reason(h->status)) + 2 + h->route_fields.len +
         h->date.len + h->fields.len + h->extra.len + 16 + 20 + 2 + 28 + 24 + 2;
}

static char *put(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}

static char *put_uint(char *p, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n) *p++ = tmp[--n];
  return p;
}

/* Whether the "name: value\r\n" lines of `fields` have one named `name`
 * (ASCII case-insensitively, RFC 9110 §5.1). */
static int has_field(hr_span_t fields, hr_span_t name) {
  const char *p = fields.ptr, *end = fields.ptr + fields.len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p)), *colon;
    size_t n;
    if (eol == NULL) eol = end;
    colon = memchr(p, ':', (size_t)(eol - p));
    n = colon ? (size_t)(colon - p) : 0;
    if (n == name.len && hr_span_eq_nocase((hr_span_t){p, n}, name)) return 1;
    p = eol + 1;
  }
  return 0;
}

int hr__field_adds(hr_span_t name) { return hr_span_eq_nocase(name, HR_SPAN_LIT("Vary")); }

/* The route's constant lines, but those the response itself names: a
 * handler's field replaces the route's field of that name (but for
 * hr__field_adds's). */
static char *put_route_fields(char *p, hr_span_t route, hr_span_t own) {
  const char *l = route.ptr, *end = route.ptr + route.len;
  if (own.len == 0) return put(p, route.ptr, route.len);
  while (l < end) {
    const char *eol = memchr(l, '\n', (size_t)(end - l)), *colon;
    size_t len;
    eol = eol ? eol + 1 : end;
    len = (size_t)(eol - l);
    colon = memchr(l, ':', len);
    if (colon == NULL || hr__field_adds((hr_span_t){l, (size_t)(colon - l)}) ||
        !has_field(own, (hr_span_t){l, (size_t)(colon - l)}))
      p = put(p, l, len);
    l = eol;
  }
  return p;
}

size_t hr__head_render(const hr__head_t *h, char *out) {
  const char *reason = hr_status_reason(h->status);
  int st = h->status;
  char *p = out;
  p = put(p, "HTTP/1.1 ", 9);
  p = put_uint(p, (uint64_t)(st > 0 && st < 1000 ? st : 500));
  *p++ = ' ';
  p = put(p, reason, strlen(reason));
  p = put(p, "\r\n", 2);
  if (h->route_fields.len) p = put_route_fields(p, h->route_fields, h->fields);
  if (h->date.len) p = put(p, h->date.ptr, h->date.len);
  if (h->fields.len) p = put(p, h->fields.ptr, h->fields.len);
  if (h->extra.len) p = put(p, h->extra.ptr, h->extra.len);
  if (h->chunked) {
    p = put(p, "Transfer-Encoding: chunked\r\n", 28);
  } else if (h->length >= 0 && st >= 200 && st != 204 &&
             !(st == 304 && h->length == 0)) {
    p = put(p, "Content-Length: ", 16);
    p = put_uint(p, (uint64_t)h->length);
    p = put(p, "\r\n", 2);
  }
  if (h->close)
    p = put(p, "Connection: close\r\n", 19);
  else if (h->keep_alive)
    p = put(p, "Connection: keep-alive\r\n", 24);
  p = put(p, "\r\n", 2);
  return (size_t)(p - out);
}

size_t hr__date_field(char *out, size_t cap) {
  static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t now = time(NULL);
  struct tm tm;
  int n;
  gmtime_r(&now, &tm);
  /* IMF-fixdate (RFC 9110 §5.6.7) */
  n = snprintf(out, cap, "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
               days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
               tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
