/* SPDX-License-Identifier: MIT */
/*
 * The exchange's protocol: what an exchange (one request and its response)
 * asks of the wire, as a table of operations, the way a connection asks
 * its transport (transport.h).  The response and request calls, the
 * invoker and the server's own answers reach the wire only through it, so
 * they cannot tell HTTP/1.1 (h1_proto.c, the first implementation) from a
 * protocol that frames the same exchange otherwise (an HTTP/2 stream,
 * RFC 9113 §8.1).
 *
 * Every operation runs on the exchange's loop thread, with the exchange
 * attached to its connection (ex->conn != NULL), except `release`.  Those returning int
 * answer 0 or HR_ENOMEM; after an error, part of the message may already
 * be queued and the caller reports the framing lost (`lost`).
 */
#ifndef HR_SERVER_PROTO_H
#define HR_SERVER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include "hroute/http.h"
#include "server/net/transport.h"

typedef struct hr__exchange_s hr__exchange_t;

typedef struct hr__proto_s {
  const char *name; /* "http/1.1", "h2" */
  /* The response head: `status` (RFC 9110 §15), the route's pre-rendered
   * fields, the handler's fields and Date.  `length` >= 0: the body's
   * length in bytes; < 0: unknown, sent in pieces (`chunked`: h1 chunks)
   * or, without `chunked`, delimited by the end of the connection. */
  int (*head)(hr__exchange_t *ex, int status, int64_t length, int chunked);
  /* Body bytes of the response, framed as the head said: copied, borrowed
   * until `release` (called later, never inside the call, also with n 0),
   * or `n` bytes of file `fd` from `offset` (released the same way). */
  int (*data)(hr__exchange_t *ex, const void *p, size_t n);
  int (*borrow)(hr__exchange_t *ex, const void *p, size_t n, hr_release_cb release,
                void *udata);
  int (*file)(hr__exchange_t *ex, int fd, uint64_t offset, uint64_t n,
              hr_file_release_cb release, void *udata);
  /* The end of a body of unknown length (h1: the last chunk). */
  int (*end)(hr__exchange_t *ex);
  /* 100 Continue (RFC 9110 §15.2.1): the client may send its body. */
  int (*send_continue)(hr__exchange_t *ex);
  /* The server's own answer with `status`, in place of the handler's (a
   * typed parameter that names no resource: 404; no context: 503). */
  void (*answer_status)(hr__exchange_t *ex, int status);
  /* A request the server refuses with `status` (a 4xx or 503; `reason`
   * for the log) in place of anything else: h1 answers and closes the
   * connection (RFC 9112 §9.6: its framing is in doubt); h2 answers on
   * the stream, or resets it when a response has begun. */
  void (*fail)(hr__exchange_t *ex, int status, const char *reason);
  /* The response is complete: the protocol goes on (h1: the next
   * pipelined request). */
  void (*done)(hr__exchange_t *ex);
  /* The response cannot be framed any more: it is complete as far as the
   * handler goes, and h1 closes the connection. */
  void (*lost)(hr__exchange_t *ex);
  /* A streamed response cut short (part of a piece may be queued): the
   * handler still ends it; h1 closes the connection. */
  void (*cut)(hr__exchange_t *ex);
  /* Bytes of output queued and not yet written, against the high-water
   * mark (hr_response_write answers HR_EAGAIN above it). */
  size_t (*queued)(const hr__exchange_t *ex);
  /* New output or a state change: process it on the next loop turn. */
  void (*kick)(hr__exchange_t *ex);
  /* The handler resumed its paused body (hr_request_body_resume): what
   * was held back is delivered, and reading goes on, from the next loop
   * turn (never inside the call). */
  void (*resume_body)(hr__exchange_t *ex);
  /* What the exchange knows of the connection that carries it: the
   * client's address (a PROXY header's, else the socket peer's; 0 or a
   * libuv error), its transport (TLS facts), and whether the connection
   * is inside its processing step (the read-side section that matched the
   * request is still open). */
  int (*peer)(const hr__exchange_t *ex, struct sockaddr *addr, int *len);
  hr__transport_t *(*transport)(const hr__exchange_t *ex);
  int (*stepping)(const hr__exchange_t *ex);
  /* The exchange is being freed, attached or not: the protocol lets go of
   * what it tied to it (h1: a 101 stream never handed over).  May be
   * NULL. */
  void (*release)(hr__exchange_t *ex);
} hr__proto_t;

/* HTTP/1.1 (RFC 9112), h1_proto.c. */
extern const hr__proto_t hr__h1_proto;
/* HTTP/2 (RFC 9113), h2_proto.c: an exchange is a stream. */
extern const hr__proto_t hr__h2_proto;

#endif /* HR_SERVER_PROTO_H */
