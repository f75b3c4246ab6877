/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for response compression (src/codec/): a property
 * test.  Input: byte 0 picks the coding (gzip, br, zstd), byte 1 the
 * level, byte 2 how the body is split into writes; the rest is the body.
 * The whole body, compressed at once, must decode to itself; compressed
 * as a stream in those writes, what the stream has put out after each
 * write (it flushes at every one) must decode to exactly the body so far,
 * and after the end to the whole body, the coded stream ended.  ASan
 * checks the encoders' buffers; LeakSanitizer the rest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hr__mem_t mem;
static hr__codecs_t *codecs;

static void check_whole(int coding, int level, const uint8_t *body, size_t len) {
  size_t bound = hr__compress_bound(coding, len), n, plain_len;
  char *out = malloc(bound ? bound : 1), *plain;
  if (out == NULL) abort();
  n = hr__compress(codecs, coding, level, body, len, out, bound);
  if (n == 0) abort(); /* within the bound it always fits */
  plain = dec_whole(hr__coding_name(coding).ptr, out, n, &plain_len);
  if (plain == NULL || plain_len != len || (len && memcmp(plain, body, len) != 0)) abort();
  free(plain);
  free(out);
}

static void check_stream(int coding, int level, size_t step, const uint8_t *body, size_t len) {
  hr__zstream_t *z = hr__zstream_new(&mem, coding, level);
  dec_t *d = dec_new(hr__coding_name(coding).ptr);
  char *buf = NULL;
  size_t cap = 0, at = 0, got;
  const char *plain;
  if (z == NULL || d == NULL) abort();
  for (;;) {
    size_t take = len - at < step ? len - at : step, n;
    int last = at + take == len;
    n = hr__zstream_write(z, body + at, take, last, &buf, &cap);
    if (n == (size_t)-1 || dec_feed(d, buf, n) != 0) abort();
    at += take;
    plain = dec_out(d, &got);
    /* Flushed: everything written so far, exactly. */
    if (got != at || (at && memcmp(plain, body, at) != 0)) abort();
    if (last) break;
  }
  if (!dec_ended(d)) abort();
  hr__mem_free(&mem, buf);
  hr__zstream_free(z);
  dec_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int coding, level;
  size_t step;
  if (size < 3) return 0;
  if (codecs == NULL) {
    hr__mem_init(&mem, NULL);
    codecs = hr__codecs_new(&mem);
  }
  coding = 1 + data[0] % 3;
  if (!hr__coding_available(coding) || !dec_available(hr__coding_name(coding).ptr)) return 0;
  /* Levels that keep a run quick: gzip 1..9, br 0..5, zstd 1..9. */
  level = coding == HR_CODING_BR ? data[1] % 6 : 1 + data[1] % 9;
  step = (size_t)data[2] * 7 + 1;
  check_whole(coding, level, data + 3, size - 3);
  check_stream(coding, level, step, data + 3, size - 3);
  return 0;
}
