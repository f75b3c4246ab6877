/* SPDX-License-Identifier: MIT */
/* The hand-driven HTTP/2 client connection (h2raw.h): its frame reader and
 * its loop. */
#include "h2raw.h"

#include <stdio.h>
#include <string.h>

static int on_read(void *arg, const uint8_t *p, size_t n);

int h2r_open(h2r_t *r, int port, const h2s_options_t *o) { return h2r_open_ack(r, port, o, 1); }

int h2r_open_ack(h2r_t *r, int port, const h2s_options_t *o, int auto_ack) {
  memset(r, 0, sizeof *r);
  if (h2_loop_open(&r->io, port, o, on_read, NULL, r) != 0) return -1;
  if (nghttp2_hd_deflate_new(&r->enc, 4096) != 0 ||
      nghttp2_hd_inflate_new(&r->dec) != 0)
    return -1;
  r->next_stream = 1;
  r->auto_ack = auto_ack;
  r->auto_window = 1;
  r->scheme = r->io.sock.is_tls ? "https" : "http";
  snprintf(r->authority, sizeof r->authority, "127.0.0.1:%d", port);
  h2f_preface(&r->io.out);
  h2f_settings(&r->io.out, NULL, 0);
  return h2r_flush(r);
}

h2_bytes_t *h2r_out(h2r_t *r) { return &r->io.out; }

int32_t h2r_request(h2r_t *r, const char *method, const char *path,
                    int end_stream, const h2f_field_t *extra, size_t n) {
  h2_bytes_t block = {0};
  int32_t id = r->next_stream;
  /* past 2^31-1 the identifiers are used up: wraps, not overflows */
  r->next_stream = (int32_t)(((uint32_t)id + 2u) & 0x7fffffffu);
  h2f_encode_request(r->enc, &block, method, r->scheme, path, r->authority,
                     extra, n);
  h2f_headers(&r->io.out, id, end_stream ? NGHTTP2_FLAG_END_STREAM : 0,
              block.p, block.len, 16384);
  h2_bytes_free(&block);
  return id;
}

/* Decodes the header block gathered in r->block onto its stream. */
static void decode_block(h2r_t *r) {
  const uint8_t *p = r->block.p;
  size_t n = r->block.len;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    ssize_t used = nghttp2_hd_inflate_hd2(r->dec, &nv, &flags, p, n, 1);
    if (used < 0) {
      r->decode_error = (int)used;
      break;
    }
    p += used;
    n -= (size_t)used;
    if (flags & NGHTTP2_HD_INFLATE_EMIT)
      h2_block_field(&r->decoding, nv.name, nv.namelen, nv.value, nv.valuelen);
    if (flags & NGHTTP2_HD_INFLATE_FINAL) {
      nghttp2_hd_inflate_end_headers(r->dec);
      break;
    }
    if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && n == 0) break;
  }
  if (r->block_end_stream) r->decoding.st->ended = r->decoding.st->closed = 1;
  r->block.off = r->block.len = 0;
}

/* The payload of a DATA or HEADERS frame without its padding (and, for
 * HEADERS, its priority fields).  Returns 0, or -1 when malformed. */
static int strip(const h2f_head_t *h, const uint8_t **p, size_t *n) {
  size_t pad = 0;
  if (h->flags & NGHTTP2_FLAG_PADDED) {
    if (*n < 1) return -1;
    pad = **p;
    ++*p;
    --*n;
  }
  if (h->type == NGHTTP2_HEADERS && (h->flags & NGHTTP2_FLAG_PRIORITY)) {
    if (*n < 5) return -1;
    *p += 5;
    *n -= 5;
  }
  if (pad > *n) return -1;
  *n -= pad;
  return 0;
}

