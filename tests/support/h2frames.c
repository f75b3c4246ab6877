/* SPDX-License-Identifier: MIT */
/* Hand-built HTTP/2 frames (h2frames.h): big-endian fields written byte by
 * byte as RFC 9113 §4.1 and §6 lay them out. */
#include "h2frames.h"

#include <string.h>

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void h2f_preface(h2_bytes_t *b) {
  static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  h2_bytes_add(b, preface, sizeof preface - 1);
}

void h2f_frame(h2_bytes_t *b, uint8_t type, uint8_t flags, int32_t stream,
               const void *p, size_t len) {
  uint8_t *h = h2_bytes_add(b, NULL, H2F_HEAD_LEN);
  h[0] = (uint8_t)(len >> 16);
  h[1] = (uint8_t)(len >> 8);
  h[2] = (uint8_t)len;
  h[3] = type;
  h[4] = flags;
  put32(h + 5, (uint32_t)stream & 0x7fffffffu);
  h2_bytes_add(b, p, len);
}

void h2f_settings(h2_bytes_t *b, const nghttp2_settings_entry *iv, size_t n) {
  uint8_t p[6 * 16];
  size_t i;
  if (n > 16) n = 16;
  for (i = 0; i < n; i++) {
    p[6 * i] = (uint8_t)(iv[i].settings_id >> 8);
    p[6 * i + 1] = (uint8_t)iv[i].settings_id;
    put32(p + 6 * i + 2, iv[i].value);
  }
  h2f_frame(b, NGHTTP2_SETTINGS, NGHTTP2_FLAG_NONE, 0, p, 6 * n);
}

void h2f_settings_ack(h2_bytes_t *b) {
  h2f_frame(b, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, NULL, 0);
}

void h2f_ping(h2_bytes_t *b, int ack, const uint8_t data[8]) {
  h2f_frame(b, NGHTTP2_PING, ack ? NGHTTP2_FLAG_ACK : NGHTTP2_FLAG_NONE, 0,
            data, 8);
}

void h2f_rst_stream(h2_bytes_t *b, int32_t stream, uint32_t error) {
  uint8_t p[4];
  put32(p, error);
  h2f_frame(b, NGHTTP2_RST_STREAM, NGHTTP2_FLAG_NONE, stream, p, sizeof p);
}

void h2f_window_update(h2_bytes_t *b, int32_t stream, uint32_t increment) {
  uint8_t p[4];
  put32(p, increment & 0x7fffffffu);
  h2f_frame(b, NGHTTP2_WINDOW_UPDATE, NGHTTP2_FLAG_NONE, stream, p, sizeof p);
}

void h2f_priority(h2_bytes_t *b, int32_t stream, int32_t dep, int weight,
                  int exclusive) {
  uint8_t p[5];
  put32(p, ((uint32_t)dep & 0x7fffffffu) | (exclusive ? 0x80000000u : 0));
  p[4] = (uint8_t)(weight - 1);
  h2f_frame(b, NGHTTP2_PRIORITY, NGHTTP2_FLAG_NONE, stream, p, sizeof p);
}

void h2f_goaway(h2_bytes_t *b, int32_t last_id, uint32_t error) {
  uint8_t p[8];
  put32(p, (uint32_t)last_id & 0x7fffffffu);
  put32(p + 4, error);
  h2f_frame(b, NGHTTP2_GOAWAY, NGHTTP2_FLAG_NONE, 0, p, sizeof p);
}

void h2f_data(h2_bytes_t *b, int32_t stream, uint8_t flags, const void *p,
              size_t len) {
  h2f_frame(b, NGHTTP2_DATA, flags, stream, p, len);
}

