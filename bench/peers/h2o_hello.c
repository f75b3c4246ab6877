/* SPDX-License-Identifier: MIT */
/*
 * h2o_hello: the libh2o peer of bench/run.sh --compare h2o.  It answers
 * GET /hello/<name> with what examples/hello.c sends: 200, Content-Type
 * text/plain, a Content-Length and the body "Hello, <name>" (the name as it
 * appears in the request target, not percent-decoded, without the query).
 * libh2o adds its own Date field and, unlike hello, always a "Connection:
 * keep-alive" (24 bytes more per response); the Server field is left out, as
 * hello sends none.  Any other path gets 404 and another method 405.  It runs
 * libh2o's own event loop (the "evloop" flavour, epoll) on 127.0.0.1:PORT,
 * one process per worker (SO_REUSEPORT listeners; the workers end with the
 * first process), and keeps idle persistent connections open for 300 s.
 * With --tls CERT KEY (PEM files) every connection is TLS (1.2 or 1.3,
 * hello's ECDHE+AEAD ciphers) and ALPN offers "h2" and "http/1.1": the
 * HTTP/2 peer of bench/run.sh --h2.  Without it, cleartext connections are
 * HTTP/1.1 (or h2c by Upgrade).
 *
 *   h2o_hello [--tls CERT KEY] PORT [WORKERS]
 */
#define _GNU_SOURCE
#define H2O_USE_EPOLL 1

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#define IDLE_TIMEOUT_MS 300000

static h2o_globalconf_t config;
static h2o_context_t ctx;
static h2o_accept_ctx_t accept_ctx;

static int on_req(h2o_handler_t *self, h2o_req_t *req) {
  static const char prefix[] = "/hello/", hello[] = "Hello, ";
  const size_t plen = sizeof(prefix) - 1, hlen = sizeof(hello) - 1;
  size_t end = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
  const char *name = req->path.base + plen;
  char *body;

  (void)self;
  /* /hello/:name: one non-empty segment. */
  if (end <= plen || memcmp(req->path.base, prefix, plen) != 0 ||
      memchr(name, '/', end - plen) != NULL) {
    h2o_send_error_404(req, "Not Found", "Not Found", 0);
    return 0;
  }
  if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
      !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
    h2o_send_error_405(req, "Method Not Allowed", "Method Not Allowed", 0);
    return 0;
  }
  body = h2o_mem_alloc_pool(&req->pool, hlen + end - plen);
  memcpy(body, hello, hlen);
  memcpy(body + hlen, name, end - plen);

  req->res.status = 200;
  req->res.reason = "OK";
  req->res.content_length = hlen + end - plen;
  h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, "Content-Type",
                 H2O_STRLIT("text/plain"));
  h2o_send_inline(req, body, req->res.content_length);
  return 0;
}

static void on_accept(h2o_socket_t *listener, const char *err) {
  h2o_socket_t *sock;
  int i;

  if (err != NULL)
    return;
  /* A few per wake-up: h2o_evloop_socket_accept returns NULL on EAGAIN. */
  for (i = 0; i < 16 && (sock = h2o_evloop_socket_accept(listener)) != NULL; i++)
    h2o_accept(&accept_ctx, sock);
}

/* The TLS context of --tls: certificate chain and key from PEM files,
 * TLS 1.2 and 1.3, ALPN h2 then http/1.1.  NULL (and a message) on error. */
static SSL_CTX *tls_context(const char *cert, const char *key) {
  /* hello's TLS 1.2 list (src/server/tlsctx.c): ECDHE with AEAD only. */
  static const char ciphers[] =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
      "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
      "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

  if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, ciphers) != 1 ||
      SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    fprintf(stderr, "h2o_hello: TLS setup failed: %s\n",
            ERR_reason_error_string(ERR_get_error()));
    SSL_CTX_free(ctx);
    return NULL;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
  h2o_ssl_register_alpn_protocols(ctx, h2o_alpn_protocols);
  return ctx;
}

static int listen_on(int port) {
  struct sockaddr_in addr;
  int fd, on = 1;

  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);
  if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
      bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 4096) != 0) {
    perror("h2o_hello: listen");
    return -1;
  }
  return fd;
}

int main(int argc, char **argv) {
  const char *cert = NULL, *key = NULL;
  int port, workers;
  h2o_hostconf_t *host;
  h2o_handler_t *handler;
  int fd, i;

  if (argc > 3 && strcmp(argv[1], "--tls") == 0) {
    cert = argv[2];
    key = argv[3];
    argc -= 3;
    argv += 3;
  }
  port = argc > 1 ? atoi(argv[1]) : 0;
  workers = argc > 2 ? atoi(argv[2]) : 1;
  if (argc < 2 || argc > 3 || port <= 0 || port > 65535 || workers < 1 || workers > 256) {
    fprintf(stderr, "usage: h2o_hello [--tls CERT KEY] PORT [WORKERS]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  for (i = 1; i < workers; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("h2o_hello: fork");
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM); /* end with the first process */
      break;
    }
  }

  h2o_config_init(&config);
  config.server_name = h2o_iovec_init(H2O_STRLIT("")); /* no Server field */
  config.http1.req_timeout = IDLE_TIMEOUT_MS;
  config.http2.idle_timeout = IDLE_TIMEOUT_MS;
  host = h2o_config_register_host(&config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
  handler = h2o_create_handler(h2o_config_register_path(host, "/", 0), sizeof(*handler));
  handler->on_req = on_req;

  h2o_context_init(&ctx, h2o_evloop_create(), &config);
  accept_ctx.ctx = &ctx;
  accept_ctx.hosts = config.hosts;
  if (cert != NULL && (accept_ctx.ssl_ctx = tls_context(cert, key)) == NULL)
    return 1;
  if ((fd = listen_on(port)) < 0)
    return 1;
  h2o_socket_read_start(h2o_evloop_socket_create(ctx.loop, fd, H2O_SOCKET_FLAG_DONT_READ),
                        on_accept);
  fprintf(stderr, "h2o_hello: listening on 127.0.0.1:%d%s\n", port, cert != NULL ? " (TLS)" : "");
  while (h2o_evloop_run(ctx.loop, INT32_MAX) == 0)
    ;
  return 1;
}
