/* SPDX-License-Identifier: MIT */
/*
 * The PROXY protocol header (HAProxy's doc/proxy-protocol.txt, versions 1
 * and 2): what a load balancer sends first on a connection to say whose
 * connection it is.  This is the parser alone; the listener that expects
 * the header from trusted peers comes with it (issue 14).
 *
 * Version 1 is one line of text, at most 107 bytes with its CRLF:
 *   "PROXY TCP4 <src> <dst> <srcport> <dstport>\r\n", TCP6 likewise, or
 *   "PROXY UNKNOWN ...\r\n" (the rest of the line is ignored).
 * Version 2 is binary: a 12-byte signature, version and command, family
 * and transport, a 16-bit length, the addresses, then TLVs (type, 16-bit
 * length, value), of which ALPN, AUTHORITY, UNIQUE_ID and SSL (with its
 * VERSION, CN and CIPHER sub-TLVs) are kept, and CRC32C is verified.
 */
#ifndef HR_SERVER_PROXY_H
#define HR_SERVER_PROXY_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hroute/common.h"
#include "hroute/server.h"

/* The longest header: version 2's 16 bytes and a 16-bit length. */
#define HR__PROXY_MAX (16 + 65535)
#define HR__PROXY_V1_MAX 107

typedef struct hr__proxy_s {
  uint8_t version; /* 1 or 2 */
  /* 1: the addresses below are the client's and the proxy's; 0: keep the
   * connection's own (v2 LOCAL, a health check of the proxy's own; v1
   * UNKNOWN; a family the server does not take, such as AF_UNIX). */
  uint8_t proxied;
  struct sockaddr_storage src, dst; /* AF_INET or AF_INET6 when proxied */
  /* Version 2 TLVs, spans into the parsed bytes (empty when absent). */
  hr_span_t alpn, authority, unique_id;
  uint8_t has_ssl;     /* an SSL TLV came */
  uint8_t ssl_client;  /* its client field (PP2_CLIENT_SSL 0x01, ...) */
  uint32_t ssl_verify; /* 0: the client presented a certificate and it verified */
  hr_span_t ssl_version, ssl_cn, ssl_cipher;
} hr__proxy_t;

/*
 * Parses the header at the start of `buf` (`len` bytes read so far).
 * Returns its length (> 0) and fills *out when a whole, valid header is
 * there; 0 when more bytes are needed (what is there so far could still
 * begin one: a caller stops waiting at HR__PROXY_MAX); HR_EPARSE when the
 * bytes are not a valid PROXY header (including a v2 header whose CRC32C
 * does not match).  Spans in *out point into `buf`.
 */
int hr__proxy_parse(const uint8_t *buf, size_t len, hr__proxy_t *out);

/* A network: an address and a prefix length. */
typedef struct hr__cidr_s {
  int family; /* AF_INET or AF_INET6 */
  uint8_t addr[16];
  uint8_t bits;
} hr__cidr_t;

/* Parses "a.b.c.d/n", "x::y/n" or a single address (all bits).  Returns 0
 * or HR_EINVAL.  Host bits set in the address are cleared. */
int hr__cidr_parse(const char *s, hr__cidr_t *out);
/* Whether `a` (AF_INET or AF_INET6; an IPv4-mapped IPv6 address counts as
 * IPv4) is in the network. */
int hr__cidr_match(const hr__cidr_t *n, const struct sockaddr *a);

/* A listener's PROXY protocol setting (hr_listen_options_t.proxy and the
 * networks trusted to send a header), copied when the address is added. */
typedef struct hr__proxyconf_s {
  hr_proxy_mode_t mode;
  hr__cidr_t *nets;
  size_t nnets;
} hr__proxyconf_t;

#endif /* HR_SERVER_PROXY_H */
