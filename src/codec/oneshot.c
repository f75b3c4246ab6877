/* SPDX-License-Identifier: MIT */
/*
 * hr_compress and hr_compress_bound (include/hroute/compress.h): one body
 * compressed whole on any thread, for a handler that compresses off the
 * loop (the static module on libuv's thread pool) and sends the result
 * with hr_response_send_coded.  Each call makes its own encoders (libc's
 * allocator) and frees them, so that nothing is shared between threads;
 * the loops' own encoders (codec.c) stay theirs.
 */
#include <stdint.h>

#include "codec/codec.h"

/* Room to spare for any coding's worst case (a few bytes per 16 KiB and
 * headers): lengths past this would wrap. */
#define BOUND_MAX (SIZE_MAX / 2)

size_t hr_compress_bound(hr_coding_t coding, size_t len) {
  if (coding == HR_CODING_IDENTITY || !hr__coding_available((int)coding) || len > BOUND_MAX)
    return 0;
  return hr__compress_bound((int)coding, len);
}

/* The levels hr_compress_options_t takes for each coding. */
static int level_ok(hr_coding_t coding, int level) {
  switch (coding) {
  case HR_CODING_GZIP:
#ifdef HR_HAVE_LIBDEFLATE
    return level >= 1 && level <= 12;
#else
    return level >= 1 && level <= 9;
#endif
  case HR_CODING_BR:
    return level >= 0 && level <= 11;
  case HR_CODING_ZSTD:
    return level >= 1 && level <= 19;
  default:
    return 0;
  }
}

size_t hr_compress(hr_coding_t coding, int level, const void *in, size_t len, void *out,
                   size_t cap) {
  hr__mem_t m;
  hr__codecs_t *cs;
  size_t n;
  if (!level_ok(coding, level) || hr_compress_bound(coding, len) == 0 || in == NULL ||
      out == NULL || cap < hr_compress_bound(coding, len))
    return 0;
  hr__mem_init(&m, NULL);
  if ((cs = hr__codecs_new(&m)) == NULL) return 0;
  n = hr__compress(cs, (int)coding, level, in, len, out, cap);
  hr__codecs_free(cs);
  return n;
}
