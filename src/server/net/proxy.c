/* SPDX-License-Identifier: MIT */
/*
 * The PROXY protocol header parser (proxy.h), after HAProxy's
 * doc/proxy-protocol.txt: version 1 (§2.1, text) and version 2 (§2.2,
 * binary, with TLVs §2.2.7-§2.2.8), and network matching for the list of
 * trusted peers.  Strict where the document is: single spaces, decimal
 * ports without leading zeros, addresses inet_pton takes, lengths that add
 * up, a CRC32C that matches.
 */
#include <arpa/inet.h>
#include <string.h>

#include "hroute/error.h"
#include "server/net/proxy.h"

static const uint8_t SIG2[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

/* ---- version 1 ------------------------------------------------------------- */

/* The next field of a v1 line: up to a space or the end of the line. */
static int v1_field(const char **p, const char *end, char *out, size_t cap) {
  const char *s = *p, *e = s;
  while (e < end && *e != ' ') e++;
  if (e == s || (size_t)(e - s) >= cap) return -1;
  memcpy(out, s, (size_t)(e - s));
  out[e - s] = '\0';
  *p = e < end ? e + 1 : e; /* past one space */
  return e < end ? 1 : 0;   /* 1: a space followed */
}

static int v1_port(const char *s, uint16_t *out) {
  unsigned long v = 0;
  size_t n = strlen(s), i;
  if (n == 0 || n > 5 || (n > 1 && s[0] == '0')) return -1;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (unsigned long)(s[i] - '0');
  }
  if (v > 65535) return -1;
  *out = (uint16_t)v;
  return 0;
}

static void set_addr(struct sockaddr_storage *ss, int family, const void *a, uint16_t port) {
  memset(ss, 0, sizeof(*ss));
  if (family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    in->sin_family = AF_INET;
    memcpy(&in->sin_addr, a, 4);
    in->sin_port = htons(port);
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    memcpy(&in6->sin6_addr, a, 16);
    in6->sin6_port = htons(port);
  }
}

static int parse_v1(const uint8_t *buf, size_t len, hr__proxy_t *out) {
  const char *s = (const char *)buf, *end, *p;
  /* The CR may stand at most at byte 106 for the LF to be the 107th. */
  size_t scan = len < HR__PROXY_V1_MAX - 1 ? len : HR__PROXY_V1_MAX - 1;
  const uint8_t *cr = memchr(buf, '\r', scan);
  char proto[8], a1[46], a2[46], p1[6], p2[6];
  uint8_t b1[16], b2[16];
  uint16_t port1, port2;
  int family;
  const uint8_t *q;
  /* US-ASCII text: a control byte before the CR (an LF alone) is no
   * header, whatever follows. */
  for (q = buf; q < (cr != NULL ? cr : buf + scan); q++)
    if (*q < 0x20 || *q > 0x7E) return HR_EPARSE;
  if (cr == NULL) return len >= HR__PROXY_V1_MAX - 1 ? HR_EPARSE : 0;
  if ((size_t)(cr - buf) + 1 >= len) return 0; /* the LF is still to come */
  if (cr[1] != '\n') return HR_EPARSE;
  end = (const char *)cr;
  p = s + 6; /* "PROXY " */
  if (v1_field(&p, end, proto, sizeof proto) < 0) return HR_EPARSE;
  out->version = 1;
  if (strcmp(proto, "UNKNOWN") == 0) { /* the rest of the line is ignored */
    out->proxied = 0;
    return (int)(cr - buf) + 2;
  }
  if (strcmp(proto, "TCP4") == 0)
    family = AF_INET;
  else if (strcmp(proto, "TCP6") == 0)
    family = AF_INET6;
  else
    return HR_EPARSE;
  if (p >= end || v1_field(&p, end, a1, sizeof a1) != 1 ||
      v1_field(&p, end, a2, sizeof a2) != 1 || v1_field(&p, end, p1, sizeof p1) != 1 ||
      v1_field(&p, end, p2, sizeof p2) != 0 || p != end)
    return HR_EPARSE;
  if (inet_pton(family, a1, b1) != 1 || inet_pton(family, a2, b2) != 1 ||
      v1_port(p1, &port1) != 0 || v1_port(p2, &port2) != 0)
    return HR_EPARSE;
  set_addr(&out->src, family, b1, port1);
  set_addr(&out->dst, family, b2, port2);
  out->proxied = 1;
  return (int)(cr - buf) + 2;
}

/* ---- version 2 ------------------------------------------------------------- */

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit: a
 * header is short and comes once per connection. */
