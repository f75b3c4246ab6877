/* SPDX-License-Identifier: MIT */
/*
 * The PROXY protocol on a connection (hr_server_listen_ex): at accept the
 * peer is found trusted or not (its address against the listener's
 * networks); then the connection's first step, before any HTTP, reads the
 * header (proxy.c parses it) or rules it out:
 *
 *   bytes that begin a header  trusted: read it whole (within the header
 *                              timeout), keep what it says, go on with
 *                              HTTP after it; malformed: closed.
 *                              Untrusted: closed (nobody else may claim
 *                              another's address).
 *   bytes that do not          trusted and required: closed; otherwise
 *                              served as HTTP from the first byte.
 *
 * On a TLS listener the header comes first, in the clear: the transport
 * starts raw and is handed the bytes after the header (ops->begin).
 *
 * What the header said lives in a block allocated for the connection (its
 * record has a slot for the pointer only on such listeners) and answers
 * hr_request_peer, hr_request_proxy and the access log.  The peer as text
 * (the header's client, else the socket's peer) is rendered here too, into
 * the connection's room, once it is known.
 */
#include <string.h>

#include "server/conn/conn.h"
#include "server/net/proxy.h"

struct hr__proxied_s {
  hr_proxy_info_t info; /* spans point into `data` */
  size_t len;
  char data[];          /* the TLV values kept */
};

void hr__proxy_accepted(hr__conn_t *c, const hr__proxyconf_t *pc, int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  size_t i;
  c->proxy_wait = 1;
  c->proxy_required = pc->mode == HR_PROXY_REQUIRED;
  if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) return; /* untrusted */
  for (i = 0; i < pc->nnets; i++)
    if (hr__cidr_match(&pc->nets[i], (struct sockaddr *)&ss)) {
      c->proxy_trusted = 1;
      return;
    }
}

void hr__proxied_free(hr__conn_t *c) {
  hr__proxied_t **slot = hr__conn_proxy_slot(c);
  if (slot == NULL || *slot == NULL) return;
  hr__mem_free(&c->w->mem, *slot);
  *slot = NULL;
}

/* Whether `p` (n bytes) may begin a header: 1 yes, 0 no, -1 too few bytes
 * to tell. */
static int begins_header(const char *p, size_t n) {
  static const char sig2[12] = "\r\n\r\n\0\r\nQUIT\n";
  size_t k = n < 12 ? n : 12;
  if (memcmp(p, sig2, k) == 0) return n < 12 ? -1 : 1;
  k = n < 6 ? n : 6;
  if (memcmp(p, "PROXY ", k) == 0) return n < 6 ? -1 : 1;
  return 0;
}

/* Copies a span's bytes into the block at *at. */
static hr_span_t keep(char *data, size_t *at, hr_span_t s) {
  hr_span_t out = {data + *at, s.len};
  if (s.len == 0) return (hr_span_t){NULL, 0};
  memcpy(data + *at, s.ptr, s.len);
  *at += s.len;
  return out;
}

/* Keeps what the header said.  Returns 0 or HR_ENOMEM. */
static int keep_header(hr__conn_t *c, const hr__proxy_t *px) {
  size_t need = px->alpn.len + px->authority.len + px->unique_id.len + px->ssl_version.len +
                px->ssl_cn.len + px->ssl_cipher.len,
         at = 0;
  int len = (int)sizeof(struct sockaddr_storage);
  hr__proxied_t *b = hr__mem_alloc(&c->w->mem, sizeof(*b) + need);
  if (b == NULL) return HR_ENOMEM;
  memset(&b->info, 0, sizeof b->info);
  b->len = need;
  b->info.version = px->version;
  b->info.proxied = px->proxied;
  if (px->proxied) {
    b->info.src = px->src;
    b->info.dst = px->dst;
  }
  c->t->ops->peer(c->t, (struct sockaddr *)&b->info.balancer, &len);
  b->info.alpn = keep(b->data, &at, px->alpn);
  b->info.authority = keep(b->data, &at, px->authority);
  b->info.unique_id = keep(b->data, &at, px->unique_id);
  b->info.has_ssl = px->has_ssl;
  b->info.ssl_client = px->ssl_client;
  b->info.ssl_verify = px->ssl_verify;
  b->info.ssl_version = keep(b->data, &at, px->ssl_version);
  b->info.ssl_cn = keep(b->data, &at, px->ssl_cn);
  b->info.ssl_cipher = keep(b->data, &at, px->ssl_cipher);
  *hr__conn_proxy_slot(c) = b;
  return 0;
}

/* Closes the connection: a header where none may be, none where one must
 * be, a malformed one.  Counted as a bad request and logged with the
 * peer (HR_LOG_INFO): a balancer outside the trusted networks shows here
 * first. */
