/* SPDX-License-Identifier: MIT */
/*
 * The server's side of the WebSocket opening handshake (RFC 6455 §4.2):
 * the client's request is checked (§4.2.1), a subprotocol chosen (§4.2.2),
 * and the request answered with 101 and Sec-WebSocket-Accept, the base64
 * of the SHA-1 of the key and the protocol's GUID (§1.3, OpenSSL's SHA-1
 * and base64).  A request that fails gets 400, 403, 405 or 426 here, in
 * the host's error format (hr_response_error).
 */
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>

#include "util/text.h"
#include "websocket/ws.h"

static const char GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void hr_websocket_options_init(hr_websocket_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->max_message_bytes = 1 << 20;
  o->ping_interval_ms = 30000;
  o->ping_timeout_ms = 10000;
  o->idle_timeout_ms = 0;
  o->close_timeout_ms = 5000;
  o->subprotocols = NULL;
  o->origins = NULL;
  o->deflate.server_window_bits = 15;
  o->deflate.client_window_bits = 15;
  o->deflate.level = 1;
  o->deflate.mem_level = 8;
  o->deflate.min_length = 64;
}

/* RFC 6455 §10.2 (see the origins option). */
static int origin_ok(const hr_request_t *req, const char *const *allowed) {
  hr_span_t origin, host, scheme, second;
  size_t cursor = 0;
  const char *sep;
  if (hr_request_field(req, HR_SPAN_LIT("Origin"), &cursor, &origin) != 0) return 1;
  /* One origin per request (RFC 6454 §7.1): a second line is refused. */
  if (hr_request_field(req, HR_SPAN_LIT("Origin"), &cursor, &second) == 0) return 0;
  if (allowed != NULL) {
    for (; *allowed != NULL; allowed++)
      if (strcmp(*allowed, "*") == 0 ||
          hr_span_eq_nocase(origin, (hr_span_t){*allowed, strlen(*allowed)}))
        return 1;
    return 0;
  }
  /* scheme "://" host [ ":" port ] (RFC 6454 §6.1); "null" matches no host. */
  sep = origin.len > 3 ? memmem(origin.ptr, origin.len, "://", 3) : NULL;
  if (sep == NULL || hr_request_field(req, HR_SPAN_LIT("Host"), NULL, &host) != 0) return 0;
  scheme = (hr_span_t){origin.ptr, (size_t)(sep - origin.ptr)};
  if (!hr_span_eq_nocase(scheme, HR_SPAN_LIT("http")) &&
      !hr_span_eq_nocase(scheme, HR_SPAN_LIT("https")))
    return 0; /* a page's origin is http or https */
  sep += 3;
  return hr_span_eq_nocase((hr_span_t){sep, origin.len - (size_t)(sep - origin.ptr)}, host);
}

/* Whether any line of field `name` holds `token` in its list. */
static int field_has_token(const hr_request_t *req, hr_span_t name, hr_span_t token) {
  size_t cursor = 0;
  hr_span_t v, item;
  while (hr_request_field(req, name, &cursor, &v) == 0)
    while (hr__list_next(&v, &item))
      if (hr_span_eq_nocase(item, token)) return 1;
  return 0;
}

/* The one Sec-WebSocket-Key line, 16 bytes in base64: 22 characters of
 * the alphabet and "==" (RFC 4648 §4). */
static int key_of(const hr_request_t *req, hr_span_t *key) {
  size_t cursor = 0, i;
  hr_span_t second;
  if (hr_request_field(req, HR_SPAN_LIT("Sec-WebSocket-Key"), &cursor, key) != 0) return 0;
  if (hr_request_field(req, HR_SPAN_LIT("Sec-WebSocket-Key"), &cursor, &second) == 0) return 0;
  if (key->len != 24 || key->ptr[22] != '=' || key->ptr[23] != '=') return 0;
  for (i = 0; i < 22; i++) {
    unsigned char c = (unsigned char)key->ptr[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          c == '+' || c == '/'))
      return 0;
  }
  return 1;
}