static void on_settings(h2r_t *r, const h2f_head_t *h, const uint8_t *p) {
  size_t i;
  if (h->flags & NGHTTP2_FLAG_ACK) {
    r->io.seen.settings_acks++;
    return;
  }
  r->io.seen.settings++;
  for (i = 0; i + 6 <= h->length; i += 6)
    h2_seen_setting(&r->io.seen, (uint16_t)(p[i] << 8 | p[i + 1]),
                    (uint32_t)p[i + 2] << 24 | (uint32_t)p[i + 3] << 16 |
                        (uint32_t)p[i + 4] << 8 | p[i + 5]);
  if (r->auto_ack) h2f_settings_ack(&r->io.out);
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void on_frame(h2r_t *r, const h2f_head_t *h, const uint8_t *p) {
  size_t n = h->length;
  h2_stream_t *st;
  h2_seen_frame(&r->io.seen, h->type);
  switch (h->type) {
    case NGHTTP2_DATA:
      st = h2_seen_stream_make(&r->io.seen, h->stream);
      st->data_frames++;
      if (strip(h, &p, &n) == 0) h2_stream_append(st, p, n);
      if (h->flags & NGHTTP2_FLAG_END_STREAM) st->ended = st->closed = 1;
      if (r->auto_window && h->length > 0) {
        h2f_window_update(&r->io.out, 0, h->length);
        if (!st->ended) h2f_window_update(&r->io.out, h->stream, h->length);
      }
      break;
    case NGHTTP2_HEADERS:
      if (strip(h, &p, &n) != 0) break;
      h2_block_begin(&r->decoding, h2_seen_stream_make(&r->io.seen, h->stream));
      r->block_end_stream = (h->flags & NGHTTP2_FLAG_END_STREAM) != 0;
      r->block.off = r->block.len = 0;
      /* fall through */
    case NGHTTP2_CONTINUATION:
      h2_bytes_add(&r->block, p, n);
      if ((h->flags & NGHTTP2_FLAG_END_HEADERS) && r->decoding.st != NULL)
        decode_block(r);
      break;
    case NGHTTP2_RST_STREAM:
      st = h2_seen_stream_make(&r->io.seen, h->stream);
      st->reset = st->closed = 1;
      st->rst_error = st->close_error = n >= 4 ? be32(p) : 0;
      r->io.seen.rst_streams++;
      break;
    case NGHTTP2_SETTINGS:
      on_settings(r, h, p);
      break;
    case NGHTTP2_PING:
      if (h->flags & NGHTTP2_FLAG_ACK)
        r->io.seen.ping_acks++;
      else if (r->auto_ack && n == 8)
        h2f_ping(&r->io.out, 1, p);
      break;
    case NGHTTP2_GOAWAY:
      if (n >= 8)
        h2_seen_goaway(&r->io.seen, (int32_t)(be32(p) & 0x7fffffffu), be32(p + 4),
                       p + 8, n - 8);
      break;
    default:
      break;
  }
}

static int on_read(void *arg, const uint8_t *p, size_t n) {
  h2r_t *r = arg;
  r->io.seen.bytes_in += n;
  h2_bytes_add(&r->in, p, n);
  while (h2_bytes_pending(&r->in) >= H2F_HEAD_LEN) {
    h2f_head_t h;
    h2f_parse_head(r->in.p + r->in.off, &h);
    if (h2_bytes_pending(&r->in) < H2F_HEAD_LEN + (size_t)h.length) break;
    on_frame(r, &h, r->in.p + r->in.off + H2F_HEAD_LEN);
    h2_bytes_consume(&r->in, H2F_HEAD_LEN + (size_t)h.length);
  }
  return 0;
}

int h2r_flush(h2r_t *r) { return h2_loop_flush(&r->io); }

int h2r_wait_stream(h2r_t *r, int32_t id) {
  h2_loop_streams_t w = {&r->io.seen, &id, 1};
  return h2_loop_run(&r->io, h2_loop_streams_closed, &w);
}

int h2r_wait_goaway(h2r_t *r) {
  return h2_loop_run(&r->io, h2_loop_got_goaway, &r->io.seen);
}

int h2r_wait_closed(h2r_t *r) { return h2_loop_wait_closed(&r->io); }

void h2r_close(h2r_t *r) {
  h2_loop_close(&r->io, 0);
  h2_bytes_free(&r->in);
  h2_bytes_free(&r->block);
  if (r->enc != NULL) nghttp2_hd_deflate_del(r->enc);
  if (r->dec != NULL) nghttp2_hd_inflate_del(r->dec);
  memset(r, 0, sizeof *r);
}
