/* SPDX-License-Identifier: MIT */
/*
 * idle_client: the client of bench/run.sh's "idle" measurement (server
 * memory per idle persistent connection).  It opens N connections to
 * 127.0.0.1:PORT one after the other, sends one "GET PATH HTTP/1.1" with a
 * Host field on each and reads its whole response (a 200 with a
 * Content-Length, nothing more), then keeps every connection open and idle.
 * It prints "ready OK FAILED" (and the first failure, if any) and waits for
 * a line on standard input, meanwhile the caller reads the server's memory;
 * then it checks that each connection it kept is still open (the server
 * neither closed it nor sent anything), prints "open K", and waits for
 * standard input to end before it closes them all.  Exit status 0 when all N
 * got their response and stayed open.  It raises its own RLIMIT_NOFILE.
 * With --tls every connection first makes a TLS handshake (OpenSSL's
 * defaults: TLS 1.3 when the server has it; SNI "localhost"; the
 * certificate is not checked) and the request and response go over it; the
 * "open" check is the same (no byte, not even a TLS record, may arrive).
 * With --h2 each connection speaks HTTP/2 (nghttp2): with --tls, "h2" by
 * ALPN (a server that selects anything else fails the connection), without,
 * cleartext h2 with prior knowledge; the request is one GET stream, read to
 * its end (status 200, stream closed without error), and the server's
 * SETTINGS are acknowledged.  An HTTP/2 server may still send frames to an
 * idle connection, so the "open" check reads what has arrived and counts
 * the connection open unless it ended, failed to parse or brought a GOAWAY.
 *
 *   idle_client [--tls] [--h2] PORT N [PATH]      (PATH defaults to /hello/x)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

static char failure[256]; /* the first failure */
static SSL_CTX *tls_ctx;  /* with --tls */
static SSL **tls_conns;   /* with --tls: the SSL of each connection kept */

/* With --h2: one connection's HTTP/2 state, kept with the connection. */
typedef struct h2_conn_s {
  int fd;
  SSL *ssl;                 /* NULL for h2c */
  nghttp2_session *session;
  int32_t stream_id;        /* the request's stream */
  int status;               /* its :status, 0 until it arrives */
  int closed;               /* the stream ended ... */
  uint32_t error_code;      /* ... with this code (0: NO_ERROR) */
  int goaway;               /* the server sent GOAWAY */
} h2_conn_t;

static h2_conn_t *h2_conns; /* with --h2: each connection kept */

/* Reads from connection `fd` (through `ssl` when not NULL) as read() does:
 * > 0 bytes, 0 at the end (a close_notify, or EOF without one), -1 on an
 * error. */
static ssize_t conn_read(int fd, SSL *ssl, char *buf, size_t len) {
  int n;
  if (ssl == NULL)
    return read(fd, buf, len);
  n = SSL_read(ssl, buf, (int)len);
  if (n > 0)
    return n;
  switch (SSL_get_error(ssl, n)) {
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL: return errno == 0 ? 0 : -1;
    case SSL_ERROR_SSL:
      if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        return 0;
      errno = EPROTO;
      return -1;
    default: errno = EPROTO; return -1;
  }
}

/* Notes the failure of connection `i` (with `err`, an errno value or 0),
 * closes `fd` and returns -1. */
static int fail(int fd, int i, const char *what, int err) {
  if (failure[0] == '\0')
    snprintf(failure, sizeof(failure), "connection %d: %s%s%s", i, what,
             err ? ": " : "", err ? strerror(err) : "");
  if (fd >= 0)
    close(fd);
  return -1;
}

/* Writes all of buf to connection `fd` (through `ssl` when not NULL);
 * returns 0, or -1 with errno set. */
