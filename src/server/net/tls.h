/* SPDX-License-Identifier: MIT */
/*
 * The TLS transport (tls.c) and its per-loop state.  See transport.h for
 * the operations and events, tlsctx.h for the contexts it starts from.
 */
#ifndef HR_SERVER_TLS_H
#define HR_SERVER_TLS_H

#include <openssl/ssl.h>
#include <uv.h>

#include "server/net/transport.h"
#include "util/mem.h"

typedef struct hr__tls_s hr__tls_t;

/* One per loop: scratch buffers every TLS connection of the loop reads
 * ciphertext through and writes it from, and the list of connections with
 * work to do on the next loop turn (one idle handle). */
typedef struct hr__tlsloop_s {
  uv_idle_t idle;
  hr__tls_t *pump_head;
  hr__mem_t *mem;
  void *owner;           /* the worker, for its close callback */
  char in[16384 + 512];  /* one record with its header and tag */
  /* Ciphertext OpenSSL wrote during one call, written to the socket in one
   * go when the call returns (a handshake flight, tickets and a response
   * leave in one sendmsg instead of one each). */
  char out[2 * (16384 + 512)];
  size_t out_len;
  hr__tls_t *out_owner;  /* whose bytes `out` holds, or NULL */
} hr__tlsloop_t;

void hr__tlsloop_init(hr__tlsloop_t *lp, uv_loop_t *loop, hr__mem_t *mem,
                      void *owner);
void hr__tlsloop_run(uv_idle_t *h);

/* The TLS transport's size, its TCP transport included. */
size_t hr__tls_size(void);
/* Makes a TLS transport at `t` over the connected socket `fd`, with `ssl`
 * (a server-side SSL; both become the transport's on success).  With
 * `raw`, what is read goes to the owner as it is until ops->begin (a
 * PROXY protocol header comes first).  Returns 0 or a libuv error (the
 * caller still owns fd and ssl). */
int hr__tls_init(hr__transport_t *t, uv_loop_t *loop, int fd, SSL *ssl,
                 hr__tlsloop_t *lp, int raw, const hr__transport_events_t *ev,
                 void *owner);

#endif /* HR_SERVER_TLS_H */
