/* SPDX-License-Identifier: MIT */
/*
 * Content codings for response compression (RFC 9110 §8.4.1): gzip
 * (libdeflate for whole bodies, zlib for streams), br (Brotli, RFC 7932)
 * and zstd (RFC 8878), each compiled in when its library was found
 * (HR_HAVE_LIBDEFLATE, HR_HAVE_ZLIB, HR_HAVE_BROTLI, HR_HAVE_ZSTD), and the
 * choice among them from an Accept-Encoding field (negotiate.c).
 *
 * Whole bodies go through a per-loop cache of encoders (hr__codecs_t: a
 * libdeflate compressor per level, one zstd context), so that a response
 * allocates nothing but its output; a stream has an encoder of its own,
 * flushed at every write so that what the handler wrote goes out now.
 * Memory comes from the server's allocator.  Single thread per object.
 */
#ifndef HR_CODEC_CODEC_H
#define HR_CODEC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "hroute/common.h"
#include "hroute/error.h"
#include "hroute/server.h"
#include "util/mem.h"

/* Codings, as hroute numbers them (HR_CODING_* in server.h): */
#define HR__CODINGS 4 /* identity, gzip, br, zstd */

/* Whether the library of coding `c` was compiled in. */
int hr__coding_available(int c);
/* The token of coding `c` ("gzip", "br", "zstd"; "identity"). */
hr_span_t hr__coding_name(int c);

/* Per-loop encoders for whole bodies (one thread). */
typedef struct hr__codecs_s hr__codecs_t;
hr__codecs_t *hr__codecs_new(hr__mem_t *m);
void hr__codecs_free(hr__codecs_t *c);

/* The most bytes compressing `len` bytes with coding `c` can give. */
size_t hr__compress_bound(int c, size_t len);

/* Compresses `in` whole with coding `c` at `level` into `out` (room `cap`,
 * at least hr__compress_bound).  Returns the length, or 0 when it failed
 * (out of memory, or an encoder's error). */
size_t hr__compress(hr__codecs_t *cs, int c, int level, const void *in, size_t len, void *out,
                    size_t cap);

/* A streaming encoder. */
typedef struct hr__zstream_s hr__zstream_t;
/* Makes one for coding `c` at `level`; NULL when out of memory. */
hr__zstream_t *hr__zstream_new(hr__mem_t *m, int c, int level);
void hr__zstream_free(hr__zstream_t *z);
/* Encodes `len` bytes and flushes (`last`: ends the coded stream) into
 * `out`, growing it through `m` as needed: *out and *cap are the caller's
 * buffer (NULL, 0 at first; kept across calls, freed by the caller with
 * hr__mem_free).  Returns the bytes written at *out, or (size_t)-1 when
 * out of memory or on an encoder's error. */
size_t hr__zstream_write(hr__zstream_t *z, const void *in, size_t len, int last, char **out,
                         size_t *cap);

/* The coding to answer with, from an Accept-Encoding value (RFC 9110
 * §12.5.3): among `order` (codings, the server's preference first, n of
 * them, each available), the one with the highest q-value, ties to the
 * server's order; "*" stands for those not named; q=0 refuses.  Returns
 * the coding, or 0 (identity) when none is acceptable or the field is
 * absent (`present` 0). */
int hr__coding_choose(hr_span_t accept, int present, const uint8_t *order, size_t n);

/* The same over several Accept-Encoding lines (a list field split over
 * lines, RFC 9110 §5.3): init, add each line's value, pick.  An element's
 * parameters other than q are ignored; identity, named (or by "*") with a
 * higher weight than the best coding, wins. */
typedef struct hr__accept_s {
  int q[HR__CODINGS]; /* thousandths; -1: not named (q[0]: identity) */
  int star;
} hr__accept_t;
void hr__accept_init(hr__accept_t *a);
void hr__accept_add(hr__accept_t *a, hr_span_t line);
int hr__accept_pick(const hr__accept_t *a, const uint8_t *order, size_t n);

#endif /* HR_CODEC_CODEC_H */
