/* SPDX-License-Identifier: MIT */
/*
 * The frame boundaries of what an HTTP/2 client sends, watched by hroute
 * before nghttp2 reads the bytes, for the one rule nghttp2 1.52 leaves to
 * the application: a HEADERS frame that opens a stream whose identifier
 * is lower than one the client opened before is a connection error of
 * type PROTOCOL_ERROR (RFC 9113 §5.1.1).  nghttp2 ignores such a frame,
 * since it cannot tell it from trailers sent on a stream it reset and
 * forgot; hroute asks nghttp2 whether it still knows the stream (it keeps
 * recently closed ones), and only a stream it never knew is the error.
 *
 * The scanner passes the client preface (24 bytes, §3.4), then each frame
 * header (9 bytes, §4.1) and its payload, in pieces as reads cut them.
 */
#include <string.h>

#include "server/h2/h2.h"

void hr__h2scan_init(hr__h2scan_t *s) {
  memset(s, 0, sizeof(*s));
  s->skip = 24;
}

size_t hr__h2scan(hr__h2scan_t *s, const uint8_t *p, size_t n, int32_t *id) {
  size_t i = 0;
  *id = 0;
  while (i < n) {
    if (s->skip > 0 || s->left > 0) { /* the preface, or a payload */
      uint32_t *rest = s->skip > 0 ? &s->skip : &s->left;
      size_t take = n - i < *rest ? n - i : *rest;
      *rest -= (uint32_t)take;
      i += take;
      continue;
    }
    s->hdr[s->have++] = p[i++];
    if (s->have < 9) continue;
    s->have = 0;
    s->left = (uint32_t)s->hdr[0] << 16 | (uint32_t)s->hdr[1] << 8 | s->hdr[2];
    if (s->hdr[3] == NGHTTP2_HEADERS) {
      int32_t sid = (int32_t)(((uint32_t)s->hdr[5] << 24 | (uint32_t)s->hdr[6] << 16 |
                               (uint32_t)s->hdr[7] << 8 | s->hdr[8]) & 0x7fffffffu);
      if (sid < s->max_id) {
        *id = sid;
        return i;
      }
      s->max_id = sid;
    }
  }
  return i;
}
