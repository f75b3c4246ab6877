/* SPDX-License-Identifier: MIT */
/*
 * The client behind proxies that speak HTTP (hr_request_client): the
 * trusted networks, the nodes of Forwarded (RFC 7239 §6) and
 * X-Forwarded-For, and the walk from the nearest hop back.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "hroute/delegate.h"
#include "server/exchange/exchange.h"
#include "server/net/proxy.h"
#include "util/text.h"

struct hr_trusted_s {
  const hr_allocator_t *a;
  size_t n;
  hr__cidr_t nets[];
};

int hr_trusted_new(hr_trusted_t **out, const char *const *networks) {
  const hr_allocator_t *a = hr_allocator_default();
  hr_trusted_t *t;
  size_t n = 0, i;
  if (out == NULL) return HR_EINVAL;
  *out = NULL;
  if (networks == NULL || networks[0] == NULL) return HR_EINVAL;
  while (networks[n] != NULL) n++;
  t = a->malloc(a->ctx, sizeof(*t) + n * sizeof(t->nets[0]));
  if (t == NULL) return HR_ENOMEM;
  t->a = a;
  t->n = n;
  for (i = 0; i < n; i++)
    if (hr__cidr_parse(networks[i], &t->nets[i]) != 0) {
      a->free(a->ctx, t);
      return HR_EINVAL;
    }
  *out = t;
  return 0;
}

void hr_trusted_free(hr_trusted_t *t) {
  if (t != NULL) t->a->free(t->a->ctx, t);
}

static int trusted(const hr_trusted_t *t, const struct sockaddr_storage *ss) {
  size_t i;
  for (i = 0; i < t->n; i++)
    if (hr__cidr_match(&t->nets[i], (const struct sockaddr *)ss)) return 1;
  return 0;
}

/* A port: 1-5 digits up to 65535. */
static int port_of(hr_span_t s, unsigned *out) {
  unsigned v = 0;
  size_t i;
  if (s.len == 0 || s.len > 5) return -1;
  for (i = 0; i < s.len; i++) {
    if (s.ptr[i] < '0' || s.ptr[i] > '9') return -1;
    v = v * 10 + (unsigned)(s.ptr[i] - '0');
  }
  if (v > 65535) return -1;
  *out = v;
  return 0;
}

/* A node (RFC 7239 §6: IPv4address / "[" IPv6address "]", an optional
 * ":" port; an obfuscated port reads as 0) or a bare address of
 * X-Forwarded-For (IPv6 unbracketed too).  Returns 0 with *out set, or -1:
 * not an address ("unknown", "_hidden", garbage). */
static int node_addr(hr_span_t n, struct sockaddr_storage *out) {
  char a[INET6_ADDRSTRLEN + 1];
  hr_span_t host = n, port = {NULL, 0};
  unsigned pv = 0;
  const char *colon;
  memset(out, 0, sizeof(*out));
  if (n.len > 0 && n.ptr[0] == '[') {
    const char *close = memchr(n.ptr, ']', n.len);
    if (close == NULL) return -1;
    host = (hr_span_t){n.ptr + 1, (size_t)(close - n.ptr - 1)};
    if ((size_t)(close - n.ptr) + 1 < n.len) {
      if (close[1] != ':') return -1;
      port = (hr_span_t){close + 2, n.len - (size_t)(close - n.ptr) - 2};
    }
  } else if ((colon = memchr(n.ptr, ':', n.len)) != NULL &&
             memchr(colon + 1, ':', n.len - (size_t)(colon - n.ptr) - 1) == NULL) {
    host = (hr_span_t){n.ptr, (size_t)(colon - n.ptr)}; /* v4:port */
    port = (hr_span_t){colon + 1, n.len - (size_t)(colon - n.ptr) - 1};
  }
  if (host.len == 0 || host.len >= sizeof a) return -1;
  memcpy(a, host.ptr, host.len);
  a[host.len] = '\0';
  if (port.ptr != NULL && port_of(port, &pv) != 0) {
    if (port.len == 0 || port.ptr[0] != '_') return -1; /* obfport: no number */
    pv = 0;
  }
  if (inet_pton(AF_INET, a, &((struct sockaddr_in *)out)->sin_addr) == 1) {
    out->ss_family = AF_INET;
    ((struct sockaddr_in *)out)->sin_port = htons((uint16_t)pv);
    return 0;
  }
  if (inet_pton(AF_INET6, a, &((struct sockaddr_in6 *)out)->sin6_addr) == 1) {
    out->ss_family = AF_INET6;
    ((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)pv);
    return 0;
  }
  return -1;
}

/* X-Forwarded-For's addresses, every line in order, into an array of the
 * request's arena.  Returns 0, HR_ENOTFOUND, HR_EPARSE, HR_ENOMEM. */
static int xff_hops(hr_request_t *req, hr_span_t **hops, size_t *n) {
  size_t cursor = 0, count = 0, k = 0, lines = 0;
  hr_span_t v, item, *out;
  while (hr_request_field(req, HR_SPAN_LIT("X-Forwarded-For"), &cursor, &v) == 0) {
    lines++;
    while (hr__list_next(&v, &item)) count++;
  }
  if (count == 0) return lines == 0 ? HR_ENOTFOUND : HR_EPARSE;
  if ((out = hr_request_alloc(req, count * sizeof(*out))) == NULL) return HR_ENOMEM;
  cursor = 0;
  while (hr_request_field(req, HR_SPAN_LIT("X-Forwarded-For"), &cursor, &v) == 0)
    while (hr__list_next(&v, &item)) {
      if (item.len == 0) return HR_EPARSE;
      out[k++] = item;
    }
  *hops = out;
  *n = count;
  return 0;
}

int hr_request_client(hr_request_t *req, const hr_trusted_t *t, struct sockaddr_storage *out) {
  hr_forwarded_t f;
  hr_span_t *hops = NULL;
  size_t n = 0, i;
  int len = (int)sizeof(*out), rc;
  if (req == NULL || t == NULL || out == NULL) return HR_EINVAL;
  if ((rc = hr_request_peer(req, (struct sockaddr *)out, &len)) != 0) return rc;
  if (!trusted(t, out)) return 0; /* nobody else's word is taken */
  rc = hr_request_typed(req, HR_SPAN_LIT("Forwarded"), HR_TYPE_FORWARDED, &f);
  if (rc == 0) {
    if ((hops = hr_request_alloc(req, f.n * sizeof(*hops))) == NULL) return HR_ENOMEM;
    for (i = 0; i < f.n; i++) hops[i] = f.elems[i].node_for;
    n = f.n;
  } else if (rc == HR_ENOTFOUND) {
    rc = xff_hops(req, &hops, &n);
    if (rc == HR_ENOTFOUND) return 0; /* a trusted proxy that said nothing */
    if (rc != 0) return rc;
  } else {
    return rc;
  }
  /* From the nearest hop back: the first one not trusted is the client. */
  for (i = n; i-- > 0;) {
    if (hops[i].ptr == NULL || node_addr(hops[i], out) != 0) return HR_ENOTFOUND;
    if (!trusted(t, out) || i == 0) return 0;
  }
  return 0;
}
