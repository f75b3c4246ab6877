/* SPDX-License-Identifier: MIT */
/** @file
 * Response compression settings (RFC 9110 §8.4.1, §12.5.3): the codings,
 * their levels, the smallest body and the media types.  The server's
 * (hr_server_options_t.compress) apply unless the router's for the
 * request's host table (hr_router_set_compress) or the route's own
 * (hr_route_options_t.compress) do; hr_route_options_t.no_compress turns
 * it off for a route whatever the others say.
 */
#ifndef HROUTE_COMPRESS_H
#define HROUTE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Content codings a response may be compressed with (RFC 9110 §8.4.1). */
typedef enum hr_coding_e {
  HR_CODING_IDENTITY = 0, /**< none */
  HR_CODING_GZIP = 1,     /**< gzip (RFC 1952): libdeflate, zlib for streams */
  HR_CODING_BR = 2,       /**< br, Brotli (RFC 7932) */
  HR_CODING_ZSTD = 3      /**< zstd, Zstandard (RFC 8878) */
} hr_coding_t;

/**
 * Response compression (hr_server_options_t.compress).  A response is
 * compressed when the request's Accept-Encoding accepts one of `order`
 * (RFC 9110 §12.5.3: q-values, "*", q=0 refusing), its Content-Type is
 * one of `media_types`, its body has at least `min_length` bytes, and
 * nothing rules it out: a status without content (1xx, 204, 304), 206 or
 * a request with Range, a Content-Encoding already there, Cache-Control:
 * no-transform, a route with hr_route_options_t.no_compress.  Then the
 * body is compressed whole (hr_response_send and its variants) or as it
 * goes, flushed at every write (hr_response_start/write/end, chunked),
 * Content-Encoding names the coding, a strong ETag is made weak (W/,
 * RFC 9110 §8.8.1: the compressed bytes differ; If-None-Match's weak
 * comparison still matches either), and "Vary: Accept-Encoding" goes on
 * every response that could have been compressed, compressed or not.  A
 * body that does not get smaller goes as it is.  Files sent with
 * hr_response_send_file are not compressed (the static module compresses
 * its files itself, hr_static_options_t.compress; a handler can too, with
 * hr_response_coding, hr_compress and hr_response_send_coded).  Set with
 * hr_compress_options_init(), then change what is needed.
 */
typedef struct hr_compress_options_s {
  /** Codings offered, the server's preference first (it breaks ties
   * between equal q-values), HR_CODING_IDENTITY ending the list early.
   * Default zstd, br, gzip; a coding whose library was not built in is
   * left out, one named twice counts where it is first named. */
  uint8_t order[3];
  int gzip_level; /**< 1..12 (libdeflate; streams: zlib's 1..9); default 6 */
  int br_level;   /**< 0..11; default 4 (streams: at most 3, for their memory) */
  int zstd_level; /**< 1..19; default 3 */
  /** Smallest body compressed, in bytes (default 256); a streamed
   * response is compressed whatever its length. */
  size_t min_length;
  /** Media types compressed, each "type/subtype", or "type/" and an
   * asterisk for every subtype of a type, or two asterisks around the slash
   * for every type (no parameters; case-insensitive),
   * `nmedia_types` of them, copied.  NULL: every text type but
   * text/event-stream (each open event stream would hold an encoder:
   * docs/serving.md), application/json, application/javascript,
   * application/xml, image/svg+xml, and any "+json" or "+xml" type. */
  const char *const *media_types;
  size_t nmedia_types; /**< entries in media_types */
} hr_compress_options_t;

/** Fills `o` with the defaults above.  Any thread. */
HR_EXTERN void hr_compress_options_init(hr_compress_options_t *o);

/** The most bytes hr_compress() can make of `len` bytes with `coding`; 0
 * for HR_CODING_IDENTITY or a coding whose library was not built in.  Any
 * thread. */
HR_EXTERN size_t hr_compress_bound(hr_coding_t coding, size_t len);

/**
 * Compresses `len` bytes whole with `coding` at `level` (the ranges of
 * hr_compress_options_t: gzip 1..12 with libdeflate, 1..9 with zlib alone;
 * br 0..11; zstd 1..19) into `out`, which has room for `cap` bytes, at
 * least hr_compress_bound(coding, len).  For a handler that compresses a
 * body itself, off the loop thread or once for many responses, and sends
 * it with hr_response_send_coded().  Returns the bytes written, or 0 when
 * it failed (out of memory, a coding not built in, a bad level, `cap` too
 * small, `in` or `out` NULL).  Any thread: each call makes (through libc's
 * allocator) and frees its own encoder, so it costs that allocation too
 * (libdeflate's compressor is about 1 MB at the higher levels).
 */
HR_EXTERN size_t hr_compress(hr_coding_t coding, int level, const void *in, size_t len,
                             void *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_COMPRESS_H */