static int conn_write(int fd, SSL *ssl, const void *buf, size_t len) {
  if (ssl != NULL) {
    if (len > 0 && SSL_write(ssl, buf, (int)len) != (int)len) {
      errno = errno ? errno : EPROTO;
      return -1;
    }
    return 0;
  }
  return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* ---- HTTP/2 (--h2) ------------------------------------------------------ */

static ssize_t h2_send(nghttp2_session *session, const uint8_t *data, size_t len, int flags,
                       void *udata) {
  h2_conn_t *c = udata;
  (void)session;
  (void)flags;
  return conn_write(c->fd, c->ssl, data, len) == 0 ? (ssize_t)len : NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int h2_on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *udata) {
  h2_conn_t *c = udata;
  (void)session;
  (void)flags;
  if (frame->hd.type == NGHTTP2_HEADERS && frame->hd.stream_id == c->stream_id &&
      namelen == 7 && memcmp(name, ":status", 7) == 0 && valuelen == 3)
    c->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
  return 0;
}

static int h2_on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *udata) {
  h2_conn_t *c = udata;
  (void)session;
  if (frame->hd.type == NGHTTP2_GOAWAY)
    c->goaway = 1;
  return 0;
}

static int h2_on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                              void *udata) {
  h2_conn_t *c = udata;
  (void)session;
  if (stream_id == c->stream_id) {
    c->closed = 1;
    c->error_code = error_code;
  }
  return 0;
}

static nghttp2_session_callbacks *h2_callbacks;

/* Feeds `len` bytes read from the connection to its session and sends what
 * that queued (acknowledgements); returns 0 or -1. */
static int h2_feed(h2_conn_t *c, const char *buf, size_t len) {
  if (nghttp2_session_mem_recv(c->session, (const uint8_t *)buf, len) != (ssize_t)len)
    return -1;
  return nghttp2_session_send(c->session) == 0 ? 0 : -1;
}

/* Makes the request of connection `i` over HTTP/2 on c->fd (c->ssl) and
 * reads its response to the stream's end; returns 0 or -1 (failure noted,
 * nothing closed). */
static int h2_request(h2_conn_t *c, const char *path, int i) {
  char buf[8192];
  ssize_t n;
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
#define H2_NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}
  const nghttp2_nv head[] = {H2_NV(":method", "GET"), H2_NV(":scheme", c->ssl ? "https" : "http"),
                             H2_NV(":authority", "localhost"), H2_NV(":path", path)};
#undef H2_NV

  if (nghttp2_session_client_new(&c->session, h2_callbacks, c) != 0)
    return fail(-1, i, "nghttp2_session_client_new", ENOMEM);
  if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1) != 0 ||
      (c->stream_id = nghttp2_submit_request(c->session, NULL, head, 4, NULL, NULL)) < 0 ||
      nghttp2_session_send(c->session) != 0)
    return fail(-1, i, "sending the request (HTTP/2)", errno);
  while (!c->closed) {
    if ((n = conn_read(c->fd, c->ssl, buf, sizeof(buf))) <= 0)
      return fail(-1, i, n == 0 ? "closed before the response's end" : "read", n == 0 ? 0 : errno);
    if (h2_feed(c, buf, (size_t)n) != 0)
      return fail(-1, i, "HTTP/2 framing error", 0);
  }
  if (c->error_code != NGHTTP2_NO_ERROR)
    return fail(-1, i, "stream reset by the server", 0);
  if (c->status != 200)
    return fail(-1, i, "status is not 200", 0);
  if (c->goaway)
    return fail(-1, i, "GOAWAY after one request", 0);
  return 0;
}

/* The "open" check of an HTTP/2 connection whose poll said `revents`:
 * reads what arrived (without waiting) and returns 1 unless the connection
 * ended, failed or got a GOAWAY. */
static int h2_still_open(h2_conn_t *c, short revents) {
  char buf[8192];
  ssize_t n;

  if (revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL))
    return 0;
  while ((revents & POLLIN) || (c->ssl != NULL && SSL_pending(c->ssl) > 0)) {
    struct pollfd p = {c->fd, POLLIN, 0};
    if ((n = conn_read(c->fd, c->ssl, buf, sizeof(buf))) <= 0 || h2_feed(c, buf, (size_t)n) != 0)
      return 0;
    revents = poll(&p, 1, 0) > 0 ? p.revents : 0;
  }
  return !c->goaway;
}