static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    crc ^= p[i];
    for (k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc;
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static hr_span_t span_of(const uint8_t *p, size_t n) { return (hr_span_t){(const char *)p, n}; }

/* The SSL TLV's value: client (1), verify (4), then sub-TLVs. */
static int ssl_tlv(const uint8_t *v, size_t n, hr__proxy_t *out) {
  size_t i = 5;
  if (n < 5) return -1;
  out->has_ssl = 1;
  out->ssl_client = v[0];
  out->ssl_verify = (uint32_t)v[1] << 24 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 8 | v[4];
  while (i < n) {
    size_t l;
    if (n - i < 3) return -1;
    l = be16(v + i + 1);
    if (n - i - 3 < l) return -1;
    if (v[i] == 0x21) out->ssl_version = span_of(v + i + 3, l);
    else if (v[i] == 0x22) out->ssl_cn = span_of(v + i + 3, l);
    else if (v[i] == 0x23) out->ssl_cipher = span_of(v + i + 3, l);
    i += 3 + l;
  }
  return 0;
}

/* The TLVs in buf[at..total); the header is buf[0..total). */
static int tlvs(const uint8_t *buf, size_t at, size_t total, hr__proxy_t *out) {
  while (at < total) {
    size_t l;
    const uint8_t *v;
    if (total - at < 3) return -1;
    l = be16(buf + at + 1);
    if (total - at - 3 < l) return -1;
    v = buf + at + 3;
    switch (buf[at]) {
    case 0x01: out->alpn = span_of(v, l); break;
    case 0x02: out->authority = span_of(v, l); break;
    case 0x03: { /* CRC32C of the whole header with this field zero */
      uint8_t zero[4] = {0, 0, 0, 0};
      uint32_t want, got;
      if (l != 4) return -1;
      want = (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 | (uint32_t)v[2] << 8 | v[3];
      got = crc32c(0xFFFFFFFFu, buf, (size_t)(v - buf));
      got = crc32c(got, zero, 4);
      got = crc32c(got, v + 4, total - (size_t)(v - buf) - 4) ^ 0xFFFFFFFFu;
      if (got != want) return -1;
      break;
    }
    case 0x05:
      if (l > 128) return -1;
      out->unique_id = span_of(v, l);
      break;
    case 0x20:
      if (ssl_tlv(v, l, out) != 0) return -1;
      break;
    default: break; /* NOOP, NETNS, custom: ignored */
    }
    at += 3 + l;
  }
  return 0;
}

static int parse_v2(const uint8_t *buf, size_t len, hr__proxy_t *out) {
  size_t total, need;
  int cmd, fam, proto;
  if (len < 16) return 0;
  if ((buf[12] >> 4) != 2) return HR_EPARSE;
  cmd = buf[12] & 0x0F;
  fam = buf[13] >> 4;
  proto = buf[13] & 0x0F;
  if (cmd > 1 || fam > 3 || proto > 2) return HR_EPARSE;
  total = 16 + (size_t)be16(buf + 14);
  if (len < total) return 0;
  out->version = 2;
  out->proxied = 0;
  if (cmd == 0) return (int)total; /* LOCAL: the connection's own addresses; the rest ignored */
  need = fam == 1 ? 12 : fam == 2 ? 36 : fam == 3 ? 216 : 0;
  if (total - 16 < need) return HR_EPARSE;
  if (tlvs(buf, 16 + need, total, out) != 0) return HR_EPARSE;
  if (proto == 1 && (fam == 1 || fam == 2)) {
    const uint8_t *a = buf + 16;
    int family = fam == 1 ? AF_INET : AF_INET6;
    size_t n = fam == 1 ? 4 : 16;
    set_addr(&out->src, family, a, be16(a + 2 * n));
    set_addr(&out->dst, family, a + n, be16(a + 2 * n + 2));
    out->proxied = 1;
  }
  return (int)total;
}

int hr__proxy_parse(const uint8_t *buf, size_t len, hr__proxy_t *out) {
  size_t k = len < 12 ? len : 12;
  memset(out, 0, sizeof(*out));
  if (len == 0) return 0;
  if (memcmp(buf, SIG2, k) == 0) return len < 12 ? 0 : parse_v2(buf, len, out);
  k = len < 6 ? len : 6;
  if (memcmp(buf, "PROXY ", k) == 0) return len < 6 ? 0 : parse_v1(buf, len, out);
  return HR_EPARSE;
}

/* ---- networks ---------------------------------------------------------------- */

int hr__cidr_parse(const char *s, hr__cidr_t *out) {
  char a[64];
  const char *slash = strchr(s, '/');
  size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s), i;
  unsigned long bits;
  memset(out, 0, sizeof(*out));
  if (n == 0 || n >= sizeof a) return HR_EINVAL;
  memcpy(a, s, n);
  a[n] = '\0';
  if (inet_pton(AF_INET, a, out->addr) == 1)
    out->family = AF_INET;
  else if (inet_pton(AF_INET6, a, out->addr) == 1)
    out->family = AF_INET6;
  else
    return HR_EINVAL;
  bits = out->family == AF_INET ? 32 : 128;
  if (slash != NULL) {
    const char *d = slash + 1;
    unsigned long v = 0;
    if (*d == '\0' || strlen(d) > 3 || (d[0] == '0' && d[1] != '\0')) return HR_EINVAL;
    for (; *d != '\0'; d++) {
      if (*d < '0' || *d > '9') return HR_EINVAL;
      v = v * 10 + (unsigned long)(*d - '0');
    }
    if (v > bits) return HR_EINVAL;
    bits = v;
  }
  out->bits = (uint8_t)bits;
  for (i = 0; i < 16; i++) { /* clear the host bits */
    size_t first = i * 8;
    if (first >= bits)
      out->addr[i] = 0;
    else if (first + 8 > bits)
      out->addr[i] &= (uint8_t)(0xFF << (8 - (bits - first)));
  }
  return 0;
}

int hr__cidr_match(const hr__cidr_t *n, const struct sockaddr *a) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  const uint8_t *p;
  size_t full, i;
  if (a->sa_family == AF_INET) {
    p = (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
    if (n->family != AF_INET) return 0;
  } else if (a->sa_family == AF_INET6) {
    p = (const uint8_t *)&((const struct sockaddr_in6 *)a)->sin6_addr;
    if (n->family == AF_INET) { /* ::ffff:a.b.c.d is a.b.c.d */
      if (memcmp(p, mapped, 12) != 0) return 0;
      p += 12;
    }
  } else {
    return 0;
  }
  full = n->bits / 8;
  for (i = 0; i < full; i++)
    if (p[i] != n->addr[i]) return 0;
  if (n->bits % 8 != 0) {
    uint8_t mask = (uint8_t)(0xFF << (8 - n->bits % 8));
    if ((p[full] & mask) != n->addr[full]) return 0;
  }
  return 1;
}