int h2f_encode(nghttp2_hd_deflater *enc, h2_bytes_t *out,
               const h2f_field_t *f, size_t n) {
  nghttp2_nv nv[64];
  size_t i, bound;
  ssize_t len;
  uint8_t *at;
  if (n > sizeof nv / sizeof nv[0]) return NGHTTP2_ERR_INVALID_ARGUMENT;
  for (i = 0; i < n; i++) {
    nv[i].name = (uint8_t *)(uintptr_t)f[i].name;
    nv[i].namelen = strlen(f[i].name);
    nv[i].value = (uint8_t *)(uintptr_t)f[i].value;
    nv[i].valuelen = strlen(f[i].value);
    nv[i].flags = NGHTTP2_NV_FLAG_NONE;
  }
  bound = nghttp2_hd_deflate_bound(enc, nv, n);
  at = h2_bytes_add(out, NULL, bound);
  len = nghttp2_hd_deflate_hd(enc, at, bound, nv, n);
  out->len -= bound - (len > 0 ? (size_t)len : 0);
  return len < 0 ? (int)len : 0;
}

int h2f_encode_request(nghttp2_hd_deflater *enc, h2_bytes_t *out,
                       const char *method, const char *scheme,
                       const char *path, const char *authority,
                       const h2f_field_t *extra, size_t n) {
  h2f_field_t f[64];
  size_t i;
  if (n > 60) return NGHTTP2_ERR_INVALID_ARGUMENT;
  f[0] = (h2f_field_t){":method", method};
  f[1] = (h2f_field_t){":scheme", scheme};
  f[2] = (h2f_field_t){":path", path};
  f[3] = (h2f_field_t){":authority", authority};
  for (i = 0; i < n; i++) f[4 + i] = extra[i];
  return h2f_encode(enc, out, f, 4 + n);
}

/* An HPACK integer with an n-bit prefix (RFC 7541 §5.1) whose first byte
 * carries `high` in the bits above the prefix. */
static void hpack_int(h2_bytes_t *out, uint8_t high, int nbits, uint32_t v) {
  uint32_t max = (1u << nbits) - 1;
  uint8_t b;
  if (v < max) {
    b = (uint8_t)(high | v);
    h2_bytes_add(out, &b, 1);
    return;
  }
  b = (uint8_t)(high | max);
  h2_bytes_add(out, &b, 1);
  for (v -= max; v >= 128; v >>= 7) {
    b = (uint8_t)(0x80 | (v & 0x7f));
    h2_bytes_add(out, &b, 1);
  }
  b = (uint8_t)v;
  h2_bytes_add(out, &b, 1);
}

void h2f_hpack_literal(h2_bytes_t *out, const char *name, const char *value) {
  size_t nlen = strlen(name), vlen = strlen(value);
  hpack_int(out, 0x40, 6, 0); /* literal with incremental indexing, new name */
  hpack_int(out, 0x00, 7, (uint32_t)nlen);
  h2_bytes_add(out, name, nlen);
  hpack_int(out, 0x00, 7, (uint32_t)vlen);
  h2_bytes_add(out, value, vlen);
}

void h2f_hpack_indexed(h2_bytes_t *out, uint32_t index) { hpack_int(out, 0x80, 7, index); }

void h2f_headers(h2_bytes_t *b, int32_t stream, uint8_t flags,
                 const uint8_t *block, size_t len, size_t max_frame) {
  uint8_t type = NGHTTP2_HEADERS;
  do {
    size_t n = len < max_frame ? len : max_frame;
    uint8_t f = (uint8_t)((type == NGHTTP2_HEADERS ? flags : 0) |
                          (n == len ? NGHTTP2_FLAG_END_HEADERS : 0));
    h2f_frame(b, type, f, stream, block, n);
    block += n;
    len -= n;
    type = NGHTTP2_CONTINUATION;
  } while (len > 0);
}

void h2f_parse_head(const uint8_t *p, h2f_head_t *h) {
  h->length = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
  h->type = p[3];
  h->flags = p[4];
  h->stream = (int32_t)(get32(p + 5) & 0x7fffffffu);
}
