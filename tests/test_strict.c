/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the strictness scanners (src/http/strict.c): the header
 * section rules and limits, and the chunked framing rules, table-driven, fed
 * whole and one byte at a time (the answer must not depend on the split).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "http/strict.h"

typedef struct head_case_s {
  const char *name;
  const char *bytes;
  size_t len;
  long want; /* section length, 0 (need more) or -status */
} head_case_t;

#define L(s) s, sizeof(s) - 1

static const hr__head_limits_t lim = {64, 256, 4};

static const head_case_t head_cases[] = {
    {"simple", L("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 27},
    {"stops at the empty line", L("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET"), 27},
    {"no fields", L("GET / HTTP/1.0\r\n\r\n"), 18},
    {"leading empty line ignored", L("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), 29},
    {"incomplete", L("GET / HTTP/1.1\r\nHost: a\r\n"), 0},
    {"incomplete after CR", L("GET / HTTP/1.1\r\nHost: a\r\n\r"), 0},
    {"bare CR ends the section", L("GET / HTTP/1.1\r\nHost: a\r\n\rZ"), -400},
    {"bare CR in a field", L("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n"), -400},
    {"bare CR in the request line", L("GET /\r HTTP/1.1\r\n\r\n"), -400},
    {"bare LF", L("GET / HTTP/1.1\nHost: a\r\n\r\n"), -400},
    {"bare LF at the end", L("GET / HTTP/1.1\r\nHost: a\r\n\n"), -400},
    {"obs-fold SP", L("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), -400},
    {"obs-fold HTAB", L("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n"), -400},
    {"empty field name", L("GET / HTTP/1.1\r\n: x\r\n\r\n"), -400},
    {"space before colon", L("GET / HTTP/1.1\r\nX : b\r\n\r\n"), -400},
    {"tab before colon", L("GET / HTTP/1.1\r\nX\t: b\r\n\r\n"), -400},
    {"spaces in values are fine", L("GET / HTTP/1.1\r\nX:  a b \r\n\r\n"), 28},
    /* 64 bytes of request line (5 + 50 + 9), then 65 */
    {"request line at the limit",
     L("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n"), 68},
    {"request line over the limit",
     L("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n"), -414},
    {"four fields", L("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"), 42},
    {"five fields", L("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n"),
     -431},
};

static long scan_whole(const char *p, size_t n) {
  hr__head_scan_t s;
  hr__head_scan_init(&s);
  return hr__head_scan(&s, p, n, &lim);
}

static long scan_bytewise(const char *p, size_t n) {
  hr__head_scan_t s;
  size_t i;
  long r = 0;
  hr__head_scan_init(&s);
  for (i = 1; i <= n; i++) {
    r = hr__head_scan(&s, p, i, &lim);
    if (r != 0) return r;
  }
  return r;
}

static void test_head_table(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(head_cases) / sizeof(head_cases[0]); i++) {
    const head_case_t *c = &head_cases[i];
    long whole = scan_whole(c->bytes, c->len);
    long bytewise = scan_bytewise(c->bytes, c->len);
    if (whole != c->want || bytewise != c->want)
      fail_msg("%s: want %ld, whole %ld, bytewise %ld", c->name, c->want, whole,
               bytewise);
  }
}

static void test_head_section_limit(void **state) {
  /* 256 bytes allowed: a section of exactly 256 passes, 257 does not, and
   * an endless field line fails once it passes the limit. */
  char buf[600];
  size_t fill;
  (void)state;
  memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
  fill = 256 - 19 - 4;
  memset(buf + 19, 'v', fill);
  memcpy(buf + 19 + fill, "\r\n\r\n", 4);
  assert_int_equal(scan_whole(buf, 256), 256);
  memset(buf + 19, 'v', fill + 1);
  memcpy(buf + 19 + fill + 1, "\r\n\r\n", 4);
  assert_int_equal(scan_whole(buf, 257), -431);
  memset(buf + 19, 'v', sizeof(buf) - 19);
  assert_int_equal(scan_whole(buf, sizeof(buf)), -431);
  assert_int_equal(scan_bytewise(buf, sizeof(buf)), -431);
}

typedef struct frame_case_s {
  const char *name;
  const char *bytes;
  size_t len;
  int line_start;
  int want;
} frame_case_t;

static const frame_case_t frame_cases[] = {
    {"size line", L("5\r\n"), 1, 0},
    {"size line with extension", L("5;a=b\r\n"), 1, 0},
    {"after data", L("\r\n5\r\n"), 0, 0},
    {"last chunk and trailer", L("\r\n0\r\nX: y\r\n\r\n"), 0, 0},
    {"bare CR in size line", L("5\rX"), 1, -400},
    {"bare LF in size line", L("5\n"), 1, -400},
    {"bare CR after data", L("\rX5\r\n"), 0, -400},
    {"obs-fold in trailer", L("\r\n0\r\nX: y\r\n z\r\n\r\n"), 0, -400},
    {"empty trailer name", L("\r\n0\r\n: y\r\n\r\n"), 0, -400},
};

static void test_frame_table(void **state) {
  size_t i, k;
  (void)state;
  for (i = 0; i < sizeof(frame_cases) / sizeof(frame_cases[0]); i++) {
    const frame_case_t *c = &frame_cases[i];
    hr__frame_scan_t s;
    int whole, split = 0;
    hr__frame_scan_init(&s);
    if (!c->line_start) hr__frame_scan_after_data(&s);
    whole = hr__frame_scan(&s, c->bytes, c->len);
    hr__frame_scan_init(&s);
    if (!c->line_start) hr__frame_scan_after_data(&s);
    for (k = 0; k < c->len && split == 0; k++)
      split = hr__frame_scan(&s, c->bytes + k, 1);
    if (whole != c->want || split != c->want)
      fail_msg("%s: want %d, whole %d, bytewise %d", c->name, c->want, whole,
               split);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_head_table),
      cmocka_unit_test(test_head_section_limit),
      cmocka_unit_test(test_frame_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
