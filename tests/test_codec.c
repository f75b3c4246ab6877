/* SPDX-License-Identifier: MIT */
/*
 * The codings of response compression (src/codec/), as a property over
 * bodies and splits chosen by a fixed pseudo-random sequence (the fuzz
 * target tests/fuzz/compress.c explores the same property further): each
 * coding at several levels, bodies from empty to 200 KiB (text that
 * compresses, bytes that do not), compressed whole must decode to
 * themselves; compressed as a stream in writes of every size from 1 byte,
 * what the stream put out after each write must decode to exactly what
 * was written so far (a stream flushes at every write: server-sent events
 * stay live), and after the end to everything, the coded stream ended.
 * And Accept-Encoding negotiation's corner cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec/codec.h"
#include "countalloc.h"
#include "decode.h"

static uint32_t seed = 12345;
static uint32_t rnd(void) {
  seed = seed * 1103515245u + 12345u;
  return seed >> 8;
}

static void body(unsigned char *b, size_t n, int text) {
  static const char words[] = "the quick brown fox jumps over the lazy dog, {\"a\": [1, 2]} ";
  size_t i;
  for (i = 0; i < n; i++) b[i] = text ? (unsigned char)words[(i + rnd() % 3) % (sizeof words - 1)]
                                      : (unsigned char)rnd();
}

static void whole(hr__codecs_t *cs, int c, int level, const unsigned char *b, size_t n) {
  size_t bound = hr__compress_bound(c, n), got, plain_len;
  char *out = malloc(bound ? bound : 1), *plain;
  got = hr__compress(cs, c, level, b, n, out, bound);
  assert_true(got > 0);
  plain = dec_whole(hr__coding_name(c).ptr, out, got, &plain_len);
  assert_non_null(plain);
  assert_int_equal(plain_len, n);
  if (n) assert_memory_equal(plain, b, n);
  free(plain);
  free(out);
}

static void stream(hr__mem_t *m, int c, int level, const unsigned char *b, size_t n, size_t step) {
  hr__zstream_t *z = hr__zstream_new(m, c, level);
  dec_t *d = dec_new(hr__coding_name(c).ptr);
  char *buf = NULL;
  size_t cap = 0, at = 0, got, w;
  assert_non_null(z);
  assert_non_null(d);
  for (;;) {
    size_t take = n - at < step ? n - at : step;
    int last = at + take == n;
    w = hr__zstream_write(z, b + at, take, last, &buf, &cap);
    assert_true(w != (size_t)-1);
    assert_int_equal(dec_feed(d, buf, w), 0);
    at += take;
    (void)dec_out(d, &got);
    assert_int_equal(got, at); /* flushed: all of it so far */
    if (last) break;
  }
  if (n) assert_memory_equal(dec_out(d, &got), b, n);
  assert_true(dec_ended(d));
  hr__mem_free(m, buf);
  hr__zstream_free(z);
  dec_free(d);
}

static void test_codings(void **state) {
  static const size_t sizes[] = {0, 1, 255, 4096, 70001, 200000};
  static const size_t steps[] = {1, 7, 1000, 65536};
  hr__mem_t m;
  hr__codecs_t *cs;
  unsigned char *b = malloc(200000);
  int c, checked = 0;
  size_t i, k;
  (void)state;
  hr__mem_init(&m, NULL);
  cs = hr__codecs_new(&m);
  assert_non_null(cs);
  for (c = HR_CODING_GZIP; c <= HR_CODING_ZSTD; c++) {
    const int levels[3] = {c == HR_CODING_BR ? 0 : 1, c == HR_CODING_BR ? 4 : 6,
                           c == HR_CODING_GZIP ? 12 : c == HR_CODING_BR ? 9 : 19};
    if (!hr__coding_available(c) || !dec_available(hr__coding_name(c).ptr)) continue;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      int text = (int)(i % 2 == 0);
      body(b, sizes[i], text);
      whole(cs, c, levels[i % 3], b, sizes[i]);
      for (k = 0; k < sizeof steps / sizeof steps[0]; k++)
        /* 1-byte writes of 200 KiB take long: up to 4 KiB for them. */
        if (steps[k] > 1 || sizes[i] <= 4096)
          /* A stream's gzip level is zlib's, at most 9. */
          stream(&m, c, c == HR_CODING_GZIP && levels[k % 3] > 9 ? 9 : levels[k % 3], b, sizes[i],
                 steps[k]);
      checked++;
    }
  }
  assert_true(checked >= 6); /* gzip and zstd at least: CI installs all three */
  hr__codecs_free(cs);
  free(b);
}

