/* SPDX-License-Identifier: MIT */
/*
 * The byte classes of src/util/text.h (the two alphabets are bitmaps there),
 * checked for every byte against the alphabets as the RFCs list them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "util/text.h"

/* Whether c is in the NUL-terminated list (the NUL itself is not). */
static int listed(const char *list, unsigned c) {
  return c != 0 && strchr(list, (int)c) != NULL;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/* RFC 9110 §5.6.2 tchar */
static void test_tchar(void **state) {
  unsigned c;
  (void)state;
  for (c = 0; c < 256; c++)
    if (hr__is_tchar((unsigned char)c) != listed(ALNUM "!#$%&'*+-.^_`|~", c))
      fail_msg("byte 0x%02x", c);
}

/* RFC 3986 §3.3 pchar (unreserved, sub-delims, ':' '@') plus '/' and '%' */
static void test_path_char(void **state) {
  unsigned c;
  (void)state;
  for (c = 0; c < 256; c++)
    if (hr__is_path_char((unsigned char)c) != listed(ALNUM "-._~" "!$&'()*+,;=" ":@" "/%", c))
      fail_msg("byte 0x%02x", c);
}

/* RFC 5234 HEXDIG, either case */
static void test_hex_value(void **state) {
  static const char digits[] = "0123456789abcdef";
  unsigned c;
  (void)state;
  for (c = 0; c < 256; c++) {
    const char *d = c != 0 ? strchr(digits, (int)(c >= 'A' && c <= 'F' ? c | 0x20 : c)) : NULL;
    int want = d != NULL ? (int)(d - digits) : -1;
    if (hr__hex_value((unsigned char)c) != want) fail_msg("byte 0x%02x", c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tchar),
      cmocka_unit_test(test_path_char),
      cmocka_unit_test(test_hex_value),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
