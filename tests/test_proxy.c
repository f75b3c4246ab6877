/* SPDX-License-Identifier: MIT */
/*
 * The PROXY protocol header parser (src/server/net/proxy.c) against HAProxy's
 * doc/proxy-protocol.txt: version 1 lines (TCP4, TCP6, UNKNOWN, the
 * 107-byte limit, single spaces, ports), version 2 headers (PROXY and
 * LOCAL, the families, TLVs: ALPN, AUTHORITY, UNIQUE_ID, SSL with its
 * sub-TLVs, a CRC32C that matches and one that does not), every prefix of
 * a valid header answered "more", and network matching.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hroute/error.h"
#include "server/net/proxy.h"

static hr__proxy_t px;

static int parse_str(const char *s) { return hr__proxy_parse((const uint8_t *)s, strlen(s), &px); }

static void expect_in4(const struct sockaddr_storage *ss, const char *addr, unsigned port) {
  const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
  char b[INET_ADDRSTRLEN];
  assert_int_equal(in->sin_family, AF_INET);
  assert_non_null(inet_ntop(AF_INET, &in->sin_addr, b, sizeof b));
  assert_string_equal(b, addr);
  assert_int_equal(ntohs(in->sin_port), port);
}

static void expect_in6(const struct sockaddr_storage *ss, const char *addr, unsigned port) {
  const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
  char b[INET6_ADDRSTRLEN];
  assert_int_equal(in6->sin6_family, AF_INET6);
  assert_non_null(inet_ntop(AF_INET6, &in6->sin6_addr, b, sizeof b));
  assert_string_equal(b, addr);
  assert_int_equal(ntohs(in6->sin6_port), port);
}

/* Every proper prefix of a valid header asks for more. */
static void expect_prefixes_want_more(const uint8_t *h, size_t n) {
  size_t k;
  for (k = 0; k < n; k++)
    if (hr__proxy_parse(h, k, &px) != 0) fail_msg("prefix of %zu of %zu bytes", k, n);
}

