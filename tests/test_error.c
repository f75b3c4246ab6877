/* SPDX-License-Identifier: MIT */
/*
 * Error table: every code of HR_ERRNO_MAP has its documented value, name and
 * message; libuv codes pass through hr_strerror()/hr_err_name() unchanged;
 * 0 is "OK" / "success"; anything else is "UNKNOWN" / "unknown error".
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <hroute.h>
#include <uv.h>

typedef struct err_case_s {
  int code;
  const char *name;
  const char *msg;
} err_case_t;

static const err_case_t hr_cases[] = {
#define XX(name, val, msg) {val, "HR_" #name, msg},
    HR_ERRNO_MAP(XX)
#undef XX
};
#define N_HR_CASES (sizeof hr_cases / sizeof hr_cases[0])

static void test_every_hroute_code(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < N_HR_CASES; i++) {
    const err_case_t *c = &hr_cases[i];
    assert_string_equal(hr_err_name(c->code), c->name);
    assert_string_equal(hr_strerror(c->code), c->msg);
  }
}

/* Codes are appended, never renumbered: -20001, -20002, ... in table order,
 * inside the documented range. */
static void test_codes_dense_and_in_range(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < N_HR_CASES; i++) {
    assert_int_equal(hr_cases[i].code, -20001 - (int)i);
    assert_true(hr_cases[i].code <= -20001 && hr_cases[i].code >= -20999);
  }
}

/* The enum carries the values (spot checks of the documented numbers). */
static void test_enum_values(void **state) {
  (void)state;
  assert_int_equal(HR_ENOMEM, -20001);
  assert_int_equal(HR_EINVAL, -20002);
  assert_int_equal(HR_EEXIST, -20003);
  assert_int_equal(HR_EPATTERN, -20004);
  assert_int_equal(HR_EAGAIN, -20009);
  assert_int_equal(HR_ECLOSED, -20010);
  assert_int_equal(HR_ETHREAD, -20015);
}

static void test_libuv_codes_pass_through(void **state) {
  static const struct {
    int code;
    const char *name;
  } uv_cases[] = {
#define XX(code, _) {UV_##code, #code},
      UV_ERRNO_MAP(XX)
#undef XX
  };
  size_t i;
  (void)state;
  assert_string_equal(hr_err_name(UV_EADDRINUSE), "EADDRINUSE");
  assert_string_equal(hr_strerror(UV_EADDRINUSE), uv_strerror(UV_EADDRINUSE));
  for (i = 0; i < sizeof uv_cases / sizeof uv_cases[0]; i++) {
    assert_string_equal(hr_err_name(uv_cases[i].code), uv_cases[i].name);
    assert_string_equal(hr_strerror(uv_cases[i].code),
                        uv_strerror(uv_cases[i].code));
  }
}

static void test_unknown_codes(void **state) {
  static const int unknown[] = {-20000, -20999, -999999, 12345};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    assert_string_equal(hr_err_name(unknown[i]), "UNKNOWN");
    assert_string_equal(hr_strerror(unknown[i]), "unknown error");
  }
  /* Success has a name too, for logging a result as it is. */
  assert_string_equal(hr_err_name(0), "OK");
  assert_string_equal(hr_strerror(0), "success");
}

/* Static storage: the same pointer twice, from any thread. */
static void test_static_storage(void **state) {
  (void)state;
  assert_ptr_equal(hr_strerror(HR_ENOMEM), hr_strerror(HR_ENOMEM));
  assert_ptr_equal(hr_err_name(HR_ENOMEM), hr_err_name(HR_ENOMEM));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_hroute_code),
      cmocka_unit_test(test_codes_dense_and_in_range),
      cmocka_unit_test(test_enum_values),
      cmocka_unit_test(test_libuv_codes_pass_through),
      cmocka_unit_test(test_unknown_codes),
      cmocka_unit_test(test_static_storage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