static int refuse(hr__conn_t *c, const char *why) {
  struct sockaddr_storage ss;
  int len = (int)sizeof ss;
  char peer[64] = "?";
  hr__stat_inc(&c->w->st_bad);
  if (c->w->server->opts.log != NULL &&
      c->t->ops->peer(c->t, (struct sockaddr *)&ss, &len) == 0)
    hr__addr_text(&ss, peer, sizeof peer);
  hr__log(c->w, HR_LOG_INFO, "closed the connection from %s: %s", peer, why);
  hr__conn_close(c);
  return 0;
}

/* The header is read (or ruled out): what follows it from `at` is the
 * transport's own when it began raw (TLS), else the first HTTP bytes.
 * Returns 1 to go on, 0 when the connection closed. */
static int begin_transport(hr__conn_t *c, uint32_t at) {
  c->proxy_wait = 0;
  c->msg_start = at;
  if (c->t->ops->begin == NULL) return 1;
  /* Those bytes are the transport's (TLS records), not HTTP: they count
   * again as the plaintext they carry. */
  hr__stat_add(&c->w->st_bytes_received, -(uint64_t)(c->rlen - at));
  if (c->t->ops->begin(c->t, c->rbuf + at, c->rlen - at) != 0) {
    hr__conn_close(c);
    return 0;
  }
  c->rlen = c->msg_start = 0;
  return 1;
}

int hr__proxy_step(hr__conn_t *c) {
  hr__proxy_t px;
  const char *p;
  size_t n;
  int r;
  if (c->rbuf == NULL || c->msg_start >= c->rlen) {
    if (c->peer_eof) hr__conn_close(c); /* gone before a byte */
    return 0;
  }
  p = c->rbuf + c->msg_start;
  n = c->rlen - c->msg_start;
  r = begins_header(p, n);
  if (r < 0 && !c->peer_eof) return 0; /* too few bytes to tell */
  if (r < 0) r = 1;                    /* and no more will come: a cut header */
  if (r == 0) {
    if (c->proxy_trusted && c->proxy_required)
      return refuse(c, "no PROXY protocol header from a trusted peer, and the listener requires one");
    return begin_transport(c, c->msg_start); /* no header: from the first byte */
  }
  if (!c->proxy_trusted)
    return refuse(c, "a PROXY protocol header from a peer outside the trusted networks");
  r = hr__proxy_parse((const uint8_t *)p, n, &px);
  if (r == 0) {
    /* More to come, unless the read buffer is full already or the peer
     * has ended its side: truncated. */
    if (c->rlen >= hr__conn_rbuf_cap(c) || c->peer_eof)
      return refuse(c, "a truncated PROXY protocol header");
    return 0;
  }
  if (r < 0) return refuse(c, "a malformed PROXY protocol header");
  if (keep_header(c, &px) != 0) return refuse(c, "out of memory for the PROXY protocol header");
  hr__conn_peer_render(c); /* the log names the client now */
  return begin_transport(c, c->msg_start + (uint32_t)r);
}

int hr__conn_peer(hr__conn_t *c, struct sockaddr *addr, int *len) {
  hr__proxied_t **slot = hr__conn_proxy_slot(c);
  if (slot != NULL && *slot != NULL && (*slot)->info.proxied) {
    const struct sockaddr_storage *ss = &(*slot)->info.src;
    int n = ss->ss_family == AF_INET ? (int)sizeof(struct sockaddr_in)
                                     : (int)sizeof(struct sockaddr_in6);
    if (*len < n) return UV_ENOBUFS;
    memcpy(addr, ss, (size_t)n);
    *len = n;
    return 0;
  }
  return c->t->ops->peer(c->t, addr, len);
}

int hr_request_proxy(const hr_request_t *req, hr_proxy_info_t *info) {
  const hr__exchange_t *ex = HR__EX_OF_REQ(req);
  hr__proxied_t **slot;
  if (info == NULL) return HR_EINVAL;
  if (ex->conn == NULL) return UV_ENOTCONN;
  slot = hr__conn_proxy_slot(ex->conn);
  if (slot == NULL || *slot == NULL) return HR_ENOTFOUND;
  *info = (*slot)->info;
  return 0;
}

/* ---- the peer as text, for the access log --------------------------------- */

void hr__addr_text(const struct sockaddr_storage *ss, char *out, size_t cap) {
  out[0] = '\0';
  if (ss->ss_family == AF_INET)
    uv_ip4_name((const struct sockaddr_in *)ss, out, cap);
  else if (ss->ss_family == AF_INET6)
    uv_ip6_name((const struct sockaddr_in6 *)ss, out, cap);
}

void hr__conn_peer_render(hr__conn_t *c) {
  struct sockaddr_storage ss;
  int len = (int)sizeof ss;
  char *room = hr__conn_peer_text(c);
  if (room == NULL) return;
  room[0] = '\0';
  if (hr__conn_peer(c, (struct sockaddr *)&ss, &len) == 0) hr__addr_text(&ss, room, HR__PEER_TEXT);
}