/* Opens connection number `i`, makes the request and reads the response;
 * returns the descriptor, or -1 (closed; the failure noted).  With --tls,
 * *sslp receives the connection's SSL (left NULL on failure). */
static int one_request_on(const struct sockaddr_in *addr, const char *req, size_t req_len, int i,
                          SSL **sslp, h2_conn_t *h2c) {
  char buf[8192], *end, *cl;
  struct timeval tv = {10, 0};
  size_t have = 0, head, want;
  ssize_t n;
  int fd;

  if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
    return fail(fd, i, "socket", errno);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
      connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) != 0)
    return fail(fd, i, "connect", errno);
  if (tls_ctx != NULL) {
    if ((*sslp = SSL_new(tls_ctx)) == NULL || SSL_set_fd(*sslp, fd) != 1 ||
        SSL_set_tlsext_host_name(*sslp, "localhost") != 1)
      return fail(fd, i, "SSL_new", ENOMEM);
    if (SSL_connect(*sslp) != 1)
      return fail(fd, i, "TLS handshake", errno ? errno : EPROTO);
  }
  if (h2c != NULL) { /* req is the path */
    const unsigned char *alpn = NULL;
    unsigned alpn_len = 0;
    if (*sslp != NULL) {
      SSL_get0_alpn_selected(*sslp, &alpn, &alpn_len);
      if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0)
        return fail(fd, i, "the server did not select h2 by ALPN", 0);
    }
    h2c->fd = fd;
    h2c->ssl = *sslp;
    if (h2_request(h2c, req, i) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  if (conn_write(fd, *sslp, req, req_len) != 0)
    return fail(fd, i, *sslp != NULL ? "TLS write" : "send", errno ? errno : EPROTO);
  for (;;) { /* the header section */
    if ((n = conn_read(fd, *sslp, buf + have, sizeof(buf) - 1 - have)) <= 0)
      return fail(fd, i, n == 0 ? "closed before the response" : "read", n == 0 ? 0 : errno);
    have += (size_t)n;
    buf[have] = '\0';
    if ((end = strstr(buf, "\r\n\r\n")) != NULL)
      break;
    if (have == sizeof(buf) - 1)
      return fail(fd, i, "header section too long", 0);
  }
  head = (size_t)(end - buf) + 4;
  *end = '\0';
  if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0)
    return fail(fd, i, "status is not 200", 0);
  for (cl = buf; (cl = strchr(cl, '\n')) != NULL && strncasecmp(++cl, "content-length:", 15) != 0;)
    ;
  if (cl == NULL)
    return fail(fd, i, "no Content-Length", 0);
  want = head + strtoul(cl + 15, NULL, 10);
  while (have < want) { /* the body; it may be longer than buf */
    size_t room = want - have < sizeof(buf) ? want - have : sizeof(buf);
    if ((n = conn_read(fd, *sslp, buf, room)) <= 0)
      return fail(fd, i, n == 0 ? "closed within the body" : "read", n == 0 ? 0 : errno);
    have += (size_t)n;
  }
  if (have > want || (*sslp != NULL && SSL_pending(*sslp) > 0))
    return fail(fd, i, "more bytes than one response", 0);
  return fd;
}

/* One connection and its request (one_request_on); with --h2, *h2c keeps
 * its session (freed on failure). */
static int one_request(const struct sockaddr_in *addr, const char *req, size_t req_len, int i,
                       SSL **sslp, h2_conn_t *h2c) {
  int fd;
  *sslp = NULL;
  errno = 0;
  fd = one_request_on(addr, req, req_len, i, sslp, h2c);
  if (fd < 0 && h2c != NULL) {
    nghttp2_session_del(h2c->session);
    memset(h2c, 0, sizeof(*h2c));
  }
  if (fd < 0 && *sslp != NULL) {
    SSL_free(*sslp);
    *sslp = NULL;
  }
  ERR_clear_error();
  return fd;
}

