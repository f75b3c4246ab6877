/* SPDX-License-Identifier: MIT */
/*
 * Hand-built HTTP/2 frames (RFC 9113 §4 and §6) for tests that send what a
 * well-behaved client never would: a HEADERS frame without END_HEADERS
 * followed by endless CONTINUATION frames, RST_STREAM right after HEADERS,
 * WINDOW_UPDATE with a zero increment, floods of PING or SETTINGS.  Each
 * builder appends one frame to an h2_bytes_t (h2sock.h); header blocks are
 * HPACK-encoded by nghttp2's deflater (an h2f_fields_t list in, the block
 * out).  Frame type, flag and error-code values are nghttp2's
 * (NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, NGHTTP2_ENHANCE_YOUR_CALM...).
 * Nothing here checks that a frame is valid: that is the point.
 */
#ifndef HR_TEST_H2FRAMES_H
#define HR_TEST_H2FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "h2sock.h"

/* The frame header's size (RFC 9113 §4.1). */
#define H2F_HEAD_LEN 9

/* A field line to encode (borrowed, NUL-terminated). */
typedef struct h2f_field_s {
  const char *name;
  const char *value;
} h2f_field_t;

/* A parsed frame header. */
typedef struct h2f_head_s {
  uint32_t length; /* payload bytes (24 bits) */
  uint8_t type;
  uint8_t flags;
  int32_t stream;  /* the reserved bit cleared */
} h2f_head_t;

/* The client connection preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" (§3.4),
 * without the SETTINGS frame that must follow it. */
void h2f_preface(h2_bytes_t *b);
/* Any frame: the 9-byte header and `len` payload bytes (p NULL: zeros). */
void h2f_frame(h2_bytes_t *b, uint8_t type, uint8_t flags, int32_t stream,
               const void *p, size_t len);
/* SETTINGS with n parameters (§6.5); n 0 sends an empty one. */
void h2f_settings(h2_bytes_t *b, const nghttp2_settings_entry *iv, size_t n);
/* SETTINGS with the ACK flag. */
void h2f_settings_ack(h2_bytes_t *b);
/* PING (§6.7) with 8 opaque bytes (NULL: zeros); `ack` sets the ACK flag. */
void h2f_ping(h2_bytes_t *b, int ack, const uint8_t data[8]);
/* RST_STREAM (§6.4). */
void h2f_rst_stream(h2_bytes_t *b, int32_t stream, uint32_t error);
/* WINDOW_UPDATE (§6.9) for a stream (0: the connection); `increment` is
 * sent as given, 0 included. */
void h2f_window_update(h2_bytes_t *b, int32_t stream, uint32_t increment);
/* PRIORITY (§6.3): stream depends on `dep` with `weight` (1..256). */
void h2f_priority(h2_bytes_t *b, int32_t stream, int32_t dep, int weight,
                  int exclusive);
/* GOAWAY (§6.8) without debug data. */
void h2f_goaway(h2_bytes_t *b, int32_t last_id, uint32_t error);
/* DATA (§6.1) with `flags` (NGHTTP2_FLAG_END_STREAM or 0). */
void h2f_data(h2_bytes_t *b, int32_t stream, uint8_t flags, const void *p,
              size_t len);

/* HPACK-encodes n fields with `enc` (whose dynamic table persists across
 * calls, as the connection's does) and appends the block to `out`.
 * Returns 0, or an nghttp2 error code (negative). */
int h2f_encode(nghttp2_hd_deflater *enc, h2_bytes_t *out,
               const h2f_field_t *f, size_t n);
/* A request's header block: :method, :scheme, :path, :authority, then the
 * n extra fields.  Returns 0 or an nghttp2 error code. */
int h2f_encode_request(nghttp2_hd_deflater *enc, h2_bytes_t *out,
                       const char *method, const char *scheme,
                       const char *path, const char *authority,
                       const h2f_field_t *extra, size_t n);
/* HPACK by hand (RFC 7541), for blocks the deflater would not write: a
 * field as a literal with incremental indexing and a new name, neither
 * Huffman-coded (§6.2.1), which enters the dynamic table whatever its
 * size (the deflater leaves large ones out); and an indexed field (§6.1),
 * one byte for indexes below 127. */
void h2f_hpack_literal(h2_bytes_t *out, const char *name, const char *value);
void h2f_hpack_indexed(h2_bytes_t *out, uint32_t index);
/* A header block split into frames of at most `max_frame` payload bytes:
 * HEADERS (with `flags`: NGHTTP2_FLAG_END_STREAM or 0) then CONTINUATION
 * frames, END_HEADERS on the last one. */
void h2f_headers(h2_bytes_t *b, int32_t stream, uint8_t flags,
                 const uint8_t *block, size_t len, size_t max_frame);

/* Parses the frame header at p (at least H2F_HEAD_LEN bytes). */
void h2f_parse_head(const uint8_t *p, h2f_head_t *h);

#endif
