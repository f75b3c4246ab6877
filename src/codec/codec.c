/* SPDX-License-Identifier: MIT */
/*
 * The encoders of codec.h: whole bodies with libdeflate (gzip), Brotli's
 * one-shot encoder and a zstd context kept per loop; streams with zlib's
 * deflate (gzip wrapper), Brotli's and zstd's streaming encoders, each
 * flushed at every write.  A library that was not found at build time
 * leaves its coding unavailable (hr__coding_available).
 *
 * Memory per stream, from the settings below (a stream lives as long as
 * its response): gzip an 8 KiB window and memLevel 6, br a 64 KiB window
 * (and quality 3 at most, exchange/compress.c), zstd a 16 KiB window and
 * 2^13-entry match tables; docs/serving.md gives the figures measured.  Whole bodies use the loop's encoders, made once.
 */
#include <limits.h>
#include <string.h>

#include "codec/codec.h"

#ifdef HR_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef HR_HAVE_BROTLI
#include <brotli/encode.h>
#endif
#ifdef HR_HAVE_ZSTD
/* ZSTD_createCCtx_advanced, for the server's allocator: declared under
 * ZSTD_STATIC_LINKING_ONLY, exported by the shared library too, and
 * unchanged since zstd 1.0. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#endif

/* Compression levels libdeflate takes (1..12). */
#define DEFLATE_LEVELS 12

int hr__coding_available(int c) {
  switch (c) {
  case HR_CODING_GZIP:
#if defined(HR_HAVE_ZLIB)
    return 1; /* streams need zlib; whole bodies use libdeflate when there */
#else
    return 0;
#endif
  case HR_CODING_BR:
#ifdef HR_HAVE_BROTLI
    return 1;
#else
    return 0;
#endif
  case HR_CODING_ZSTD:
#ifdef HR_HAVE_ZSTD
    return 1;
#else
    return 0;
#endif
  default:
    return 0;
  }
}

hr_span_t hr__coding_name(int c) {
  static const hr_span_t names[HR__CODINGS] = {
      HR_SPAN_INIT("identity"), HR_SPAN_INIT("gzip"), HR_SPAN_INIT("br"), HR_SPAN_INIT("zstd")};
  return c > 0 && c < HR__CODINGS ? names[c] : names[0];
}

#if defined(HR_HAVE_BROTLI) || defined(HR_HAVE_ZSTD)
/* The server's allocator for Brotli's and zstd's state. */
static void *lib_alloc(void *opaque, size_t n) { return hr__mem_alloc(opaque, n); }
static void lib_free(void *opaque, void *p) { hr__mem_free(opaque, p); }
#endif
#ifdef HR_HAVE_ZSTD
static ZSTD_CCtx *zstd_new(hr__mem_t *m) {
  ZSTD_customMem cm = {lib_alloc, lib_free, m};
  return ZSTD_createCCtx_advanced(cm);
}
#endif

/* ---- whole bodies ---------------------------------------------------------------- */

struct hr__codecs_s {
  hr__mem_t *m;
#ifdef HR_HAVE_LIBDEFLATE
  struct libdeflate_compressor *deflate[DEFLATE_LEVELS + 1]; /* by level, made when first used */
#endif
#ifdef HR_HAVE_ZSTD
  ZSTD_CCtx *zstd;
#endif
  int unused;
};

hr__codecs_t *hr__codecs_new(hr__mem_t *m) {
  hr__codecs_t *c = hr__mem_alloc(m, sizeof(*c));
  if (c != NULL) {
    memset(c, 0, sizeof(*c));
    c->m = m;
  }
  return c;
}

void hr__codecs_free(hr__codecs_t *c) {
  if (c == NULL) return;
#ifdef HR_HAVE_LIBDEFLATE
  for (int i = 0; i <= DEFLATE_LEVELS; i++)
    if (c->deflate[i] != NULL) libdeflate_free_compressor(c->deflate[i]);
#endif
#ifdef HR_HAVE_ZSTD
  ZSTD_freeCCtx(c->zstd);
#endif
  hr__mem_free(c->m, c);
}

size_t hr__compress_bound(int c, size_t len) {
  switch (c) {
#ifdef HR_HAVE_BROTLI
  case HR_CODING_BR:
    return BrotliEncoderMaxCompressedSize(len) ? BrotliEncoderMaxCompressedSize(len) : len + 1024;
#endif
#ifdef HR_HAVE_ZSTD
  case HR_CODING_ZSTD:
    return ZSTD_compressBound(len);
#endif
  default:
    /* gzip: deflate's stored blocks (5 bytes per 64 KiB and the rest)
     * and the 18 bytes of gzip's header and trailer, with room to spare. */
    return len + len / 1000 + (len / 16384 + 1) * 5 + 64;
  }
}

