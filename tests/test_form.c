/* SPDX-License-Identifier: MIT */
/*
 * application/x-www-form-urlencoded splitting and decoding (form.h),
 * table-driven: each input against its exact pairs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <hroute.h>

/* "k=v|k=v|..." of the decoded pairs, or "ERR" when one does not decode. */
static void decode_all(const char *in, char *out, size_t cap) {
  hr_span_t rest = hr_span_cstr(in);
  hr_form_pair_t p;
  size_t at = 0;
  out[0] = '\0';
  while (hr_form_next(&rest, &p)) {
    char k[256], v[256];
    size_t kn, vn;
    if (hr_form_decode(p.key, k, &kn) != 0 || hr_form_decode(p.value, v, &vn) != 0) {
      snprintf(out, cap, "ERR");
      return;
    }
    at += (size_t)snprintf(out + at, cap - at, "%s%.*s=%.*s", at ? "|" : "", (int)kn, k,
                           (int)vn, v);
  }
}

static void test_pairs(void **state) {
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"", ""},
      {"a=1", "a=1"},
      {"a=1&b=2", "a=1|b=2"},
      {"a=1&a=2&a=3", "a=1|a=2|a=3"},           /* repeated keys, in order */
      {"a", "a="},                               /* no '=': empty value */
      {"a=", "a="},
      {"=v", "=v"},                              /* empty key */
      {"a=1&&b=2&", "a=1|b=2"},                  /* empty pairs skipped */
      {"&&&", ""},
      {"q=caf%C3%A9+au+lait", "q=café au lait"}, /* '+' is a space */
      {"a%2Bb=c%26d", "a+b=c&d"},                /* escaped '+' and '&' */
      {"x=a=b=c", "x=a=b=c"},                    /* the first '=' splits */
      {"k=%7e%7E", "k=~~"},                      /* hex in either case */
      {"bad=%", "ERR"},
      {"bad=%2", "ERR"},
      {"bad=%zz", "ERR"},
      {"ok=1&bad=%g0", "ERR"},
      {"sp%20ace=1", "sp ace=1"},
  };
  char got[1024];
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    decode_all(cases[i].in, got, sizeof got);
    if (strcmp(got, cases[i].want) != 0)
      fail_msg("\"%s\": got \"%s\", want \"%s\"", cases[i].in, got, cases[i].want);
  }
}

/* The raw spans point into the input, and a span that needs no decoding
 * decodes to itself. */
static void test_raw_spans(void **state) {
  static const char in[] = "key=val&x";
  hr_span_t rest = {in, sizeof in - 1};
  hr_form_pair_t p;
  (void)state;
  assert_int_equal(hr_form_next(&rest, &p), 1);
  assert_ptr_equal(p.key.ptr, in);
  assert_int_equal(p.key.len, 3);
  assert_ptr_equal(p.value.ptr, in + 4);
  assert_int_equal(p.value.len, 3);
  assert_int_equal(hr_form_next(&rest, &p), 1);
  assert_ptr_equal(p.key.ptr, in + 8);
  assert_int_equal(p.value.len, 0);
  assert_int_equal(hr_form_next(&rest, &p), 0);
  assert_int_equal(rest.len, 0);
  rest.ptr = NULL; /* an empty query: {NULL, 0} */
  rest.len = 0;
  assert_int_equal(hr_form_next(&rest, &p), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pairs),
      cmocka_unit_test(test_raw_spans),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
