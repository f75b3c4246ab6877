/* SPDX-License-Identifier: MIT */
/*
 * multipart/form-data: the parts of a body, fed whole, in two pieces split
 * at every byte, and byte by byte, always give the same trace; malformed
 * bodies and limits give their error codes; the boundary is read from
 * Content-Type.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <hroute.h>
#include <hroute/multipart.h>

typedef struct trace_s {
  char text[4096];
  size_t len;
} trace_t;

static void put(trace_t *t, const char *s, size_t n) {
  if (t->len + n < sizeof t->text) {
    memcpy(t->text + t->len, s, n);
    t->len += n;
    t->text[t->len] = '\0';
  }
}

static int on_part(void *u, const hr_multipart_part_t *p) {
  char b[512];
  int n = snprintf(b, sizeof b, "[%zu %.*s|%.*s|%.*s]", p->index, (int)p->name.len, p->name.ptr,
                   (int)p->filename.len, p->filename.ptr, (int)p->content_type.len,
                   p->content_type.ptr);
  put(u, b, (size_t)n);
  return 0;
}

static int on_data(void *u, hr_span_t d) {
  put(u, d.ptr, d.len);
  return 0;
}

static int on_end(void *u) {
  put(u, "$", 1);
  return 0;
}

static const hr_multipart_cbs_t cbs = {on_part, on_data, on_end};

/* Parses body in pieces of `step` bytes (0: whole; else first `split`
 * bytes, then the rest); returns the feed/finish error, trace in t. */
static int parse(const char *body, size_t len, size_t split, size_t step,
                 const hr_multipart_limits_t *lim, trace_t *t) {
  hr_multipart_t mp;
  size_t at = 0;
  int rc;
  memset(t, 0, sizeof *t);
  rc = hr_multipart_init(&mp, HR_SPAN_LIT("XyZ"), &cbs, t, lim);
  if (rc != 0) return rc;
  if (step) {
    for (; at < len && rc == 0; at += step)
      rc = hr_multipart_feed(&mp, (hr_span_t){body + at, at + step <= len ? step : len - at});
  } else {
    rc = hr_multipart_feed(&mp, (hr_span_t){body, split});
    if (rc == 0) rc = hr_multipart_feed(&mp, (hr_span_t){body + split, len - split});
  }
  return rc != 0 ? rc : hr_multipart_finish(&mp);
}

static const char body[] =
    "preamble\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"title\"\r\n"
    "\r\n"
    "Caf\xc3\xa9 --XyZ not here\r\n--Xy nor \r\r\n-XyZ\r\n"
    "--XyZ  \r\n" /* padding after the boundary */
    "content-disposition: form-data; name=\"file\"; filename=\"a;b.txt\"\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "line 1\r\n\r\nline 3\r"
    "\r\n--XyZ--\r\n"
    "epilogue --XyZ junk";

static const char want[] =
    "[0 title||]Caf\xc3\xa9 --XyZ not here\r\n--Xy nor \r\r\n-XyZ$"
    "[1 file|a;b.txt|text/plain]line 1\r\n\r\nline 3\r$";

static void test_every_split(void **state) {
  trace_t t;
  size_t len = sizeof body - 1, i;
  (void)state;
  assert_int_equal(parse(body, len, len, 0, NULL, &t), 0);
  assert_string_equal(t.text, want);
  for (i = 0; i <= len; i++) {
    assert_int_equal(parse(body, len, i, 0, NULL, &t), 0);
    if (strcmp(t.text, want) != 0) fail_msg("split at %zu: %s", i, t.text);
  }
  assert_int_equal(parse(body, len, 0, 1, NULL, &t), 0);
  assert_string_equal(t.text, want);
  assert_int_equal(parse(body, len, 0, 7, NULL, &t), 0);
  assert_string_equal(t.text, want);
}

