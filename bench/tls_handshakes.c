/* SPDX-License-Identifier: MIT */
/*
 * tls_handshakes: the client of bench/run.sh's handshake-rate runs (--tls).
 * For SECONDS it opens a new TCP connection to 127.0.0.1:PORT, makes a TLS
 * handshake, sends one
 *   GET PATH HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n
 * reads the whole response (to the server's close), sends its own
 * close_notify and closes; then again.  MODE:
 *   1.3          TLS 1.3 only, a full handshake each time
 *   1.2          TLS 1.2 only (ECDHE + AEAD ciphers), full handshakes
 *   1.3-resume   TLS 1.3, each connection offers the session (ticket) of the
 *   1.2-resume   previous one (SSL_get1_session / SSL_set_session); the first
 *                of each process is a full handshake
 * The client offers SNI "localhost" and ALPN "http/1.1", as a browser would,
 * and with -c verifies the server's certificate against CAFILE.  With -n P
 * it runs P processes (one thread each; the caller pins them) and adds up
 * their counts.  It prints one line:
 *   handshakes N resumed R failed F unclean U seconds S rate X
 * N connections completed (handshake, 200 response, close), R of them
 * resumed a session (SSL_session_reused), F failed (connect, handshake or
 * response; the first failure goes to standard error), U completed but
 * ended without the server's close_notify, X = N / S handshakes per second.
 * Exit status 0 when F is 0.
 *
 *   tls_handshakes [-n PROCS] [-c CAFILE] [-p PATH] PORT MODE SECONDS
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

/* TLS 1.2: ECDHE key exchange and AEAD ciphers, the list hroute serves by
 * default (OpenSSL 3.0 has no "AEAD" alias) and bench/run.sh gives nginx. */
static const char tls12_ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

typedef struct counts_s {
  long done, resumed, failed, unclean;
  char first_failure[200];
} counts_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_failure(counts_t *c, const char *what) {
  unsigned long e = ERR_peek_error();
  c->failed++;
  if (c->first_failure[0] == '\0') {
    snprintf(c->first_failure, sizeof(c->first_failure), "%s%s%s%s%s", what,
             e ? ": " : "", e ? ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "?" : "",
             errno && !e ? ": " : "", errno && !e ? strerror(errno) : "");
  }
  ERR_clear_error();
}

/* One connection, counted in c as completed or failed. */
static void one(SSL_CTX *ctx, const struct sockaddr_in *addr, const char *req, size_t req_len,
                SSL_SESSION **sess, int resume, counts_t *c) {
  char buf[4096], scratch[4096];
  size_t have = 0;
  int fd, n, clean = 0, one_flag = 1;
  struct timeval tv = {10, 0};
  SSL *ssl = NULL;

  errno = 0;
  if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
    note_failure(c, "socket");
    return;
  }
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one_flag, sizeof(one_flag));
  if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) != 0) {
    note_failure(c, "connect");
    goto out;
  }
  if ((ssl = SSL_new(ctx)) == NULL || SSL_set_fd(ssl, fd) != 1 ||
      SSL_set_tlsext_host_name(ssl, "localhost") != 1) {
    note_failure(c, "SSL_new");
    goto out;
  }
  if (resume && *sess != NULL) SSL_set_session(ssl, *sess);
  if (SSL_connect(ssl) != 1) {
    note_failure(c, "handshake");
    goto out;
  }
  if (SSL_write(ssl, req, (int)req_len) != (int)req_len) {
    note_failure(c, "write");
    goto out;
  }
  for (;;) {
    int full = have == sizeof(buf) - 1; /* then keep the start only */
    n = full ? SSL_read(ssl, scratch, (int)sizeof(scratch))
             : SSL_read(ssl, buf + have, (int)(sizeof(buf) - 1 - have));
    if (n > 0) {
      if (!full) have += (size_t)n;
      continue;
    }
    switch (SSL_get_error(ssl, n)) {
      case SSL_ERROR_ZERO_RETURN: clean = 1; break; /* close_notify */
      case SSL_ERROR_SYSCALL:     /* EOF without close_notify (or an error) */
      case SSL_ERROR_SSL:
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
            (ERR_peek_error() == 0 && errno == 0)) {
          ERR_clear_error();
          break;
        }
        note_failure(c, "read");
        goto out;
      default: note_failure(c, "read"); goto out;
    }
    break;
  }
  buf[have] = '\0';
  if (have < 13 || strncmp(buf, "HTTP/1.1 200 ", 13) != 0) {
    errno = 0;
    note_failure(c, "response is not a 200");
    goto out;
  }
  c->done++;
  if (!clean) c->unclean++;
  if (SSL_session_reused(ssl)) c->resumed++;
  if (resume) {
    SSL_SESSION *next = SSL_get1_session(ssl);
    if (next != NULL) {
      SSL_SESSION_free(*sess);
      *sess = next;
    }
  }
  /* Our close_notify (also marks the session as properly ended, so that
   * OpenSSL keeps it resumable).  The server may have gone: ignore errors. */
  if (clean) SSL_shutdown(ssl);
  ERR_clear_error();
