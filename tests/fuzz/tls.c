/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the server side of a TLS connection: arbitrary
 * bytes, as a client would send them, reach a TLS connection of a server
 * over a socketpair (the TLS transport over the TCP one, OpenSSL's record
 * layer and handshake, then HTTP/1.1 if a handshake could ever complete).
 * No input may crash, leak or hang the loop; whatever the server writes
 * back is read and dropped.  The certificate is made once, at start.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hroute.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "server/internal.h"
#include "server/net/tlsctx.h"
#include "tlsfx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static hr_router_t *router;
static hr_server_t *server;
static hr__worker_t *worker;
static SSL_CTX *ctx;

static void h_text(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "ok", 2);
}

static void setup(void) {
  tf_cert_t cert;
  hr_tls_options_t o;
  uv_loop_init(&loop);
  hr_router_new(&router, NULL);
  hr_router_add(router, "GET", "/t/:x", h_text, NULL, NULL);
  hr_server_new(&server, router, NULL);
  hr__server_attach_virtual(server, &loop);
  worker = hr__server_worker(server, 0);
  if (tf_cert_make(&cert, "localhost") != 0) abort();
  hr_tls_options_init(&o);
  o.cert_pem = cert.cert_pem;
  o.cert_pem_len = cert.cert_len;
  o.key_pem = cert.key_pem;
  o.key_pem_len = cert.key_len;
  if (hr__tlsctx_build(&o, NULL, &ctx) != 0) abort();
  tf_cert_free(&cert);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int sv[2], i;
  char drop[4096];
  SSL *ssl;
  hr__conn_t *c;
  if (server == NULL) setup();
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  ssl = SSL_new(ctx);
  c = ssl != NULL ? hr__vconn_new_tls(worker, sv[0], ssl) : NULL;
  if (c == NULL) {
    SSL_free(ssl);
    close(sv[0]);
    close(sv[1]);
    return 0;
  }
  /* The whole input, then the end of it; the server answers as it goes. */
  {
    size_t off = 0;
    for (i = 0; i < 1000 && off < size; i++) {
      ssize_t n = write(sv[1], data + off, size - off);
      if (n > 0) off += (size_t)n;
      uv_run(&loop, UV_RUN_NOWAIT);
      while (read(sv[1], drop, sizeof drop) > 0)
        ;
    }
  }
  shutdown(sv[1], SHUT_WR);
  /* The loop frees the connection once it closed: it is gone when the
   * worker counts none. */
  for (i = 0; i < 50 && worker->nconns > 0; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    while (read(sv[1], drop, sizeof drop) > 0)
      ;
  }
  if (worker->nconns > 0 && !hr__vconn_closed(c)) hr__conn_close(c);
  for (i = 0; i < 5; i++) uv_run(&loop, UV_RUN_NOWAIT); /* close callbacks */
  close(sv[1]);
  return 0;
}