/* --h2: the session callbacks, and --tls's ALPN offer of h2 alone. */
static int h2_setup(int n) {
  static const unsigned char alpn[] = "\x02h2";
  if ((h2_conns = calloc((size_t)n, sizeof(*h2_conns))) == NULL ||
      nghttp2_session_callbacks_new(&h2_callbacks) != 0)
    return -1;
  nghttp2_session_callbacks_set_send_callback(h2_callbacks, h2_send);
  nghttp2_session_callbacks_set_on_header_callback(h2_callbacks, h2_on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(h2_callbacks, h2_on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(h2_callbacks, h2_on_stream_close);
  return tls_ctx == NULL || SSL_CTX_set_alpn_protos(tls_ctx, alpn, sizeof(alpn) - 1) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  int tls = 0, h2 = 0;
  int port, n;
  const char *path;
  struct sockaddr_in addr;
  struct pollfd *fds;
  struct rlimit rl;
  char req[1024], line[64];
  int req_len, ok = 0, still_open = 0;

  for (; argc > 1 && strncmp(argv[1], "--", 2) == 0; argc--, argv++) {
    if (strcmp(argv[1], "--tls") == 0)
      tls = 1;
    else if (strcmp(argv[1], "--h2") == 0)
      h2 = 1;
    else
      break;
  }
  port = argc > 2 ? atoi(argv[1]) : 0;
  n = argc > 2 ? atoi(argv[2]) : 0;
  path = argc > 3 ? argv[3] : "/hello/x";
  if (argc < 3 || argc > 4 || port <= 0 || port > 65535 || n < 1 || n > 1000000) {
    fprintf(stderr, "usage: idle_client [--tls] [--h2] PORT N [PATH]\n");
    return 2;
  }
  if (tls && ((tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
              (tls_conns = calloc((size_t)n, sizeof(*tls_conns))) == NULL)) {
    fprintf(stderr, "idle_client: cannot set up TLS\n");
    return 2;
  }
  if (h2 && h2_setup(n) != 0) {
    fprintf(stderr, "idle_client: cannot set up HTTP/2\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a TLS write to a closed connection: an error */
  req_len = h2 ? snprintf(req, sizeof(req), "%s", path) /* the :path */
               : snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
  if (req_len < 0 || (size_t)req_len >= sizeof(req) || (fds = calloc((size_t)n, sizeof(*fds))) == NULL)
    return 2;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
    if (rl.rlim_max < (rlim_t)n + 64)
      rl.rlim_max = (rlim_t)n + 64; /* only root may */
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      fprintf(stderr, "idle_client: cannot allow %d open files: %s\n", n + 64, strerror(errno));
      return 1;
    }
  }
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);

  for (int i = 0; i < n; i++) {
    SSL *ssl;
    int fd = one_request(&addr, req, (size_t)req_len, i, &ssl, h2 ? &h2_conns[ok] : NULL);
    if (fd >= 0) {
      if (tls)
        tls_conns[ok] = ssl;
      fds[ok].fd = fd;
      fds[ok++].events = POLLIN | POLLRDHUP;
    }
  }
  printf("ready %d %d%s%s\n", ok, n - ok, failure[0] ? " first failure: " : "", failure);
  fflush(stdout);

  if (fgets(line, sizeof(line), stdin) == NULL)
    return 1;
  if (poll(fds, (nfds_t)ok, 0) < 0)
    return 1;
  for (int i = 0; i < ok; i++)
    still_open += h2 ? h2_still_open(&h2_conns[i], fds[i].revents) : fds[i].revents == 0;
  printf("open %d\n", still_open);
  fflush(stdout);

  while (fgets(line, sizeof(line), stdin) != NULL)
    ;
  return ok == n && still_open == n ? 0 : 1;
}
