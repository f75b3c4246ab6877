/* SPDX-License-Identifier: MIT */
/*
 * What the transports share (see transport.h): advancing a write request,
 * and the answers of a transport that is not TLS.
 */
#include "hroute/error.h"
#include "server/net/transport.h"

int hr__wreq_advance(hr__wreq_t *req, size_t n) {
  while (req->nbufs > 0 && n >= req->bufs[0].len) {
    n -= req->bufs[0].len;
    req->bufs++;
    req->nbufs--;
  }
  if (req->nbufs > 0) {
    req->bufs[0].base += n;
    req->bufs[0].len -= n;
  }
  while (req->nbufs > 0 && req->bufs[0].len == 0) req->bufs++, req->nbufs--;
  return req->nbufs == 0;
}

int hr__no_tls_info(const hr__transport_t *t, hr_tls_info_t *info) {
  (void)t;
  (void)info;
  return HR_ENOTFOUND;
}

int hr__no_tls_client(const hr__transport_t *t, int der,
                      void *(*alloc)(void *ctx, size_t n), void *ctx,
                      hr_span_t *subject, hr_span_t *cert) {
  (void)t;
  (void)der;
  (void)alloc;
  (void)ctx;
  (void)subject;
  (void)cert;
  return HR_ENOTFOUND;
}
