/* SPDX-License-Identifier: MIT */
/* Blocking loopback HTTP/1.1 test client (rawclient.h). */
#include "rawclient.h"

#include <hroute.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "rch2.h"

int rc_connect_errno;

/* Response memory is tracked in one list, so that a test that fails with a
 * response in hand (cmocka longjmps out) leaks nothing: the fixture's
 * teardown calls rc_free_all_responses(). */
typedef struct trk_s {
  struct trk_s *prev, *next;
  max_align_t align[];
} trk_t;

static trk_t trk_head = {&trk_head, &trk_head};
static pthread_mutex_t trk_mu = PTHREAD_MUTEX_INITIALIZER;

static void *trk_realloc(void *p, size_t n) {
  trk_t *t = p ? (trk_t *)((char *)p - offsetof(trk_t, align)) : NULL, *nt;
  pthread_mutex_lock(&trk_mu);
  if (t != NULL) {
    t->prev->next = t->next;
    t->next->prev = t->prev;
  }
  nt = realloc(t, sizeof *nt + n);
  if (nt == NULL) abort(); /* the test client does not run out of memory */
  nt->next = trk_head.next;
  nt->prev = &trk_head;
  trk_head.next->prev = nt;
  trk_head.next = nt;
  pthread_mutex_unlock(&trk_mu);
  return nt->align;
}

static void trk_free(void *p) {
  trk_t *t;
  if (p == NULL) return;
  t = (trk_t *)((char *)p - offsetof(trk_t, align));
  pthread_mutex_lock(&trk_mu);
  t->prev->next = t->next;
  t->next->prev = t->prev;
  pthread_mutex_unlock(&trk_mu);
  free(t);
}

void rc_free_all_responses(void) {
  pthread_mutex_lock(&trk_mu);
  while (trk_head.next != &trk_head) {
    trk_t *t = trk_head.next;
    trk_head.next = t->next;
    free(t);
  }
  trk_head.prev = &trk_head;
  pthread_mutex_unlock(&trk_mu);
}

static void pause_us(unsigned us) {
  struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000L};
  if (us == 0) return;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

rc_t *rc_connect_ex(const char *host, int port, int rcvbuf) {
  struct sockaddr_storage ss;
  socklen_t slen;
  struct timeval tv = {RC_TIMEOUT_MS / 1000, (RC_TIMEOUT_MS % 1000) * 1000};
  int one = 1;
  int fd;
  rc_t *c;

  memset(&ss, 0, sizeof ss);
  if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons((unsigned short)port);
    slen = sizeof *sin;
  } else if (inet_pton(AF_INET6, host,
                       &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons((unsigned short)port);
    slen = sizeof *sin6;
  } else {
    rc_connect_errno = EINVAL;
    return NULL;
  }
  fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    rc_connect_errno = errno;
    return NULL;
  }
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (connect(fd, (struct sockaddr *)&ss, slen) != 0) {
    rc_connect_errno = errno;
    close(fd);
    return NULL;
  }
  c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(fd);
    rc_connect_errno = ENOMEM;
    return NULL;
  }
  c->fd = fd;
  return c;
}

rc_t *rc_connect(int port) { return rc_connect_ex("127.0.0.1", port, 0); }

rc_t *rc_connect_h2(int port) {
  rc_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    rc_connect_errno = ENOMEM;
    return NULL;
  }
  c->h2 = rch2_connect(port);
  if (c->h2 == NULL) {
    rc_connect_errno = ECONNREFUSED;
    free(c);
    return NULL;
  }
  c->fd = rch2_client(c->h2)->io.sock.fd;
  return c;
}

void rc_close(rc_t *c) {
  if (c == NULL) return;
  if (c->h2 != NULL)
    rch2_close(c->h2); /* and its socket, c->fd */
  else if (c->fd >= 0)
    close(c->fd);
  free(c->buf);
  free(c);
}