static void test_errors(void **state) {
  static const struct {
    const char *body;
    int rc;
  } cases[] = {
      {"--XyZ\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XyZ--", HR_EPARSE}, /* no name */
      {"--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--", HR_EPARSE},
      {"--XyZ\r\n\r\nx\r\n--XyZ--", HR_EPARSE},                                   /* no headers */
      {"--XyZ\r\nnot a header\r\n\r\nx\r\n--XyZ--", HR_EPARSE},
      {"--XyZx\r\nContent-Disposition: form-data; name=a\r\n\r\n", HR_EPARSE}, /* after boundary */
      /* the delimiter inside a part, not followed by "--" or CRLF */
      {"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--XyZa\r\n--XyZ--", HR_EPARSE},
      {"--XyZ-x", HR_EPARSE},
      {"--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--XyZ--", HR_EPARSE},
      {"--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XyZ--", HR_EPARSE},
      {"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nx", HR_EPARSE}, /* truncated */
      {"no boundary at all", HR_EPARSE},
      {"", HR_EPARSE},
      {"--XyZ--", 0}, /* no parts: an empty form */
  };
  trace_t t;
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = parse(cases[i].body, strlen(cases[i].body), strlen(cases[i].body), 0, NULL, &t);
    if (rc != cases[i].rc) fail_msg("case %zu: %s, want %s", i, hr_err_name(rc), hr_err_name(cases[i].rc));
  }
}

/* Quoted values: quoted-pairs undone, spaces before the quote skipped. */
static void test_quoted_names(void **state) {
  static const char b[] =
      "--XyZ\r\nContent-Disposition: form-data; name = \"a;b\\\"c\"; filename=\"x\\\\y\"\r\n\r\n"
      "v\r\n--XyZ--";
  trace_t t;
  (void)state;
  assert_int_equal(parse(b, sizeof b - 1, sizeof b - 1, 0, NULL, &t), 0);
  assert_string_equal(t.text, "[0 a;b\"c|x\\y|]v$");
}

static void test_limits(void **state) {
  hr_multipart_limits_t lim;
  trace_t t;
  size_t len = sizeof body - 1;
  (void)state;
  memset(&lim, 0, sizeof lim);
  lim.max_parts = 1;
  assert_int_equal(parse(body, len, len, 0, &lim, &t), HR_ETOOLARGE);
  lim.max_parts = 0;
  lim.max_part_bytes = 10;
  assert_int_equal(parse(body, len, len, 0, &lim, &t), HR_ETOOLARGE);
  lim.max_part_bytes = 0;
  lim.max_header_bytes = 40;
  assert_int_equal(parse(body, len, len, 0, &lim, &t), HR_ETOOLARGE);
  lim.max_header_bytes = 100000;
  assert_int_equal(parse(body, len, len, 0, &lim, &t), HR_EINVAL);
}

static void test_boundary_param(void **state) {
  hr_span_t b;
  (void)state;
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("multipart/form-data; boundary=abc"), &b), 0);
  assert_int_equal(b.len, 3);
  assert_memory_equal(b.ptr, "abc", 3);
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("Multipart/Form-Data;charset=x; BOUNDARY=\"a b\""), &b), 0);
  assert_int_equal(b.len, 3);
  assert_memory_equal(b.ptr, "a b", 3);
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("text/plain; boundary=a"), &b), HR_EINVAL);
  /* RFC 2046 bchars only, no trailing space */
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("multipart/form-data; boundary=\"ab \""), &b),
                   HR_EPARSE);
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("multipart/form-data; boundary=a{b"), &b),
                   HR_EPARSE);
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW"), &b),
                   0);
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("multipart/form-data"), &b), HR_EPARSE);
  assert_int_equal(hr_multipart_boundary(HR_SPAN_LIT("multipart/form-data; boundary="), &b), HR_EPARSE);
  assert_int_equal(hr_multipart_boundary(
                       HR_SPAN_LIT("multipart/form-data; boundary="
                                   "12345678901234567890123456789012345678901234567890123456789012345678901"),
                       &b),
                   HR_EPARSE); /* 71 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_split),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_quoted_names),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_boundary_param),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
