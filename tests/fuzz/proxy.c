/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the PROXY protocol header parser: no input may
 * crash it or make it read past the bytes given; a header it accepts has a
 * length within the input, spans inside the header, and proxied addresses
 * of family AF_INET or AF_INET6; and the answers agree across prefixes:
 * every proper prefix of an accepted header asks for more, and once a
 * prefix is refused every longer input is refused too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hroute/error.h"
#include "server/net/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_span(hr_span_t s, const uint8_t *h, size_t n) {
  if (s.len == 0) return;
  if ((const uint8_t *)s.ptr < h || (const uint8_t *)s.ptr + s.len > h + n) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hr__proxy_t px;
  uint8_t *copy;
  int rc, prev = 0;
  size_t k;
  if (size > 4096) return 0;
  /* An exact-size copy, so ASan sees any read past the input. */
  copy = malloc(size > 0 ? size : 1);
  if (copy == NULL) return 0;
  memcpy(copy, data, size);
  rc = hr__proxy_parse(copy, size, &px);
  if (rc > 0) {
    if ((size_t)rc > size) abort();
    check_span(px.alpn, copy, (size_t)rc);
    check_span(px.authority, copy, (size_t)rc);
    check_span(px.unique_id, copy, (size_t)rc);
    check_span(px.ssl_version, copy, (size_t)rc);
    check_span(px.ssl_cn, copy, (size_t)rc);
    check_span(px.ssl_cipher, copy, (size_t)rc);
    if (px.proxied && ((px.src.ss_family != AF_INET && px.src.ss_family != AF_INET6) ||
                       px.dst.ss_family != px.src.ss_family))
      abort();
    if (px.version != 1 && px.version != 2) abort();
  } else if (rc != 0 && rc != HR_EPARSE) {
    abort();
  }
  for (k = 0; k < size && k < 256; k++) {
    int r = hr__proxy_parse(copy, k, &px);
    if (rc > 0 && k < (size_t)rc && r != 0) abort();    /* a prefix of a header */
    if (prev == HR_EPARSE && r != HR_EPARSE) abort();    /* refused stays refused */
    prev = r;
  }
  if (prev == HR_EPARSE && size <= 256 && rc != HR_EPARSE && size > 0) abort();
  free(copy);
  return 0;
}