void rc_set_rst_on_close(rc_t *c) {
  struct linger l = {1, 0};
  setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

void rc_close_rst(rc_t *c) {
  if (c == NULL) return;
  rc_set_rst_on_close(c);
  rc_close(c);
}

void rc_shutdown_wr(rc_t *c) { shutdown(c->fd, SHUT_WR); }

int rc_send(rc_t *c, const void *data, size_t len) {
  const char *p = data;
  if (c->h2 != NULL) {
    int rc = rch2_send(c->h2, data, len);
    c->sent = rch2_client(c->h2)->io.seen.bytes_out;
    if (rc != 0) c->err = -rc;
    return rc;
  }
  while (len > 0) {
    ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      c->err = errno;
      return -errno;
    }
    p += n;
    len -= (size_t)n;
    c->sent += (size_t)n;
  }
  return 0;
}

int rc_send_str(rc_t *c, const char *s) { return rc_send(c, s, strlen(s)); }

int rc_send_split(rc_t *c, const void *data, size_t len, size_t at,
                  unsigned pause) {
  int rc;
  if (at > len) at = len;
  rc = rc_send(c, data, at);
  if (rc != 0) return rc;
  pause_us(pause);
  return rc_send(c, (const char *)data + at, len - at);
}

int rc_send_bytewise(rc_t *c, const void *data, size_t len, unsigned pause) {
  size_t i;
  for (i = 0; i < len; i++) {
    int rc = rc_send(c, (const char *)data + i, 1);
    if (rc != 0) return rc;
    pause_us(pause);
  }
  return 0;
}

