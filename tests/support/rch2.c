/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 request text sent as HTTP/2 requests (rch2.h): a translator
 * fed in pieces, a session client, and the streams whose responses are
 * still to be read, in order. */
#include "rch2.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rawclient.h"

/* What the translator expects next. */
enum {
  RQ_HEAD,        /* a request line and its field lines */
  RQ_LENGTH,      /* `left` more body bytes (Content-Length) */
  RQ_CHUNK_SIZE,  /* a chunk-size line */
  RQ_CHUNK_DATA,  /* `left` more bytes of a chunk */
  RQ_CHUNK_END,   /* the CRLF after a chunk's data */
  RQ_TRAILERS     /* trailer field lines, up to the empty line */
};

/* Field lines a head may have (h2c_submit takes 64 besides the pseudo
 * ones). */
#define RQ_MAX_FIELDS 64

struct rch2_s {
  h2c_t *c;
  h2_bytes_t text;  /* request text not yet translated */
  int state;
  int32_t open_id;  /* the stream whose body is being translated */
  uint64_t left;
  int32_t *ids;     /* streams in the order their requests were written */
  size_t nids, cap, next; /* next: the first whose response is not taken */
};

rch2_t *rch2_connect(int port) {
  h2c_options_t o;
  rch2_t *h = calloc(1, sizeof *h);
  if (h == NULL) return NULL;
  h2c_options_init(&o);
  h->c = h2c_connect(port, &o);
  if (h->c == NULL) {
    free(h);
    return NULL;
  }
  return h;
}

h2c_t *rch2_client(rch2_t *h) { return h->c; }

static void remember(rch2_t *h, int32_t id) {
  if (h->nids == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 16;
    h->ids = realloc(h->ids, h->cap * sizeof *h->ids);
    if (h->ids == NULL) abort(); /* the test client does not run out of memory */
  }
  h->ids[h->nids++] = id;
}

