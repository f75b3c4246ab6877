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
 *
 *   idle_client [--tls] PORT N [PATH]      (PATH defaults to /hello/x)
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

#include <openssl/err.h>
#include <openssl/ssl.h>

static char failure[256]; /* the first failure */
static SSL_CTX *tls_ctx;  /* with --tls */
static SSL **tls_conns;   /* with --tls: the SSL of each connection kept */

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

/* Opens connection number `i`, makes the request and reads the response;
 * returns the descriptor, or -1 (closed; the failure noted).  With --tls,
 * *sslp receives the connection's SSL (left NULL on failure). */
static int one_request_on(const struct sockaddr_in *addr, const char *req, size_t req_len, int i,
                          SSL **sslp) {
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
    if (SSL_write(*sslp, req, (int)req_len) != (int)req_len)
      return fail(fd, i, "TLS write", errno ? errno : EPROTO);
  } else if (send(fd, req, req_len, MSG_NOSIGNAL) != (ssize_t)req_len) {
    return fail(fd, i, "send", errno);
  }
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

static int one_request(const struct sockaddr_in *addr, const char *req, size_t req_len, int i,
                       SSL **sslp) {
  int fd;
  *sslp = NULL;
  errno = 0;
  fd = one_request_on(addr, req, req_len, i, sslp);
  if (fd < 0 && *sslp != NULL) {
    SSL_free(*sslp);
    *sslp = NULL;
  }
  ERR_clear_error();
  return fd;
}

int main(int argc, char **argv) {
  int tls = argc > 1 && strcmp(argv[1], "--tls") == 0;
  int port, n;
  const char *path;
  struct sockaddr_in addr;
  struct pollfd *fds;
  struct rlimit rl;
  char req[1024], line[64];
  int req_len, ok = 0, still_open = 0;

  argv += tls;
  argc -= tls;
  port = argc > 2 ? atoi(argv[1]) : 0;
  n = argc > 2 ? atoi(argv[2]) : 0;
  path = argc > 3 ? argv[3] : "/hello/x";
  if (argc < 3 || argc > 4 || port <= 0 || port > 65535 || n < 1 || n > 1000000) {
    fprintf(stderr, "usage: idle_client [--tls] PORT N [PATH]\n");
    return 2;
  }
  if (tls && ((tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
              (tls_conns = calloc((size_t)n, sizeof(*tls_conns))) == NULL)) {
    fprintf(stderr, "idle_client: cannot set up TLS\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a TLS write to a closed connection: an error */
  req_len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
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
    int fd = one_request(&addr, req, (size_t)req_len, i, &ssl);
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
    still_open += fds[i].revents == 0;
  printf("open %d\n", still_open);
  fflush(stdout);

  while (fgets(line, sizeof(line), stdin) != NULL)
    ;
  return ok == n && still_open == n ? 0 : 1;
}