/* Reads more bytes into the buffer.  Returns >0, 0 on EOF, -1 on error. */
static ssize_t fill(rc_t *c) {
  size_t want;
  ssize_t n;
  if (c->eof) return 0;
  if (c->off > 0 && c->off == c->len) c->off = c->len = 0;
  if (c->cap - c->len < 65536) {
    size_t ncap = c->cap ? c->cap * 2 : 131072;
    char *nb;
    while (ncap - c->len < 65536) ncap *= 2;
    nb = realloc(c->buf, ncap);
    if (nb == NULL) {
      c->err = ENOMEM;
      return -1;
    }
    c->buf = nb;
    c->cap = ncap;
  }
  want = c->cap - c->len;
  if (c->read_chunk > 0 && want > c->read_chunk) want = c->read_chunk;
  pause_us(c->read_pause_us);
  for (;;) {
    n = recv(c->fd, c->buf + c->len, want, 0);
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  if (n > 0) {
    c->len += (size_t)n;
    c->received += (size_t)n;
    return n;
  }
  if (n == 0) {
    c->eof = 1;
    return 0;
  }
  c->err = errno;
  return -1;
}

static char *dupn(const char *p, size_t n) {
  char *s = trk_realloc(NULL, n + 1);
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

static const char *find_crlf(const rc_t *c, size_t from) {
  const char *p = memmem(c->buf + from, c->len - from, "\r\n", 2);
  return p;
}

/* Makes sure buf[pos..pos+n) is buffered.  Returns RC_OK or an error. */
static int need(rc_t *c, size_t pos, size_t n) {
  while (c->len - pos < n) {
    ssize_t r = fill(c);
    if (r == 0) return RC_TRUNC;
    if (r < 0) return RC_ERR;
  }
  return RC_OK;
}

/* Makes sure a CRLF-terminated line starts at pos; returns its length
 * (without CRLF) in *n. */
static int need_line(rc_t *c, size_t pos, size_t *n) {
  const char *e;
  size_t scanned = pos;
  for (;;) {
    e = find_crlf(c, scanned);
    if (e != NULL) break;
    scanned = c->len > pos + 1 ? c->len - 1 : pos;
    {
      ssize_t r = fill(c);
      if (r == 0) return RC_TRUNC;
      if (r < 0) return RC_ERR;
    }
  }
  *n = (size_t)(e - (c->buf + pos));
  return RC_OK;
}

static void body_append(rc_response_t *r, size_t *cap, const char *p,
                        size_t n) {
  if (r->body_len + n + 1 > *cap) {
    size_t nc = *cap ? *cap : 256;
    while (nc < r->body_len + n + 1) nc *= 2;
    r->body = trk_realloc(r->body, nc);
    *cap = nc;
  }
  memcpy(r->body + r->body_len, p, n);
  r->body_len += n;
  r->body[r->body_len] = '\0';
}

static int has_token(const char *v, const char *tok) {
  size_t tl = strlen(tok);
  const char *p = v;
  while (p && *p) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    if (strncasecmp(p, tok, tl) == 0 &&
        (p[tl] == '\0' || p[tl] == ',' || p[tl] == ' ' || p[tl] == '\t'))
      return 1;
    p = strchr(p, ',');
  }
  return 0;
}

/* Adds a field line to a response. */
static void add_trailer(rc_response_t *r, const char *name, size_t nlen, const char *value,
                        size_t vlen) {
  r->trailers = trk_realloc(r->trailers, (r->ntrailers + 1) * sizeof *r->trailers);
  r->trailers[r->ntrailers].name = dupn(name, nlen);
  r->trailers[r->ntrailers].value = dupn(value, vlen);
  r->ntrailers++;
}

static void add_field(rc_response_t *r, const char *name, size_t nlen, const char *value,
                      size_t vlen) {
  r->headers = trk_realloc(r->headers, (r->nheaders + 1) * sizeof *r->headers);
  r->headers[r->nheaders].name = dupn(name, nlen);
  r->headers[r->nheaders].value = dupn(value, vlen);
  r->nheaders++;
}

/* Appends s[0..n) to the raw rendering. */
static void raw_append(rc_response_t *r, const char *s, size_t n) {
  r->raw = trk_realloc(r->raw, r->raw_len + n + 1);
  memcpy(r->raw + r->raw_len, s, n);
  r->raw_len += n;
  r->raw[r->raw_len] = '\0';
}

/* The response to the oldest HTTP/2 request not yet answered. */
static int read_h2(rc_t *c, rc_response_t *r, int head) {
  size_t i, bodycap = 0;
  int done = 0;
  char line[128];
  h2_stream_t *st = rch2_next_response(c->h2, &done);
  h2c_t *h = rch2_client(c->h2);
  c->received = h->io.seen.bytes_in;
  c->sent = h->io.seen.bytes_out; /* the session's own frames too */
  c->eof = h->io.seen.closed;
  if (st == NULL) {
    /* Nothing was asked: as HTTP/1.1, wait for the connection to end. */
    if (rch2_wait_closed(c->h2)) return RC_EOF;
    c->err = EAGAIN;
    return RC_ERR;
  }
  if (st->status < 0) {
    if (done || h->io.seen.closed) return RC_EOF;
    c->err = EAGAIN;
    return RC_ERR;
  }
  r->status = st->status;
  snprintf(line, sizeof line, "HTTP/1.1 %d %s", st->status, hr_status_reason(st->status));
  r->status_line = dupn(line, strlen(line));
  raw_append(r, line, strlen(line));
  raw_append(r, "\r\n", 2);
  for (i = 0; i < st->fields.n; i++) {
    const h2_field_t *f = &st->fields.v[i];
    add_field(r, f->name, strlen(f->name), f->value, f->value_len);
    raw_append(r, f->name, strlen(f->name));
    raw_append(r, ": ", 2);
    raw_append(r, f->value, f->value_len);
    raw_append(r, "\r\n", 2);
  }
  raw_append(r, "\r\n", 2);
  if (st->body_len > 0) {
    body_append(r, &bodycap, st->body, st->body_len);
    raw_append(r, st->body, st->body_len);
  }
  for (i = 0; i < st->trailers.n; i++) {
    const h2_field_t *f = &st->trailers.v[i];
    add_trailer(r, f->name, strlen(f->name), f->value, f->value_len);
  }
  r->stream_id = st->id;
  if (head && st->body_len > 0) return RC_BAD;
  if (st->ended) return RC_OK;
  if (!done && !h->io.seen.closed) c->err = EAGAIN;
  return RC_TRUNC;
}

int rc_read_response(rc_t *c, rc_response_t *r, int head) {
  size_t start, pos, n, bodycap = 0;
  const char *te, *cl;
  int rc;
  char *hend;

  memset(r, 0, sizeof *r);
  r->status = -1;
  r->body = trk_realloc(NULL, 1);
  r->body[0] = '\0';
  if (c->h2 != NULL) return read_h2(c, r, head);
  if (c->off > 0) {
    memmove(c->buf, c->buf + c->off, c->len - c->off);
    c->len -= c->off;
    c->off = 0;
  }
  start = 0;
  /* The head: up to the empty line. */
  for (;;) {
    hend = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
    if (hend != NULL) break;
    {
      ssize_t got = fill(c);
      if (got == 0) return c->len == 0 ? RC_EOF : RC_TRUNC;
      if (got < 0) return c->len == 0 ? RC_ERR : RC_TRUNC;
    }
  }
  n = (size_t)((const char *)memmem(c->buf, c->len, "\r\n", 2) - c->buf);
  r->status_line = dupn(c->buf, n);
  if (n < 12 || strncmp(r->status_line, "HTTP/1.", 7) != 0 ||
      r->status_line[8] != ' ')
    return RC_BAD;
  r->status = atoi(r->status_line + 9);
  pos = n + 2;
  while (c->buf + pos < hend + 2) {
    const char *line = c->buf + pos;
    const char *colon, *e = memmem(line, c->len - pos, "\r\n", 2);
    const char *vs, *ve;
    size_t ll = (size_t)(e - line);
    colon = memchr(line, ':', ll);
    if (colon == NULL) return RC_BAD;
    vs = colon + 1;
    ve = e;
    while (vs < ve && (*vs == ' ' || *vs == '\t')) vs++;
    while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    add_field(r, line, (size_t)(colon - line), vs, (size_t)(ve - vs));
    pos += ll + 2;
  }
  pos = (size_t)(hend - c->buf) + 4;

  te = rc_header(r, "Transfer-Encoding");
  cl = rc_header(r, "Content-Length");
  rc = RC_OK;
  if (head || (r->status >= 100 && r->status < 200) || r->status == 204 ||
      r->status == 304) {
    /* no body */
  } else if (te != NULL && has_token(te, "chunked")) {
    r->chunked = 1;
    for (;;) {
      size_t ll, size;
      char *endp;
      rc = need_line(c, pos, &ll);
      if (rc != RC_OK) break;
      size = strtoul(c->buf + pos, &endp, 16);
      if (endp == c->buf + pos) {
        rc = RC_BAD;
        break;
      }
      pos += ll + 2;
      if (size == 0) {
        /* trailer section */
        for (;;) {
          const char *line, *colon, *vs, *ve;
          rc = need_line(c, pos, &ll);
          if (rc != RC_OK) break;
          line = c->buf + pos;
          pos += ll + 2;
          if (ll == 0) break;
          colon = memchr(line, ':', ll);
          if (colon == NULL) {
            rc = RC_BAD;
            break;
          }
          vs = colon + 1;
          ve = line + ll;
          while (vs < ve && (*vs == ' ' || *vs == '\t')) vs++;
          while (ve > vs && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
          add_trailer(r, line, (size_t)(colon - line), vs, (size_t)(ve - vs));
        }
        break;
      }
      rc = need(c, pos, size + 2);
      if (rc != RC_OK) break;
      body_append(r, &bodycap, c->buf + pos, size);
      if (memcmp(c->buf + pos + size, "\r\n", 2) != 0) {
        rc = RC_BAD;
        break;
      }
      pos += size + 2;
      r->nchunks++;
    }
  } else if (cl != NULL) {
    size_t len = strtoul(cl, NULL, 10);
    rc = need(c, pos, len);
    if (rc == RC_OK) {
      body_append(r, &bodycap, c->buf + pos, len);
      pos += len;
    }
  } else {
    ssize_t got;
    r->until_close = 1;
    while ((got = fill(c)) > 0) {
    }
    if (got < 0 && c->err != ECONNRESET) rc = RC_ERR;
    body_append(r, &bodycap, c->buf + pos, c->len - pos);
    pos = c->len;
  }
  if (rc == RC_ERR) rc = RC_TRUNC;
  if (pos > c->len) pos = c->len;
  r->raw = dupn(c->buf + start, pos - start);
  r->raw_len = pos - start;
  c->off = pos;
  return rc;
}

void rc_response_free(rc_response_t *r) {
  size_t i;
  for (i = 0; i < r->nheaders; i++) {
    trk_free(r->headers[i].name);
    trk_free(r->headers[i].value);
  }
  trk_free(r->headers);
  for (i = 0; i < r->ntrailers; i++) {
    trk_free(r->trailers[i].name);
    trk_free(r->trailers[i].value);
  }
  trk_free(r->trailers);
  trk_free(r->status_line);
  trk_free(r->body);
  trk_free(r->raw);
  memset(r, 0, sizeof *r);
  r->status = -1;
}

const char *rc_header(const rc_response_t *r, const char *name) {
  size_t i;
  for (i = 0; i < r->nheaders; i++)
    if (strcasecmp(r->headers[i].name, name) == 0) return r->headers[i].value;
  return NULL;
}

const char *rc_trailer(const rc_response_t *r, const char *name) {
  size_t i;
  for (i = 0; i < r->ntrailers; i++)
    if (strcasecmp(r->trailers[i].name, name) == 0) return r->trailers[i].value;
  return NULL;
}

size_t rc_header_count(const rc_response_t *r, const char *name) {
  size_t i, n = 0;
  for (i = 0; i < r->nheaders; i++)
    if (strcasecmp(r->headers[i].name, name) == 0) n++;
  return n;
}

int rc_told_to_close(const rc_t *c, const rc_response_t *r) {
  const char *v;
  if (c->h2 != NULL) return rch2_client(c->h2)->io.seen.goaway;
  v = rc_header(r, "Connection");
  return v != NULL && has_token(v, "close");
}

int rc_expect_closed(rc_t *c) {
  ssize_t n;
  if (c->h2 != NULL) return rch2_wait_closed(c->h2) ? 1 : -1;
  if (c->len > c->off) return 0;
  n = fill(c);
  if (n > 0) return 0;
  if (n == 0) return 1;
  if (c->err == ECONNRESET) return 2;
  return -1;
}

int rc_closed_without_response(const rc_t *c, int read_rc) {
  return read_rc == RC_EOF || (read_rc == RC_ERR && c->err == ECONNRESET);
}

int rc_drain_until_closed(rc_t *c, size_t *discarded) {
  size_t total = c->len - c->off;
  int ret;
  if (c->h2 != NULL) {
    if (discarded != NULL) *discarded = 0;
    return rch2_wait_closed(c->h2) ? 1 : -1;
  }
  c->off = c->len = 0;
  for (;;) {
    ssize_t n = fill(c);
    if (n > 0) {
      total += (size_t)n;
      c->off = c->len = 0;
      continue;
    }
    ret = (n == 0 || c->err == ECONNRESET || c->err == EPIPE) ? 1 : -1;
    break;
  }
  if (discarded) *discarded = total;
  return ret;
}

int rc_readable(rc_t *c, int ms) {
  struct pollfd p = {c->fd, POLLIN, 0};
  int n;
  if (c->len > c->off) return 1;
  do {
    n = poll(&p, 1, ms);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -1 : n > 0;
}