static void test_v1(void **state) {
  static const char tcp4[] = "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nGET /";
  static const char tcp6[] = "PROXY TCP6 2001:db8::1 2001:db8::2 1 65535\r\n";
  (void)state;
  assert_int_equal(parse_str(tcp4), 45);
  assert_int_equal(px.version, 1);
  assert_int_equal(px.proxied, 1);
  expect_in4(&px.src, "192.0.2.1", 56324);
  expect_in4(&px.dst, "198.51.100.2", 443);
  expect_prefixes_want_more((const uint8_t *)tcp4, 45);
  assert_int_equal(parse_str(tcp6), (int)strlen(tcp6));
  expect_in6(&px.src, "2001:db8::1", 1);
  expect_in6(&px.dst, "2001:db8::2", 65535);
  /* UNKNOWN: the rest of the line is ignored, the connection's own
   * addresses stand. */
  assert_int_equal(parse_str("PROXY UNKNOWN\r\n"), 15);
  assert_int_equal(px.proxied, 0);
  assert_int_equal(parse_str("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"), 35);
  assert_int_equal(px.proxied, 0);
  /* The longest form, 107 bytes, and one byte more. */
  {
    char l[128];
    const char *max = "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_int_equal(strlen(max), 104);
    assert_int_equal(parse_str(max), 104);
    memset(l, 'x', sizeof l);
    memcpy(l, "PROXY UNKNOWN ", 14);
    memcpy(l + 105, "\r\n", 2);
    assert_int_equal(hr__proxy_parse((const uint8_t *)l, 107, &px), 107);
    memcpy(l + 105, "xx\r\n", 4);
    assert_int_equal(hr__proxy_parse((const uint8_t *)l, 109, &px), HR_EPARSE);
    assert_int_equal(hr__proxy_parse((const uint8_t *)l, 106, &px), HR_EPARSE);
  }
  /* Malformed. */
  {
    static const char *const bad[] = {
        "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\n",     /* no CR */
        "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\rX",    /* CR without LF */
        "PROXY TCP4  192.0.2.1 198.51.100.2 56324 443\r\n",  /* two spaces */
        "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443 \r\n",  /* a space at the end */
        "PROXY TCP4 192.0.2.1 198.51.100.2 056324 443\r\n",  /* a leading zero */
        "PROXY TCP4 192.0.2.1 198.51.100.2 65536 443\r\n",   /* port too big */
        "PROXY TCP4 192.0.2.1 198.51.100.2 -1 443\r\n",
        "PROXY TCP4 192.0.2.1 198.51.100.2 1\r\n",           /* a field missing */
        "PROXY TCP4 2001:db8::1 2001:db8::2 1 2\r\n",        /* the wrong family */
        "PROXY TCP6 192.0.2.1 198.51.100.2 1 2\r\n",
        "PROXY TCP4 192.0.2.256 198.51.100.2 1 2\r\n",
        "PROXY UDP4 192.0.2.1 198.51.100.2 1 2\r\n",
        "PROXY UNKNOWNX\r\n",
        "PROXY \r\n",
        "proxy TCP4 192.0.2.1 198.51.100.2 1 2\r\n",
        "GET / HTTP/1.1\r\n",
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
      if (parse_str(bad[i]) != HR_EPARSE) fail_msg("accepted: %s", bad[i]);
  }
}

/* A v2 header: signature, ver_cmd, fam, then `body`. */
static size_t v2(uint8_t *out, int ver_cmd, int fam, const uint8_t *body, size_t n) {
  static const uint8_t sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                  0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
  memcpy(out, sig, 12);
  out[12] = (uint8_t)ver_cmd;
  out[13] = (uint8_t)fam;
  out[14] = (uint8_t)(n >> 8);
  out[15] = (uint8_t)n;
  if (n > 0) memcpy(out + 16, body, n);
  return 16 + n;
}

static void test_v2(void **state) {
  uint8_t h[512], body[400];
  size_t n, b = 0;
  (void)state;
  /* PROXY over TCP/IPv4: 192.0.2.1:56324 -> 198.51.100.2:443, then TLVs. */
  memcpy(body, "\xc0\x00\x02\x01\xc6\x33\x64\x02\xdc\x04\x01\xbb", 12);
  b = 12;
  memcpy(body + b, "\x01\x00\x02h2", 5); /* ALPN */
  b += 5;
  memcpy(body + b, "\x02\x00\x0b" "example.com", 14); /* AUTHORITY */
  b += 14;
  memcpy(body + b, "\x05\x00\x03" "id1", 6); /* UNIQUE_ID */
  b += 6;
  /* SSL: client 0x07, verify 0, VERSION "TLSv1.3", CN "alice", CIPHER "X". */
  memcpy(body + b, "\x20\x00\x1b\x07\x00\x00\x00\x00"
                   "\x21\x00\x07TLSv1.3" "\x22\x00\x05" "alice" "\x23\x00\x01X", 30);
  b += 30;
  memcpy(body + b, "\x04\x00\x02zz", 5); /* NOOP */
  b += 5;
  n = v2(h, 0x21, 0x11, body, b);
  assert_int_equal(hr__proxy_parse(h, n + 3, &px), (int)n);
  assert_int_equal(px.version, 2);
  assert_int_equal(px.proxied, 1);
  expect_in4(&px.src, "192.0.2.1", 56324);
  expect_in4(&px.dst, "198.51.100.2", 443);
  assert_int_equal(px.alpn.len, 2);
  assert_memory_equal(px.alpn.ptr, "h2", 2);
  assert_int_equal(px.authority.len, 11);
  assert_memory_equal(px.authority.ptr, "example.com", 11);
  assert_int_equal(px.unique_id.len, 3);
  assert_int_equal(px.has_ssl, 1);
  assert_int_equal(px.ssl_client, 7);
  assert_int_equal(px.ssl_verify, 0);
  assert_int_equal(px.ssl_version.len, 7);
  assert_memory_equal(px.ssl_version.ptr, "TLSv1.3", 7);
  assert_int_equal(px.ssl_cn.len, 5);
  assert_int_equal(px.ssl_cipher.len, 1);
  expect_prefixes_want_more(h, n);
  /* A TLV running past the header, and a cut SSL sub-TLV. */
  body[12 + 2] = 3;
  n = v2(h, 0x21, 0x11, body, 12 + 5);
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  body[12 + 2] = 2;

  /* TCP/IPv6. */
  memset(body, 0, 36);
  body[15] = 1;
  body[31] = 2;
  body[32] = 0x12;
  body[33] = 0x34;
  body[35] = 80;
  n = v2(h, 0x21, 0x21, body, 36);
  assert_int_equal(hr__proxy_parse(h, n, &px), (int)n);
  expect_in6(&px.src, "::1", 0x1234);
  expect_in6(&px.dst, "::2", 80);
  /* LOCAL (a health check): the connection's own addresses, whatever
   * follows. */
  n = v2(h, 0x20, 0x00, (const uint8_t *)"junk", 4);
  assert_int_equal(hr__proxy_parse(h, n, &px), (int)n);
  assert_int_equal(px.proxied, 0);
  /* UNSPEC, UNIX and DGRAM: taken, but not proxied addresses. */
  n = v2(h, 0x21, 0x00, NULL, 0);
  assert_int_equal(hr__proxy_parse(h, n, &px), 16);
  assert_int_equal(px.proxied, 0);
  memset(body, 0, 216);
  n = v2(h, 0x21, 0x31, body, 216);
  assert_int_equal(hr__proxy_parse(h, n, &px), (int)n);
  assert_int_equal(px.proxied, 0);
  n = v2(h, 0x21, 0x12, body, 12);
  assert_int_equal(hr__proxy_parse(h, n, &px), (int)n);
  assert_int_equal(px.proxied, 0);
  /* Malformed: version 1 in the v2 form, a command or family out of
   * range, addresses shorter than the family needs. */
  n = v2(h, 0x11, 0x11, body, 12);
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  n = v2(h, 0x22, 0x11, body, 12);
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  n = v2(h, 0x21, 0x41, body, 12);
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  n = v2(h, 0x21, 0x13, body, 12);
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  n = v2(h, 0x21, 0x21, body, 35);
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  /* A signature that goes wrong at its last byte. */
  n = v2(h, 0x21, 0x11, body, 12);
  h[11] = 0x0B;
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  assert_int_equal(hr__proxy_parse(h, 0, &px), 0);
}

/* CRC32C over the whole header with its own field zero (RFC 3720's
 * check value for "123456789" is 0xE3069283). */
static void test_v2_crc(void **state) {
  uint8_t h[64], body[32];
  uint32_t crc = 0xFFFFFFFFu;
  size_t n, i;
  int k;
  (void)state;
  memcpy(body, "\xc0\x00\x02\x01\xc6\x33\x64\x02\xdc\x04\x01\xbb", 12);
  memcpy(body + 12, "\x03\x00\x04\x00\x00\x00\x00", 7);
  n = v2(h, 0x21, 0x11, body, 19);
  for (i = 0; i < n; i++) { /* the check value, computed here independently */
    crc ^= h[i];
    for (k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  crc ^= 0xFFFFFFFFu;
  h[n - 4] = (uint8_t)(crc >> 24);
  h[n - 3] = (uint8_t)(crc >> 16);
  h[n - 2] = (uint8_t)(crc >> 8);
  h[n - 1] = (uint8_t)crc;
  assert_int_equal(hr__proxy_parse(h, n, &px), (int)n);
  h[20] ^= 1; /* the source address changed on the way */
  assert_int_equal(hr__proxy_parse(h, n, &px), HR_EPARSE);
  /* The reference value of the polynomial itself. */
  crc = 0xFFFFFFFFu;
  for (i = 0; i < 9; i++) {
    crc ^= (uint8_t)("123456789"[i]);
    for (k = 0; k < 8; k++) crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  assert_int_equal(crc ^ 0xFFFFFFFFu, 0xE3069283u);
}

static void test_cidr(void **state) {
  hr__cidr_t n;
  struct sockaddr_in a4;
  struct sockaddr_in6 a6;
  (void)state;
  memset(&a4, 0, sizeof a4);
  memset(&a6, 0, sizeof a6);
  a4.sin_family = AF_INET;
  a6.sin6_family = AF_INET6;
  assert_int_equal(hr__cidr_parse("10.1.2.3/8", &n), 0);
  assert_int_equal(n.bits, 8);
  assert_int_equal(n.addr[1], 0); /* host bits cleared */
  inet_pton(AF_INET, "10.200.0.1", &a4.sin_addr);
  assert_true(hr__cidr_match(&n, (struct sockaddr *)&a4));
  inet_pton(AF_INET, "11.0.0.1", &a4.sin_addr);
  assert_false(hr__cidr_match(&n, (struct sockaddr *)&a4));
  /* An IPv4-mapped IPv6 peer counts as IPv4. */
  inet_pton(AF_INET6, "::ffff:10.9.9.9", &a6.sin6_addr);
  assert_true(hr__cidr_match(&n, (struct sockaddr *)&a6));
  assert_int_equal(hr__cidr_parse("192.168.1.128/25", &n), 0);
  inet_pton(AF_INET, "192.168.1.200", &a4.sin_addr);
  assert_true(hr__cidr_match(&n, (struct sockaddr *)&a4));
  inet_pton(AF_INET, "192.168.1.127", &a4.sin_addr);
  assert_false(hr__cidr_match(&n, (struct sockaddr *)&a4));
  assert_int_equal(hr__cidr_parse("2001:db8::/32", &n), 0);
  inet_pton(AF_INET6, "2001:db8:ffff::1", &a6.sin6_addr);
  assert_true(hr__cidr_match(&n, (struct sockaddr *)&a6));
  inet_pton(AF_INET6, "2001:db9::1", &a6.sin6_addr);
  assert_false(hr__cidr_match(&n, (struct sockaddr *)&a6));
  assert_false(hr__cidr_match(&n, (struct sockaddr *)&a4));
  assert_int_equal(hr__cidr_parse("127.0.0.1", &n), 0);
  assert_int_equal(n.bits, 32);
  assert_int_equal(hr__cidr_parse("0.0.0.0/0", &n), 0);
  assert_true(hr__cidr_match(&n, (struct sockaddr *)&a4));
  assert_int_equal(hr__cidr_parse("10.0.0.0/33", &n), HR_EINVAL);
  assert_int_equal(hr__cidr_parse("10.0.0.0/08", &n), HR_EINVAL);
  assert_int_equal(hr__cidr_parse("10.0.0.0/", &n), HR_EINVAL);
  assert_int_equal(hr__cidr_parse("::/129", &n), HR_EINVAL);
  assert_int_equal(hr__cidr_parse("example.com/8", &n), HR_EINVAL);
  assert_int_equal(hr__cidr_parse("", &n), HR_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v1),
      cmocka_unit_test(test_v2),
      cmocka_unit_test(test_v2_crc),
      cmocka_unit_test(test_cidr),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