/* Lower-cases s in place; returns it. */
static char *lower(char *s) {
  char *p;
  for (p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
  return s;
}

static char *trim(char *s) {
  char *e;
  while (*s == ' ' || *s == '\t') s++;
  e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
  *e = '\0';
  return s;
}

/* Whether the last transfer coding of a Transfer-Encoding value is
 * chunked. */
static int ends_chunked(const char *v) {
  const char *last = strrchr(v, ',');
  char tok[16];
  size_t n;
  last = last != NULL ? last + 1 : v;
  while (*last == ' ' || *last == '\t') last++;
  n = strcspn(last, " \t;");
  if (n >= sizeof tok) return 0;
  memcpy(tok, last, n);
  tok[n] = '\0';
  return strcasecmp(tok, "chunked") == 0;
}

/* Fields of RFC 9113 §8.2.2 that HTTP/2 does not carry ("te" but
 * "trailers" included); Host becomes :authority instead. */
static int connection_specific(const char *name, const char *value) {
  static const char *const names[] = {"connection", "keep-alive", "proxy-connection",
                                      "transfer-encoding", "upgrade", "host"};
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return strcmp(name, "te") == 0 && strcasecmp(value, "trailers") != 0;
}

/* Translates the header section in s (NUL-terminated, without its empty
 * line) and submits its request, with the body bytes already there
 * (text->p[text->off..]).  Returns 0 or a negative errno. */
static int start_request(rch2_t *h, char *s) {
  h2f_field_t f[RQ_MAX_FIELDS];
  h2c_request_t r;
  char *line, *next, *sp, *target, path[2048], authority[256] = "";
  int chunked = 0, have_authority = 0;
  uint64_t length = 0;
  size_t nf = 0, avail;
  int32_t id;

  memset(&r, 0, sizeof r);
  next = strstr(s, "\r\n");
  if (next != NULL) {
    *next = '\0';
    next += 2;
  }
  /* The request line: method SP request-target SP HTTP-version. */
  line = s;
  if ((sp = strchr(line, ' ')) == NULL) return -EPROTO;
  *sp = '\0';
  r.method = line;
  target = sp + 1;
  if ((sp = strchr(target, ' ')) == NULL || strncmp(sp + 1, "HTTP/1.", 7) != 0) return -EPROTO;
  *sp = '\0';
  if (strncasecmp(target, "http://", 7) == 0 || strncasecmp(target, "https://", 8) == 0) {
    char *a = strstr(target, "://") + 3;
    size_t alen = strcspn(a, "/?");
    if (alen >= sizeof authority) return -EPROTO;
    memcpy(authority, a, alen);
    authority[alen] = '\0';
    have_authority = 1;
    if ((size_t)snprintf(path, sizeof path, "%s%s", a[alen] == '/' ? "" : "/", a + alen) >=
        sizeof path)
      return -EPROTO;
    a[-3] = '\0';
    r.scheme = lower(target);
  } else {
    if (strlen(target) >= sizeof path) return -EPROTO;
    memcpy(path, target, strlen(target) + 1);
  }
  r.path = path;
  /* The field lines. */
  while ((line = next) != NULL && *line != '\0') {
    char *colon, *value, *ws;
    next = strstr(line, "\r\n");
    if (next != NULL) {
      *next = '\0';
      next += 2;
    }
    colon = strchr(line, ':');
    if (colon == NULL || colon == line) return -EPROTO;
    if ((ws = strpbrk(line, " \t")) != NULL && ws < colon) return -EPROTO;
    *colon = '\0';
    lower(line);
    value = trim(colon + 1);
    if (strcmp(line, "host") == 0 && !have_authority) {
      if (strlen(value) >= sizeof authority) return -EPROTO;
      memcpy(authority, value, strlen(value) + 1);
      have_authority = 1;
    } else if (strcmp(line, "transfer-encoding") == 0) {
      chunked = ends_chunked(value);
      if (!chunked) return -EPROTO; /* the body would end with the connection */
    } else if (strcmp(line, "content-length") == 0) {
      char *end;
      if (!isdigit((unsigned char)*value)) return -EPROTO;
      length = strtoull(value, &end, 10);
      if (*end != '\0') return -EPROTO;
    }
    if (connection_specific(line, value)) continue;
    if (nf == RQ_MAX_FIELDS) return -EPROTO;
    f[nf].name = line;
    f[nf].value = value;
    nf++;
  }
  r.authority = authority; /* "" sends none */
  r.fields = f;
  r.nfields = nf;
  if (chunked) {
    r.open = 1;
    h->state = RQ_CHUNK_SIZE;
  } else if (length > 0) {
    avail = h2_bytes_pending(&h->text);
    if (avail > length) avail = (size_t)length;
    r.body = h->text.p + h->text.off;
    r.body_len = avail;
    r.open = avail < length;
    h->state = r.open ? RQ_LENGTH : RQ_HEAD;
    h->left = length - avail;
  } else {
    h->state = RQ_HEAD;
  }
  id = h2c_submit(h->c, &r);
  if (id <= 0) return -EPIPE;
  if (r.body_len > 0) h2_bytes_consume(&h->text, r.body_len);
  h->open_id = id;
  remember(h, id);
  return 0;
}

/* The end of the line that starts the pending text, or NULL. */
static char *line_end(rch2_t *h) {
  return memmem(h->text.p + h->text.off, h2_bytes_pending(&h->text), "\r\n", 2);
}

/* A trailer field line (line[0..n), without CRLF), sent with the body's
 * end as a field of its trailers' HEADERS frame.  0 or -EPROTO. */
static int add_trailer(rch2_t *h, const char *line, size_t n) {
  char buf[2048], *colon;
  if (n >= sizeof buf) return -EPROTO;
  memcpy(buf, line, n);
  buf[n] = '\0';
  colon = strchr(buf, ':');
  if (colon == NULL || colon == buf) return -EPROTO;
  *colon = '\0';
  return h2c_add_trailer(h->c, h->open_id, lower(buf), trim(colon + 1)) == 0 ? 0 : -EPROTO;
}

/* One translation step.  Returns 1 when it made progress, 0 when it needs
 * more text, or a negative errno. */
static int step(rch2_t *h) {
  char *p = (char *)h->text.p + h->text.off, *e;
  size_t n = h2_bytes_pending(&h->text);
  switch (h->state) {
    case RQ_HEAD: {
      char *s;
      size_t len;
      int rc;
      if (n == 0 || (e = memmem(p, n, "\r\n\r\n", 4)) == NULL) return 0;
      len = (size_t)(e - p);
      s = malloc(len + 1);
      if (s == NULL) abort();
      memcpy(s, p, len);
      s[len] = '\0';
      h2_bytes_consume(&h->text, len + 4);
      rc = start_request(h, s);
      free(s);
      return rc < 0 ? rc : 1;
    }
    case RQ_LENGTH:
    case RQ_CHUNK_DATA:
      if (n == 0) return 0;
      if (n > h->left) n = (size_t)h->left;
      h->left -= n;
      if (h2c_send_body(h->c, h->open_id, p, n, h->state == RQ_LENGTH && h->left == 0) != 0)
        return -EPIPE;
      h2_bytes_consume(&h->text, n);
      if (h->left == 0) h->state = h->state == RQ_LENGTH ? RQ_HEAD : RQ_CHUNK_END;
      return 1;
    case RQ_CHUNK_SIZE: {
      char *end;
      if ((e = line_end(h)) == NULL) return 0;
      if (!isxdigit((unsigned char)*p)) return -EPROTO;
      h->left = strtoull(p, &end, 16);
      if (end != e && *end != ';') return -EPROTO;
      h2_bytes_consume(&h->text, (size_t)(e - p) + 2);
      h->state = h->left > 0 ? RQ_CHUNK_DATA : RQ_TRAILERS;
      return 1;
    }
    case RQ_CHUNK_END:
      if (n < 2) return 0;
      if (memcmp(p, "\r\n", 2) != 0) return -EPROTO;
      h2_bytes_consume(&h->text, 2);
      h->state = RQ_CHUNK_SIZE;
      return 1;
    case RQ_TRAILERS:
      if ((e = line_end(h)) == NULL) return 0;
      if (e != p && add_trailer(h, p, (size_t)(e - p)) != 0) return -EPROTO;
      h2_bytes_consume(&h->text, (size_t)(e - p) + 2);
      if (e == p) {
        if (h2c_send_body(h->c, h->open_id, NULL, 0, 1) != 0) return -EPIPE;
        h->state = RQ_HEAD;
      }
      return 1;
    default:
      return -EPROTO;
  }
}

int rch2_send(rch2_t *h, const void *data, size_t len) {
  int rc;
  h2_bytes_add(&h->text, data, len);
  while ((rc = step(h)) > 0) {
  }
  if (rc < 0) return rc;
  return h2_loop_flush(&h->c->io) == 0 ? 0 : -EPIPE;
}

typedef struct answered_s {
  const h2_stream_t *st;
} answered_t;

/* Whether the stream's response is complete: ended, or reset. */
static int answered(void *arg) {
  const h2_stream_t *st = ((answered_t *)arg)->st;
  return st->ended || st->reset || st->closed;
}

h2_stream_t *rch2_next_response(rch2_t *h, int *done) {
  h2_stream_t *st;
  answered_t a;
  if (h->next == h->nids) return NULL;
  st = h2_seen_stream_make(&h->c->io.seen, h->ids[h->next++]);
  a.st = st;
  *done = h2c_run(h->c, answered, &a);
  return st;
}

int rch2_wait_closed(rch2_t *h) { return h2c_wait_closed(h->c); }

void rch2_close(rch2_t *h) {
  if (h == NULL) return;
  h2c_close(h->c);
  h2_bytes_free(&h->text);
  free(h->ids);
  free(h);
}
