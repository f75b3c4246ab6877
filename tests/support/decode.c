/* SPDX-License-Identifier: MIT */
/* Decoders for the compression tests (decode.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef HR_HAVE_BROTLIDEC
#include <brotli/decode.h>
#endif
#ifdef HR_HAVE_ZSTD
#include <zstd.h>
#endif

enum { D_GZIP, D_BR, D_ZSTD, D_NONE };

static int kind(const char *name) {
  if (strcmp(name, "gzip") == 0) return D_GZIP;
  if (strcmp(name, "br") == 0) return D_BR;
  if (strcmp(name, "zstd") == 0) return D_ZSTD;
  return D_NONE;
}

int dec_available(const char *name) {
  switch (kind(name)) {
#ifdef HR_HAVE_ZLIB
  case D_GZIP: return 1;
#endif
#ifdef HR_HAVE_BROTLIDEC
  case D_BR: return 1;
#endif
#ifdef HR_HAVE_ZSTD
  case D_ZSTD: return 1;
#endif
  default: return 0;
  }
}

struct dec_s {
  int kind;
  char *out;
  size_t len, cap;
  int ended, failed;
#ifdef HR_HAVE_ZLIB
  z_stream z;
#endif
#ifdef HR_HAVE_BROTLIDEC
  BrotliDecoderState *br;
#endif
#ifdef HR_HAVE_ZSTD
  ZSTD_DCtx *zstd;
#endif
};

static int grow(dec_t *d, size_t more) {
  if (d->cap - d->len >= more + 1) return 0;
  while (d->cap - d->len < more + 1) d->cap = d->cap ? d->cap * 2 : 4096;
  d->out = realloc(d->out, d->cap);
  return d->out == NULL ? -1 : 0;
}

dec_t *dec_new(const char *name) {
  dec_t *d = calloc(1, sizeof(*d));
  if (d == NULL || !dec_available(name)) {
    free(d);
    return NULL;
  }
  d->kind = kind(name);
  switch (d->kind) {
#ifdef HR_HAVE_ZLIB
  case D_GZIP:
    if (inflateInit2(&d->z, 15 + 16) != Z_OK) d->failed = 1;
    break;
#endif
#ifdef HR_HAVE_BROTLIDEC
  case D_BR:
    if ((d->br = BrotliDecoderCreateInstance(NULL, NULL, NULL)) == NULL) d->failed = 1;
    break;
#endif
#ifdef HR_HAVE_ZSTD
  case D_ZSTD:
    if ((d->zstd = ZSTD_createDCtx()) == NULL) d->failed = 1;
    break;
#endif
  default:
    break;
  }
  if (d->failed || grow(d, 0) != 0) {
    dec_free(d);
    return NULL;
  }
  return d;
}

int dec_feed(dec_t *d, const void *in, size_t len) {
  if (d->failed) return -1;
  if (d->ended && len > 0) return d->failed = 1, -1; /* bytes after the end */
  switch (d->kind) {
#ifdef HR_HAVE_ZLIB
  case D_GZIP:
    d->z.next_in = (Bytef *)(uintptr_t)in;
    d->z.avail_in = (uInt)len;
    while (d->z.avail_in > 0 || len == 0) {
      int rc;
      if (grow(d, 65536) != 0) return -1;
      d->z.next_out = (Bytef *)d->out + d->len;
      d->z.avail_out = (uInt)(d->cap - d->len - 1);
      rc = inflate(&d->z, Z_SYNC_FLUSH);
      d->len = d->cap - 1 - d->z.avail_out;
      if (rc == Z_STREAM_END) {
        d->ended = 1;
        if (d->z.avail_in > 0) return d->failed = 1, -1;
        break;
      }
      if (rc == Z_BUF_ERROR && d->z.avail_in == 0) break;
      if (rc != Z_OK) return d->failed = 1, -1;
      if (len == 0) break;
    }
    break;
#endif
#ifdef HR_HAVE_BROTLIDEC
  case D_BR: {
    const uint8_t *next_in = in;
    size_t avail_in = len;
    for (;;) {
      uint8_t *next_out;
      size_t avail_out;
      BrotliDecoderResult rc;
      if (grow(d, 65536) != 0) return -1;
      next_out = (uint8_t *)d->out + d->len;
      avail_out = d->cap - d->len - 1;
      rc = BrotliDecoderDecompressStream(d->br, &avail_in, &next_in, &avail_out, &next_out, NULL);
      d->len = d->cap - 1 - avail_out;
      if (rc == BROTLI_DECODER_RESULT_SUCCESS) {
        d->ended = 1;
        if (avail_in > 0) return d->failed = 1, -1;
        break;
      }
      if (rc == BROTLI_DECODER_RESULT_ERROR) return d->failed = 1, -1;
      if (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) break;
    }
    break;
  }
#endif
#ifdef HR_HAVE_ZSTD
  case D_ZSTD: {
    ZSTD_inBuffer ib = {in, len, 0};
    for (;;) {
      ZSTD_outBuffer ob;
      size_t rc;
      if (grow(d, 65536) != 0) return -1;
      ob.dst = d->out + d->len;
      ob.size = d->cap - d->len - 1;
      ob.pos = 0;
      rc = ZSTD_decompressStream(d->zstd, &ob, &ib);
      d->len += ob.pos;
      if (ZSTD_isError(rc)) return d->failed = 1, -1;
      if (rc == 0) d->ended = 1; /* a frame ended */
      if (ib.pos == ib.size && ob.pos < ob.size) break;
    }
    break;
  }
#endif
  default:
    return -1;
  }
  d->out[d->len] = '\0';
  return 0;
}

const char *dec_out(const dec_t *d, size_t *len) {
  *len = d->len;
  return d->out;
}

int dec_ended(const dec_t *d) { return d->ended; }

void dec_free(dec_t *d) {
  if (d == NULL) return;
  switch (d->kind) {
#ifdef HR_HAVE_ZLIB
  case D_GZIP: inflateEnd(&d->z); break;
#endif
#ifdef HR_HAVE_BROTLIDEC
  case D_BR: BrotliDecoderDestroyInstance(d->br); break;
#endif
#ifdef HR_HAVE_ZSTD
  case D_ZSTD: ZSTD_freeDCtx(d->zstd); break;
#endif
  default: break;
  }
  free(d->out);
  free(d);
}

char *dec_whole(const char *name, const void *in, size_t len, size_t *out_len) {
  dec_t *d = dec_new(name);
  char *out;
  if (d == NULL) return NULL;
  if (dec_feed(d, in, len) != 0 || !d->ended) {
    dec_free(d);
    return NULL;
  }
  out = d->out;
  *out_len = d->len;
  d->out = NULL;
  dec_free(d);
  return out;
}