out:
  if (ssl != NULL) SSL_free(ssl);
  close(fd);
}

static void run(int port, int mode12, int resume, double seconds, const char *cafile,
                const char *path, counts_t *c) {
  static const unsigned char alpn[] = "\x08http/1.1";
  struct sockaddr_in addr;
  SSL_SESSION *sess = NULL;
  SSL_CTX *ctx;
  char req[1024];
  int req_len;
  double end;

  memset(c, 0, sizeof(*c));
  req_len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                     path);
  ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL || req_len <= 0 || (size_t)req_len >= sizeof(req)) {
    note_failure(c, "SSL_CTX_new");
    return;
  }
  SSL_CTX_set_min_proto_version(ctx, mode12 ? TLS1_2_VERSION : TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx, mode12 ? TLS1_2_VERSION : TLS1_3_VERSION);
  if (mode12) SSL_CTX_set_cipher_list(ctx, tls12_ciphers);
  SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF); /* we keep the session */
  if (cafile != NULL) {
    if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
      note_failure(c, "cannot load the CA file");
      SSL_CTX_free(ctx);
      return;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  }
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);

  end = now_s() + seconds;
  while (now_s() < end) one(ctx, &addr, req, (size_t)req_len, &sess, resume, c);
  SSL_SESSION_free(sess);
  SSL_CTX_free(ctx);
}

int main(int argc, char **argv) {
  const char *cafile = NULL, *path = "/hello/x", *mode;
  int procs = 1, opt, port, mode12, resume, pipes[64], status = 0;
  double seconds, t0, t1;
  counts_t total, one_c;

  while ((opt = getopt(argc, argv, "n:c:p:")) != -1) {
    switch (opt) {
      case 'n': procs = atoi(optarg); break;
      case 'c': cafile = optarg; break;
      case 'p': path = optarg; break;
      default: goto usage;
    }
  }
  if (argc - optind != 3 || procs < 1 || procs > 64) goto usage;
  port = atoi(argv[optind]);
  mode = argv[optind + 1];
  seconds = atof(argv[optind + 2]);
  if (port <= 0 || port > 65535 || seconds <= 0) goto usage;
  if (strcmp(mode, "1.3") == 0 || strcmp(mode, "1.3-resume") == 0)
    mode12 = 0;
  else if (strcmp(mode, "1.2") == 0 || strcmp(mode, "1.2-resume") == 0)
    mode12 = 1;
  else
    goto usage;
  resume = strstr(mode, "-resume") != NULL;
  signal(SIGPIPE, SIG_IGN);

  t0 = now_s();
  for (int i = 0; i < procs; i++) { /* each child reports its counts through a pipe */
    int p[2];
    pid_t pid;
    if (pipe(p) != 0 || (pid = fork()) < 0) {
      perror("tls_handshakes");
      return 1;
    }
    if (pid == 0) {
      close(p[0]);
      run(port, mode12, resume, seconds, cafile, path, &one_c);
      if (write(p[1], &one_c, sizeof(one_c)) != (ssize_t)sizeof(one_c)) _exit(1);
      _exit(0);
    }
    close(p[1]);
    pipes[i] = p[0];
  }
  memset(&total, 0, sizeof(total));
  for (int i = 0; i < procs; i++) {
    if (read(pipes[i], &one_c, sizeof(one_c)) != (ssize_t)sizeof(one_c)) {
      fprintf(stderr, "tls_handshakes: a client process failed\n");
      status = 1;
      continue;
    }
    total.done += one_c.done;
    total.resumed += one_c.resumed;
    total.failed += one_c.failed;
    total.unclean += one_c.unclean;
    if (total.first_failure[0] == '\0' && one_c.first_failure[0] != '\0')
      memcpy(total.first_failure, one_c.first_failure, sizeof(total.first_failure));
  }
  while (wait(NULL) > 0)
    ;
  t1 = now_s();
  if (total.first_failure[0] != '\0')
    fprintf(stderr, "tls_handshakes: first failure: %s\n", total.first_failure);
  printf("handshakes %ld resumed %ld failed %ld unclean %ld seconds %.3f rate %.0f\n", total.done,
         total.resumed, total.failed, total.unclean, t1 - t0, (double)total.done / (t1 - t0));
  return status != 0 || total.failed != 0;

usage:
  fprintf(stderr, "usage: tls_handshakes [-n PROCS] [-c CAFILE] [-p PATH] PORT "
                  "1.3|1.2|1.3-resume|1.2-resume SECONDS\n");
  return 2;
}