/* A stream's state, every coding's, comes from the server's allocator: a
 * stream holds at least `least` bytes of it while it lives (the figures
 * of docs/serving.md are measured so), none once freed; a whole body's
 * zstd context too, kept by the loop's encoders until they are freed. */
static void test_streams_use_the_allocator(void **state) {
  static const size_t least[HR__CODINGS] = {0, 32768, 65536, 65536};
  unsigned char b[4096];
  char *buf = NULL, out[8192];
  size_t cap = 0;
  hr__mem_t m;
  ca_t ca;
  int c;
  (void)state;
  ca_init(&ca);
  hr__mem_init(&m, &ca.hook);
  body(b, sizeof b, 1);
  for (c = HR_CODING_GZIP; c <= HR_CODING_ZSTD; c++) {
    hr__zstream_t *z;
    if (!hr__coding_available(c)) continue;
    z = hr__zstream_new(&m, c, c == HR_CODING_BR ? 3 : 6);
    assert_non_null(z);
    assert_true(hr__zstream_write(z, b, sizeof b, 0, &buf, &cap) != (size_t)-1);
    if (ca_bytes(&ca) < least[c]) fail_msg("coding %d: %zu bytes through the allocator", c, ca_bytes(&ca));
    hr__zstream_free(z);
    hr__mem_free(&m, buf);
    buf = NULL;
    cap = 0;
    assert_int_equal(ca_live(&ca), 0);
  }
  if (hr__coding_available(HR_CODING_ZSTD)) {
    hr__codecs_t *cs = hr__codecs_new(&m);
    assert_non_null(cs);
    assert_true(hr__compress(cs, HR_CODING_ZSTD, 3, b, sizeof b, out, sizeof out) > 0);
    assert_true(ca_bytes(&ca) >= 65536);
    hr__codecs_free(cs);
    assert_int_equal(ca_live(&ca), 0);
  }
  ca_destroy(&ca);
}

static void test_negotiation(void **state) {
  static const uint8_t order[] = {HR_CODING_ZSTD, HR_CODING_BR, HR_CODING_GZIP};
  static const uint8_t gzip_first[] = {HR_CODING_GZIP, HR_CODING_BR};
  static const struct {
    const char *accept;
    int want;
  } cases[] = {
      {"gzip", HR_CODING_GZIP},       {"br;q=0.5, gzip;q=0.4", HR_CODING_BR},
      {"*", HR_CODING_ZSTD},          {"*;q=0", 0},
      {"zstd;q=0, *", HR_CODING_BR},  {"gzip;q=0.001", HR_CODING_GZIP},
      {"gzip;q=0.0001", 0},           {"gzip;q=", 0},
      {"gzip ; q=0.5", HR_CODING_GZIP}, {",,gzip,,", HR_CODING_GZIP},
      {"br;level=5", HR_CODING_BR},   {"identity;q=1, gzip;q=0.1", 0},
      {"identity, gzip;q=0.001", 0},  {"gzip, identity", HR_CODING_GZIP},
      {"gzip;q=0;x=1, *", HR_CODING_ZSTD}, {"gzip;x=1;q=0.5, br;q=0.4", HR_CODING_GZIP},
      {"*;q=0.5, identity;q=0.4", HR_CODING_ZSTD}, {"gzip;q=1.0000", 0},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (hr__coding_choose(hr_span_cstr(cases[i].accept), 1, order, 3) != cases[i].want)
      fail_msg("%s", cases[i].accept);
  /* Lines combined (a list split over lines). */
  {
    hr__accept_t a;
    hr__accept_init(&a);
    hr__accept_add(&a, hr_span_cstr("identity;q=0.2"));
    hr__accept_add(&a, hr_span_cstr("gzip"));
    assert_int_equal(hr__accept_pick(&a, order, 3), HR_CODING_GZIP);
  }
  /* No field at all: identity.  Another server order breaks ties. */
  assert_int_equal(hr__coding_choose(hr_span_cstr("gzip"), 0, order, 3), 0);
  assert_int_equal(hr__coding_choose(hr_span_cstr("br, gzip"), 1, gzip_first, 2), HR_CODING_GZIP);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_codings),
      cmocka_unit_test(test_streams_use_the_allocator),
      cmocka_unit_test(test_negotiation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