#ifdef HR_HAVE_LIBDEFLATE
static size_t gzip_whole(hr__codecs_t *cs, int level, const void *in, size_t len, void *out,
                         size_t cap) {
  if (level < 1) level = 1;
  if (level > DEFLATE_LEVELS) level = DEFLATE_LEVELS;
  if (cs->deflate[level] == NULL && (cs->deflate[level] = libdeflate_alloc_compressor(level)) == NULL)
    return 0;
  return libdeflate_gzip_compress(cs->deflate[level], in, len, out, cap);
}
#elif defined(HR_HAVE_ZLIB)
static size_t gzip_whole(hr__codecs_t *cs, int level, const void *in, size_t len, void *out,
                         size_t cap) {
  hr__zstream_t *z = hr__zstream_new(cs->m, HR_CODING_GZIP, level);
  char *buf = NULL;
  size_t bcap = 0, n;
  if (z == NULL) return 0;
  n = hr__zstream_write(z, in, len, 1, &buf, &bcap);
  hr__zstream_free(z);
  if (n == (size_t)-1 || n > cap) n = 0;
  else memcpy(out, buf, n);
  hr__mem_free(cs->m, buf);
  return n;
}
#endif

size_t hr__compress(hr__codecs_t *cs, int c, int level, const void *in, size_t len, void *out,
                    size_t cap) {
  switch (c) {
#if defined(HR_HAVE_LIBDEFLATE) || defined(HR_HAVE_ZLIB)
  case HR_CODING_GZIP:
    return gzip_whole(cs, level, in, len, out, cap);
#endif
#ifdef HR_HAVE_BROTLI
  case HR_CODING_BR: {
    size_t n = cap;
    if (!BrotliEncoderCompress(level, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, len, in, &n, out))
      return 0;
    return n;
  }
#endif
#ifdef HR_HAVE_ZSTD
  case HR_CODING_ZSTD: {
    size_t n;
    if (cs->zstd == NULL && (cs->zstd = zstd_new(cs->m)) == NULL) return 0;
    n = ZSTD_compressCCtx(cs->zstd, out, cap, in, len, level);
    return ZSTD_isError(n) ? 0 : n;
  }
#endif
  default:
    (void)cs;
    (void)level;
    (void)in;
    (void)len;
    (void)out;
    (void)cap;
    return 0;
  }
}

/* ---- streams -------------------------------------------------------------------- */

struct hr__zstream_s {
  hr__mem_t *m;
  int coding;
#ifdef HR_HAVE_ZLIB
  z_stream z;
#endif
#ifdef HR_HAVE_BROTLI
  BrotliEncoderState *br;
#endif
#ifdef HR_HAVE_ZSTD
  ZSTD_CCtx *zstd;
#endif
};

#ifdef HR_HAVE_ZLIB
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  return hr__mem_alloc(opaque, (size_t)items * size);
}
static void z_free(voidpf opaque, voidpf p) { hr__mem_free(opaque, p); }
#endif

hr__zstream_t *hr__zstream_new(hr__mem_t *m, int c, int level) {
  hr__zstream_t *z = hr__mem_alloc(m, sizeof(*z));
  int ok = 0;
  if (z == NULL) return NULL;
  memset(z, 0, sizeof(*z));
  z->m = m;
  z->coding = c;
  switch (c) {
#ifdef HR_HAVE_ZLIB
  case HR_CODING_GZIP:
    z->z.zalloc = z_alloc;
    z->z.zfree = z_free;
    z->z.opaque = m;
    /* 13 + 16: an 8 KiB window, and the gzip wrapper (RFC 1952); memLevel
     * 6: a stream lives as long as its response (an event stream for
     * hours), so its memory counts more than the last percent of ratio. */
    ok = deflateInit2(&z->z, level < 1 ? 1 : level > 9 ? 9 : level, Z_DEFLATED, 13 + 16, 6,
                      Z_DEFAULT_STRATEGY) == Z_OK;
    break;
#endif
#ifdef HR_HAVE_BROTLI
  case HR_CODING_BR:
    if ((z->br = BrotliEncoderCreateInstance(lib_alloc, lib_free, m)) != NULL) {
      BrotliEncoderSetParameter(z->br, BROTLI_PARAM_QUALITY, (uint32_t)(level < 0 ? 0 : level));
      BrotliEncoderSetParameter(z->br, BROTLI_PARAM_LGWIN, 16); /* a 64 KiB window */
      BrotliEncoderSetParameter(z->br, BROTLI_PARAM_LGBLOCK, 16);
      ok = 1;
    }
    break;
#endif
#ifdef HR_HAVE_ZSTD
  case HR_CODING_ZSTD:
    if ((z->zstd = zstd_new(m)) != NULL) {
      /* A 16 KiB window and small match tables (the level's own are sized
       * for whole files: about 1.2 MiB of context at level 3; these, about
       * 200 KiB). */
      ZSTD_CCtx_setParameter(z->zstd, ZSTD_c_compressionLevel, level);
      ZSTD_CCtx_setParameter(z->zstd, ZSTD_c_windowLog, 14);
      ZSTD_CCtx_setParameter(z->zstd, ZSTD_c_hashLog, 13);
      ZSTD_CCtx_setParameter(z->zstd, ZSTD_c_chainLog, 13);
      ok = 1;
    }
    break;
#endif
  default:
    (void)level;
    break;
  }
  if (!ok) {
    hr__mem_free(m, z);
    return NULL;
  }
  return z;
}

