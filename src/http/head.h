/* SPDX-License-Identifier: MIT */
/*
 * Response heads (RFC 9112 §4, status line; §5, field lines) and the Date
 * field (RFC 9110 §6.6.1): the one place either is rendered.  Every head
 * the server writes goes through hr__head_render: handler responses, the
 * server's own answers and errors, and 100 Continue.
 */
#ifndef HR_HTTP_HEAD_H
#define HR_HTTP_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "hroute/common.h"

/* Length of "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n". */
#define HR__DATE_FIELD_LEN 37

/* What a head says.  Spans are copied as they are: each is empty or whole
 * "name: value\r\n" lines. */
typedef struct hr__head_s {
  int status;
  hr_span_t route_fields; /* pre-rendered by the route's invoker; a line
                             whose name `fields` has too is left out */
  hr_span_t date;         /* the Date line, or empty (1xx) */
  hr_span_t fields;       /* the response's own lines */
  hr_span_t extra;        /* a line the server adds after them (the
                             request id's echo), or empty */
  int64_t length;         /* Content-Length; < 0: none */
  unsigned chunked : 1;   /* Transfer-Encoding: chunked instead */
  unsigned close : 1;     /* Connection: close */
  unsigned keep_alive : 1; /* Connection: keep-alive (persistent HTTP/1.0) */
} hr__head_t;

/* An upper bound of hr__head_render's output for `h`, in bytes. */
size_t hr__head_max(const hr__head_t *h);

/* Renders `h` into `out` (hr__head_max(h) bytes at least) and returns the
 * length.  No Content-Length goes with 1xx or 204 (RFC 9110 §8.6), nor with
 * a 304 of length 0 (its length would be the selected representation's). */
size_t hr__head_render(const hr__head_t *h, char *out);

/* Whether a handler's field named `name` goes beside the route's constant
 * field of that name rather than replacing it: Vary, a list that
 * middleware and compression add to (a route's "Vary: Cookie" stays when
 * they add "Vary: Origin" or "Vary: Accept-Encoding"; RFC 9110 §5.3 lets a
 * list field be split over several lines). */
int hr__field_adds(hr_span_t name);

/* Renders the current time as a Date line into `out` (at least
 * HR__DATE_FIELD_LEN + 1 bytes; NUL-terminated) and returns its length. */
size_t hr__date_field(char *out, size_t cap);

#endif /* HR_HTTP_HEAD_H */
