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
#include "util/utf8.h"

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

/* RFC 3986 §3.2.2 reg-name (unreserved, sub-delims but '*', '%' of an
 * escape) as hr__authority_ok takes it: every byte alone as a host, with a
 * port after it, and in the middle of a name; then the port and literal
 * forms. */
static void test_authority(void **state) {
  char b[16];
  unsigned c;
  (void)state;
  for (c = 0; c < 256; c++) {
    int want = listed(ALNUM "-._~" "!$&'()+,;=" "%", c);
    b[0] = 'a';
    b[1] = (char)c;
    b[2] = 'b';
    if (hr__authority_ok((hr_span_t){b + 1, 1}) != want) fail_msg("byte 0x%02x alone", c);
    if (c != ':' && hr__authority_ok((hr_span_t){b, 3}) != want) fail_msg("byte 0x%02x inside", c);
    memcpy(b + 2, ":80", 3);
    if (c != ':' && hr__authority_ok((hr_span_t){b + 1, 4}) != want)
      fail_msg("byte 0x%02x before a port", c);
  }
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("example.com:8080")), 1);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("example.com:")), 1);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("example.com:8x")), 0);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT(":80")), 0);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("")), 0);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("[::1]:443")), 1);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("[]")), 0);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("[::1")), 0);
  assert_int_equal(hr__authority_ok(HR_SPAN_LIT("user@host")), 0);
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

/* RFC 3629 §4's well-formed sequences, and what falls just outside
 * them; long ASCII runs around a bad byte for the 8-byte skip. */
static void test_utf8(void **state) {
  static const struct {
    const char *s;
    int ok;
  } cases[] = {
      {"", 1},
      {"plain ascii", 1},
      {"\xc2\x80 \xdf\xbf", 1},             /* U+0080, U+07FF */
      {"\xe0\xa0\x80 \xef\xbf\xbf", 1},     /* U+0800, U+FFFF */
      {"\xed\x9f\xbf \xee\x80\x80", 1},     /* around the surrogates */
      {"\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf", 1}, /* U+10000, U+10FFFF */
      {"\x80", 0},                         /* a lone continuation */
      {"\xc0\xaf", 0},                     /* overlong '/' */
      {"\xc1\xbf", 0},
      {"\xe0\x9f\xbf", 0},                 /* overlong 3-byte */
      {"\xed\xa0\x80", 0},                 /* U+D800 */
      {"\xf0\x8f\xbf\xbf", 0},             /* overlong 4-byte */
      {"\xf4\x90\x80\x80", 0},             /* past U+10FFFF */
      {"\xf5\x80\x80\x80", 0},
      {"\xff", 0},
      {"\xe2\x82", 0},                     /* cut short */
      {"\xe2\x28\xa1", 0},                 /* a bad continuation */
      {"abcdefghijklmnop\xc3\xa9" "abcdefghijklmnop", 1},
      {"abcdefghijklmnop\xc3" "abcdefghijklmnop", 0},
      {"abcdefghijklmno\x80", 0},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (hr__utf8_valid(cases[i].s, strlen(cases[i].s)) != cases[i].ok)
      fail_msg("case %zu: want %d", i, cases[i].ok);
  assert_int_equal(hr__utf8_valid(NULL, 0), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tchar),
      cmocka_unit_test(test_path_char),
      cmocka_unit_test(test_authority),
      cmocka_unit_test(test_hex_value),
      cmocka_unit_test(test_utf8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