void hr__zstream_free(hr__zstream_t *z) {
  if (z == NULL) return;
  switch (z->coding) {
#ifdef HR_HAVE_ZLIB
  case HR_CODING_GZIP:
    deflateEnd(&z->z);
    break;
#endif
#ifdef HR_HAVE_BROTLI
  case HR_CODING_BR:
    BrotliEncoderDestroyInstance(z->br);
    break;
#endif
#ifdef HR_HAVE_ZSTD
  case HR_CODING_ZSTD:
    ZSTD_freeCCtx(z->zstd);
    break;
#endif
  default:
    break;
  }
  hr__mem_free(z->m, z);
}

/* Makes room for at least `more` bytes after `used` in *out. */
static int room(hr__mem_t *m, char **out, size_t *cap, size_t used, size_t more) {
  size_t c;
  char *p;
  if (*cap - used >= more) return 0;
  c = *cap ? *cap : 1024;
  while (c - used < more) c *= 2;
  if ((p = hr__mem_realloc(m, *out, c)) == NULL) return -1;
  *out = p;
  *cap = c;
  return 0;
}

size_t hr__zstream_write(hr__zstream_t *z, const void *in, size_t len, int last, char **out,
                         size_t *cap) {
  size_t used = 0;
  switch (z->coding) {
#ifdef HR_HAVE_ZLIB
  case HR_CODING_GZIP: {
    const Bytef *p = in;
    size_t left = len;
    /* zlib counts in uInt: a write over 4 GiB goes in pieces, and the
     * output room offered at once is capped the same way. */
    for (;;) {
      uInt take = left > UINT_MAX ? UINT_MAX : (uInt)left;
      int flush = left > take ? Z_NO_FLUSH : last ? Z_FINISH : Z_SYNC_FLUSH, rc;
      z->z.next_in = (Bytef *)(uintptr_t)p;
      z->z.avail_in = take;
      do {
        size_t avail;
        if (room(z->m, out, cap, used, 65536) != 0) return (size_t)-1;
        avail = *cap - used > UINT_MAX ? UINT_MAX : *cap - used;
        z->z.next_out = (Bytef *)*out + used;
        z->z.avail_out = (uInt)avail;
        rc = deflate(&z->z, flush);
        if (rc == Z_STREAM_ERROR) return (size_t)-1;
        used += avail - z->z.avail_out;
      } while (z->z.avail_out == 0 || z->z.avail_in > 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
      p += take;
      left -= take;
      if (left == 0) return used;
    }
  }
#endif
#ifdef HR_HAVE_BROTLI
  case HR_CODING_BR: {
    const uint8_t *next_in = in;
    size_t avail_in = len;
    BrotliEncoderOperation op = last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_FLUSH;
    for (;;) {
      uint8_t *next_out;
      size_t avail_out;
      if (room(z->m, out, cap, used, 65536) != 0) return (size_t)-1;
      next_out = (uint8_t *)*out + used;
      avail_out = *cap - used;
      if (!BrotliEncoderCompressStream(z->br, op, &avail_in, &next_in, &avail_out, &next_out, NULL))
        return (size_t)-1;
      used = *cap - avail_out;
      if (avail_in == 0 && !BrotliEncoderHasMoreOutput(z->br) &&
          (!last || BrotliEncoderIsFinished(z->br)))
        return used;
    }
  }
#endif
#ifdef HR_HAVE_ZSTD
  case HR_CODING_ZSTD: {
    ZSTD_inBuffer ib = {in, len, 0};
    ZSTD_EndDirective op = last ? ZSTD_e_end : ZSTD_e_flush;
    for (;;) {
      ZSTD_outBuffer ob;
      size_t left;
      if (room(z->m, out, cap, used, ZSTD_CStreamOutSize()) != 0) return (size_t)-1;
      ob.dst = *out + used;
      ob.size = *cap - used;
      ob.pos = 0;
      left = ZSTD_compressStream2(z->zstd, &ob, &ib, op);
      if (ZSTD_isError(left)) return (size_t)-1;
      used += ob.pos;
      if (left == 0 && ib.pos == ib.size) return used;
    }
  }
#endif
  default:
    (void)in;
    (void)len;
    (void)last;
    (void)out;
    (void)cap;
    (void)used;
    return (size_t)-1;
  }
}
