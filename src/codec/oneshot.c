/* SPDX-License-Identifier: MIT */
/*
 * hr_compress and hr_compress_bound (include/hroute/compress.h): one body
 * compressed whole on any thread, for a handler that compresses off the
 * loop (the static module on libuv's thread pool) and sends the result
 * with hr_response_send_coded.  Each call makes its own encoders (libc's
 * allocator) and frees them, so that nothing is shared between threads;
 * the loops' own encoders (codec.c) stay theirs.
 */
#include "codec/codec.h"

size_t hr_compress_bound(hr_coding_t coding, size_t len) {
  if (coding == HR_CODING_IDENTITY || !hr__coding_available((int)coding)) return 0;
  return hr__compress_bound((int)coding, len);
}

size_t hr_compress(hr_coding_t coding, int level, const void *in, size_t len, void *out,
                   size_t cap) {
  hr__mem_t m;
  hr__codecs_t *cs;
  size_t n;
  if (coding == HR_CODING_IDENTITY || !hr__coding_available((int)coding) || in == NULL ||
      out == NULL || cap < hr__compress_bound((int)coding, len))
    return 0;
  hr__mem_init(&m, NULL);
  if ((cs = hr__codecs_new(&m)) == NULL) return 0;
  n = hr__compress(cs, (int)coding, level, in, len, out, cap);
  hr__codecs_free(cs);
  return n;
}
