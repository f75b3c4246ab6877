/* SPDX-License-Identifier: MIT */
/*
 * Small public value helpers: version string, spans, the default allocator,
 * reason phrases (RFC 9110 §15) and the documented option defaults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <hroute.h>

static void test_version(void **state) {
  char want[32];
  (void)state;
  snprintf(want, sizeof want, "%d.%d.%d", HR_VERSION_MAJOR, HR_VERSION_MINOR,
           HR_VERSION_PATCH);
  assert_string_equal(hr_version_string(), want);
  assert_string_equal(hr_version_string(), "0.1.0");
}

static void test_spans(void **state) {
  hr_span_t a = hr_span_cstr("Content-Type");
  hr_span_t e = hr_span_cstr(NULL);
  (void)state;
  assert_int_equal(a.len, 12);
  assert_int_equal(e.len, 0);
  assert_int_equal(HR_SPAN_LIT("abc").len, 3);
  assert_true(hr_span_eq(a, HR_SPAN_LIT("Content-Type")));
  assert_false(hr_span_eq(a, HR_SPAN_LIT("content-type")));
  assert_false(hr_span_eq(a, HR_SPAN_LIT("Content-Typ")));
  assert_true(hr_span_eq_nocase(a, HR_SPAN_LIT("content-TYPE")));
  assert_false(hr_span_eq_nocase(a, HR_SPAN_LIT("content-typf")));
  assert_false(hr_span_eq_nocase(a, HR_SPAN_LIT("content-type ")));
  assert_true(hr_span_eq(e, HR_SPAN_LIT("")));
  assert_true(hr_span_eq_nocase(e, hr_span_cstr("")));
  /* Only ASCII letters fold: '@' (0x40) and '`' (0x60) differ by 0x20 too. */
  assert_false(hr_span_eq_nocase(HR_SPAN_LIT("@"), HR_SPAN_LIT("`")));
  assert_false(hr_span_eq_nocase(HR_SPAN_LIT("["), HR_SPAN_LIT("{")));
}

static void test_default_allocator(void **state) {
  const hr_allocator_t *a = hr_allocator_default();
  void *p;
  (void)state;
  assert_non_null(a);
  assert_ptr_equal(a, hr_allocator_default());
  p = a->malloc(a->ctx, 100);
  assert_non_null(p);
  memset(p, 1, 100);
  p = a->realloc(a->ctx, p, 1000);
  assert_non_null(p);
  a->free(a->ctx, p);
  a->free(a->ctx, NULL);
}

static void test_status_reasons(void **state) {
  static const struct {
    int code;
    const char *reason;
  } t[] = {
      {100, "Continue"},
      {200, "OK"},
      {204, "No Content"},
      {304, "Not Modified"},
      {400, "Bad Request"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {413, "Content Too Large"},
      {414, "URI Too Long"},
      {417, "Expectation Failed"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {503, "Service Unavailable"},
      {505, "HTTP Version Not Supported"},
      {103, "Early Hints"},
      {425, "Too Early"},
      {451, "Unavailable For Legal Reasons"},
      {507, "Insufficient Storage"},
      {511, "Network Authentication Required"},
      {299, ""},
      {999, ""},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof t / sizeof t[0]; i++)
    assert_string_equal(hr_status_reason(t[i].code), t[i].reason);
}

static void test_option_defaults(void **state) {
  hr_server_options_t so;
  hr_route_options_t ro;
  hr_router_options_t rto;
  (void)state;
  memset(&so, 0xAB, sizeof so);
  hr_server_options_init(&so);
  assert_null(so.allocator);
  assert_int_equal(so.max_request_line_bytes, 8192);
  assert_int_equal(so.max_header_bytes, 16384);
  assert_int_equal(so.max_header_fields, 100);
  assert_int_equal(so.max_body_bytes, 1024 * 1024);
  assert_int_equal(so.max_connections, 10000);
  assert_int_equal(so.header_timeout_ms, 10000);
  assert_int_equal(so.keepalive_timeout_ms, 5000);
  assert_int_equal(so.body_timeout_ms, 10000);
  assert_int_equal(so.write_timeout_ms, 10000);
  assert_int_equal(so.write_high_water_bytes, 65536);
  assert_int_equal(so.backlog, 511);
  assert_null(so.log);
  assert_null(so.log_ctx);

  memset(&ro, 0xAB, sizeof ro);
  hr_route_options_init(&ro);
  assert_int_equal(ro.max_body_bytes, 0);
  assert_int_equal(ro.body_mode, HR_BODY_BUFFER);
  assert_null(ro.fields);
  assert_int_equal(ro.nfields, 0);

  memset(&rto, 0xAB, sizeof rto);
  hr_router_options_init(&rto);
  assert_null(rto.allocator);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_spans),
      cmocka_unit_test(test_default_allocator),
      cmocka_unit_test(test_status_reasons),
      cmocka_unit_test(test_option_defaults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
