/* SPDX-License-Identifier: MIT */
/* The non-blocking loopback byte stream of the HTTP/2 test clients
 * (h2sock.h): plain TCP from rawclient.h, TLS from tlsfx.h. */
#include "h2sock.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

uint8_t *h2_bytes_add(h2_bytes_t *b, const void *p, size_t n) {
  uint8_t *at;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    b->p = realloc(b->p, cap);
    if (b->p == NULL) abort(); /* the test client does not run out of memory */
    b->cap = cap;
  }
  at = b->p + b->len;
  if (p != NULL && n > 0)
    memcpy(at, p, n);
  else if (n > 0)
    memset(at, 0, n);
  b->len += n;
  return at;
}

void h2_bytes_consume(h2_bytes_t *b, size_t n) {
  b->off += n;
  if (b->off >= b->len) b->off = b->len = 0;
}

size_t h2_bytes_pending(const h2_bytes_t *b) { return b->len - b->off; }

void h2_bytes_free(h2_bytes_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void h2s_options_init(h2s_options_t *o) { memset(o, 0, sizeof *o); }

int h2s_open(h2s_t *s, int port, const h2s_options_t *o) {
  static const char h2_only[] = "\x02h2";
  memset(s, 0, sizeof *s);
  s->fd = -1;
  if (o->trust == NULL) {
    s->plain = rc_connect_ex("127.0.0.1", port, o->rcvbuf);
    if (s->plain == NULL) {
      s->err = rc_connect_errno;
      return -1;
    }
    s->fd = s->plain->fd;
  } else {
    const char *alpn = o->alpn != NULL ? o->alpn : h2_only;
    size_t alpn_len = o->alpn != NULL ? o->alpn_len : sizeof h2_only - 1;
    if (tf_connect(&s->tls, port, o->trust, NULL, 0, alpn, alpn_len, o->sni) != 0) {
      s->err = EPROTO;
      s->fd = -1;
      return -1;
    }
    s->is_tls = 1;
    s->fd = s->tls.fd;
    SSL_set_mode(s->tls.ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (o->rcvbuf > 0)
      setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof o->rcvbuf);
  }
  fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
  return 0;
}

char *h2s_alpn(const h2s_t *s, char *out, size_t cap) {
  const unsigned char *p = NULL;
  unsigned n = 0;
  if (cap == 0) return out;
  if (s->is_tls) SSL_get0_alpn_selected(s->tls.ssl, &p, &n);
  if (n >= cap) n = (unsigned)cap - 1;
  if (n > 0) memcpy(out, p, n);
  out[n] = '\0';
  return out;
}

/* What an SSL_read / SSL_write failure means: 0 would block, -1 ended. */
static ssize_t tls_failure(h2s_t *s, int rc) {
  switch (SSL_get_error(s->tls.ssl, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return 0;
    case SSL_ERROR_ZERO_RETURN:
      s->eof = 1;
      return -1;
    case SSL_ERROR_SYSCALL:
      s->err = errno != 0 ? errno : ECONNRESET;
      if (errno == 0) s->eof = 1; /* EOF without close_notify */
      ERR_clear_error();
      return -1;
    default:
      s->err = EPROTO;
      ERR_clear_error();
      return -1;
  }
}

ssize_t h2s_write_some(h2s_t *s, const void *p, size_t n) {
  ssize_t w;
  if (n == 0) return 0;
  if (s->is_tls) {
    int rc;
    errno = 0;
    rc = SSL_write(s->tls.ssl, p, n > 65536 ? 65536 : (int)n);
    return rc > 0 ? rc : tls_failure(s, rc);
  }
  do {
    w = send(s->fd, p, n, MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  if (w >= 0) return w;
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  s->err = errno;
  return -1;
}

ssize_t h2s_read_some(h2s_t *s, void *p, size_t n) {
  ssize_t r;
  if (s->is_tls) {
    int rc;
    errno = 0;
    rc = SSL_read(s->tls.ssl, p, n > 65536 ? 65536 : (int)n);
    return rc > 0 ? rc : tls_failure(s, rc);
  }
  do {
    r = recv(s->fd, p, n, 0);
  } while (r < 0 && errno == EINTR);
  if (r > 0) return r;
  if (r == 0) {
    s->eof = 1;
    return -1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
  s->err = errno;
  return -1;
}

int h2s_wait(h2s_t *s, int want_read, int want_write, int ms) {
  struct pollfd p = {s->fd, 0, 0};
  int n;
  if (want_read && s->is_tls && SSL_pending(s->tls.ssl) > 0) return 1;
  if (want_read) p.events |= POLLIN;
  if (want_write) p.events |= POLLOUT;
  do {
    n = poll(&p, 1, ms);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  /* A hang-up or error is reported as readable: the read says which. */
  return ((p.revents & (POLLIN | POLLHUP | POLLERR)) && want_read ? 1 : 0) |
         ((p.revents & (POLLOUT | POLLHUP | POLLERR)) && want_write ? 2 : 0);
}

int h2s_send_all(h2s_t *s, const void *p, size_t n) {
  const char *at = p;
  while (n > 0) {
    ssize_t w = h2s_write_some(s, at, n);
    if (w < 0) return -1;
    if (w == 0) {
      if (h2s_wait(s, 0, 1, RC_TIMEOUT_MS) == 0) {
        s->err = EAGAIN;
        return -1;
      }
      continue;
    }
    at += w;
    n -= (size_t)w;
  }
  return 0;
}

int h2s_step(h2s_t *s, h2_bytes_t *out, int reading, int ms,
             h2s_read_cb on_read, void *arg) {
  uint8_t buf[16384];
  int ready = h2s_wait(s, reading, h2_bytes_pending(out) > 0, ms);
  int progress = 0;
  if (ready & 2) {
    ssize_t w = h2s_write_some(s, out->p + out->off, h2_bytes_pending(out));
    if (w < 0) return -1;
    h2_bytes_consume(out, (size_t)w);
    progress |= w > 0;
  }
  if (ready & 1) {
    ssize_t r = h2s_read_some(s, buf, sizeof buf);
    if (r < 0) return -1;
    if (r > 0 && on_read(arg, buf, (size_t)r) != 0) return -1;
    progress |= r > 0;
  }
  return progress;
}

void h2s_close(h2s_t *s, int rst) {
  if (s->fd >= 0 && rst) {
    struct linger l = {1, 0};
    setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  if (s->is_tls) {
    if (rst && s->tls.ssl != NULL) SSL_set_quiet_shutdown(s->tls.ssl, 1);
    tf_close(&s->tls);
  } else {
    rc_close(s->plain);
  }
  memset(s, 0, sizeof *s);
  s->fd = -1;
}