/* Sec-WebSocket-Accept for `key`: 28 characters and a NUL in out. */
static int accept_of(hr_span_t key, char out[29]) {
  unsigned char in[24 + sizeof GUID - 1], md[SHA_DIGEST_LENGTH];
  unsigned int mdlen = 0;
  memcpy(in, key.ptr, 24);
  memcpy(in + 24, GUID, sizeof GUID - 1);
  if (EVP_Digest(in, sizeof in, md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != sizeof md)
    return HR_ENOMEM;
  return EVP_EncodeBlock((unsigned char *)out, md, (int)sizeof md) == 28 ? 0 : HR_ENOMEM;
}

/* The first of the endpoint's subprotocols the client offers, or none. */
static const char *choose_subprotocol(const hr_request_t *req, const char *const *ours) {
  for (; ours != NULL && *ours != NULL; ours++) {
    size_t cursor = 0;
    hr_span_t v, item, mine = {*ours, strlen(*ours)};
    while (hr_request_field(req, HR_SPAN_LIT("Sec-WebSocket-Protocol"), &cursor, &v) == 0)
      while (hr__list_next(&v, &item))
        if (hr_span_eq(item, mine)) return *ours; /* §4.1: case-sensitive */
  }
  return NULL;
}

static int refuse(hr_response_t *res, int status, const char *why) {
  int rc;
  if (status == 426) {
    /* RFC 9110 §15.5.22: name the protocol; RFC 6455 §4.4: the versions. */
    hr_response_add_field(res, HR_SPAN_LIT("Upgrade"), HR_SPAN_LIT("websocket"));
    hr_response_add_field(res, HR_SPAN_LIT("Sec-WebSocket-Version"), HR_SPAN_LIT("13"));
  } else if (status == 405) {
    hr_response_add_field(res, HR_SPAN_LIT("Allow"), HR_SPAN_LIT("GET"));
  }
  /* In the host's error format when it has one (its error_body hook),
   * else `why` as text/plain. */
  rc = hr_response_error(res, status, why);
  /* Out of memory for its Content-Type: still complete the response (a
   * no-op when it was the send that failed). */
  if (rc == HR_ENOMEM) rc = hr_response_send(res, status, why, strlen(why));
  return rc == HR_ECLOSED ? HR_ECLOSED : HR_EINVAL;
}

/* What is wrong with the handshake (a response was sent), or 0. */
static int check_request(const hr_request_t *req, hr_response_t *res, hr_span_t *key,
                         const hr_websocket_options_t *o) {
  hr_span_t v;
  if (!hr_span_eq(hr_request_method(req), HR_SPAN_LIT("GET")))
    return refuse(res, 405, "WebSocket handshake: GET only\n");
  if (hr_request_version(req) != 11 ||
      !field_has_token(req, HR_SPAN_LIT("Connection"), HR_SPAN_LIT("upgrade")) ||
      !field_has_token(req, HR_SPAN_LIT("Upgrade"), HR_SPAN_LIT("websocket")))
    return refuse(res, 400, "WebSocket handshake: Upgrade: websocket and Connection: "
                            "Upgrade needed\n");
  if (hr_request_field(req, HR_SPAN_LIT("Sec-WebSocket-Version"), NULL, &v) != 0)
    return refuse(res, 400, "WebSocket handshake: no Sec-WebSocket-Version\n");
  if (!field_has_token(req, HR_SPAN_LIT("Sec-WebSocket-Version"), HR_SPAN_LIT("13")))
    return refuse(res, 426, "WebSocket handshake: version 13 only\n");
  if (!key_of(req, key))
    return refuse(res, 400, "WebSocket handshake: bad Sec-WebSocket-Key\n");
  if (!origin_ok(req, o->origins))
    return refuse(res, 403, "WebSocket handshake: origin not allowed\n");
  return 0;
}

static int valid_options(const hr_websocket_options_t *o) {
  const char *const *p;
  for (p = o->subprotocols; p != NULL && *p != NULL; p++)
    if (!hr__is_token((hr_span_t){*p, strlen(*p)})) return 0;
  return o->max_message_bytes > 0 && hr__ws_pmd_options_ok(&o->deflate);
}

int hr_websocket_accept(hr_request_t *req, hr_response_t *res,
                        const hr_websocket_options_t *opts,
                        const hr_websocket_callbacks_t *cb, void *udata,
                        hr_websocket_t **out) {
  hr_websocket_options_t defaults;
  hr_websocket_t *ws;
  const hr_allocator_t *a;
  const char *sub;
  hr_span_t key;
  hr__ws_pmd_t agreed;
  char accept[29], extensions[160];
  int err;
  if (out != NULL) *out = NULL;
  if (opts == NULL) {
    hr_websocket_options_init(&defaults);
    opts = &defaults;
  }
  if (req == NULL || res == NULL || req != hr_response_request(res) || cb == NULL ||
      cb->message == NULL || cb->closed == NULL || !valid_options(opts))
    return HR_EINVAL;
  /* Nothing refused where no upgrade could follow either (a response
   * started, a body still to come). */
  if ((err = hr_response_upgrade_check(res)) != 0) return err;
  if ((err = check_request(req, res, &key, opts)) != 0) return err;
  if ((err = accept_of(key, accept)) != 0) return err;

  a = hr_response_allocator(res);
  ws = a->malloc(a->ctx, sizeof(*ws));
  if (ws == NULL) return HR_ENOMEM;
  memset(ws, 0, sizeof(*ws));
  ws->a = a;
  ws->cb = *cb;
  ws->udata = udata;
  atomic_init(&ws->refs, 1);
  sub = choose_subprotocol(req, opts->subprotocols);
  if (sub != NULL) {
    size_t n = strlen(sub) + 1;
    if ((ws->subprotocol = a->malloc(a->ctx, n)) == NULL) goto nomem;
    memcpy(ws->subprotocol, sub, n);
    if (hr_response_add_field(res, HR_SPAN_LIT("Sec-WebSocket-Protocol"),
                              (hr_span_t){sub, n - 1}) != 0)
      goto nomem;
  }
  if (hr_response_add_field(res, HR_SPAN_LIT("Sec-WebSocket-Accept"),
                            (hr_span_t){accept, 28}) != 0)
    goto nomem;
  /* RFC 7692 §7.1: the first offer these settings meet, or none. */
  if (hr__ws_pmd_negotiate(req, &opts->deflate, &agreed, extensions, sizeof extensions)) {
    if ((ws->pmd = a->malloc(a->ctx, sizeof(*ws->pmd))) == NULL) goto nomem;
    *ws->pmd = agreed;
    if (hr_response_add_field(res, HR_SPAN_LIT("Sec-WebSocket-Extensions"),
                              (hr_span_t){extensions, strlen(extensions)}) != 0)
      goto nomem;
  }
  if (hr__ws_session_init(ws, opts) != 0) goto nomem;
  err = hr_response_upgrade(res, "websocket", &hr__ws_stream_callbacks, ws, &ws->s);
  if (err != 0) {
    hr__ws_session_free(ws);
    return err;
  }
  ws->stream = ws->s;
  hr__ws_session_start(ws);
  if (out != NULL) *out = ws;
  return 0;
nomem:
  a->free(a->ctx, ws->pmd);
  a->free(a->ctx, ws->subprotocol);
  a->free(a->ctx, ws);
  return HR_ENOMEM;
}
