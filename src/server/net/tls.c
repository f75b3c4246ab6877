/* SPDX-License-Identifier: MIT */
/*
 * The TLS transport: OpenSSL on top of a TCP transport that it owns
 * (allocated right behind it), so libuv still owns the socket and the
 * connection above cannot tell an encrypted connection from a plain one.
 *
 * OpenSSL reads and writes through a BIO of our own, not memory BIOs, so a
 * connection keeps no buffer of its own between reads: ciphertext is read
 * into the loop's scratch buffer and OpenSSL reads it from there (what it
 * leaves unread, when the connection above stops reading, is kept in a
 * small buffer until it resumes); ciphertext OpenSSL writes goes straight
 * to the socket, and only what the socket does not take waits here.
 * Plaintext goes straight into the connection's read buffer.  On the way
 * out, plaintext is encrypted a record at a time while the socket takes
 * it (try_write takes no more than the socket does), so a slow TLS reader
 * holds no more memory than a slow plain one.  With SSL_MODE_RELEASE_BUFFERS
 * an idle connection holds only OpenSSL's connection state.
 *
 * Work that must not run inside the operation that caused it (a queued
 * write, plaintext already decrypted when reading resumes) is done from
 * the loop's pump list (hr__tlsloop_t), one idle handle per loop.
 *
 * A first byte that is an ASCII letter is a plain HTTP request on a TLS
 * port: it is answered with a readable 400 in plain text and closed.
 *
 * Behind a load balancer that sends a PROXY protocol header, the header
 * comes before the TLS handshake, in the clear: such a transport starts
 * raw, reading straight into the connection's buffer, until the
 * connection has read the header and calls ops->begin with the bytes that
 * followed it (the first of the handshake).
 */
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "hroute/error.h"
#include "server/net/tls.h"
#include "server/net/tlsctx.h"

struct hr__tls_s {
  hr__transport_t base;   /* what the connection sees */
  hr__transport_t *inner; /* the TCP transport, right behind this struct */
  hr__tlsloop_t *lp;
  SSL *ssl;
  /* The context `ssl` was made on: OpenSSL's session context, which the
   * SSL holds until it is freed, also after the server-name callback moved
   * it to a named one (HR__TLS_UNREF). */
  SSL_CTX *first_ctx;
  const char *in;         /* ciphertext for OpenSSL to read */
  size_t in_len;
  char *keep;             /* ciphertext left unread between events */
  size_t keep_len;
  char *pend;             /* ciphertext being written by the inner write */
  size_t pend_len;
  char *more;             /* ciphertext produced while that write runs */
  size_t more_len;
  int werr;               /* a socket error met inside a BIO write */
  uv_buf_t ibuf;          /* the inner write of `pend` */
  hr__wreq_t iwreq;
  hr__wreq_t *wreq;       /* the owner's write waiting for room */
  hr__tls_t *pump_next;
  unsigned reading : 1;
  unsigned handshaken : 1;
  unsigned on_pump : 1;
  unsigned closing : 1;
  unsigned failed : 1;
  unsigned first_seen : 1;
  unsigned inner_writing : 1;
  unsigned raw : 1;       /* before ops->begin: bytes go to the owner as read */
};

/* Plaintext encrypted per record: TLS's largest record payload. */
#define HR__TLS_PIECE 16384

static const char plain_http_answer[] =
    "HTTP/1.1 400 Bad Request\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 50\r\n"
    "Connection: close\r\n"
    "\r\n"
    "The plain HTTP request was sent to an HTTPS port.\n";

size_t hr__tls_size(void) {
  return (sizeof(hr__tls_t) + 15) / 16 * 16 + hr__tcp_size();
}

static void *owner_of(hr__tls_t *t) { return t->base.owner; }

static void schedule(hr__tls_t *t) {
  hr__tlsloop_t *lp = t->lp;
  if (t->on_pump || t->closing) return;
  t->on_pump = 1;
  t->pump_next = lp->pump_head;
  lp->pump_head = t;
  if (!uv_is_active((uv_handle_t *)&lp->idle)) uv_idle_start(&lp->idle, hr__tlsloop_run);
}

static void unschedule(hr__tls_t *t) {
  hr__tls_t **pp = &t->lp->pump_head;
  while (*pp != NULL && *pp != t) pp = &(*pp)->pump_next;
  if (*pp == t) *pp = t->pump_next;
  t->on_pump = 0;
}

/* The connection hears of a failure as a read error, whenever it comes. */
static void fail(hr__tls_t *t, int err) {
  if (t->failed || t->closing) return;
  t->failed = 1;
  ERR_clear_error();
  t->base.ev->read(owner_of(t), err);
}

/* ---- the BIO OpenSSL reads and writes through ------------------------------ */

/* Starts the inner write of `pend`.  Returns 0 or a negative error. */
static int start_inner_write(hr__tls_t *t) {
  int err;
  t->ibuf = uv_buf_init(t->pend, (unsigned)t->pend_len);
  t->iwreq.bufs = &t->ibuf;
  t->iwreq.nbufs = 1;
  t->iwreq.fd = -1; /* bytes, not a file */
  t->iwreq.flags = 0;
  if ((err = t->inner->ops->write(t->inner, &t->iwreq)) != 0) return err;
  t->inner_writing = 1;
  return 0;
}

/* Appends to a heap buffer of the transport; 0 or HR_ENOMEM. */
static int append(hr__tls_t *t, char **buf, size_t *len, const char *p, size_t n) {
  char *nb = hr__mem_realloc(t->lp->mem, *buf, *len + n);
  if (nb == NULL) return HR_ENOMEM;
  memcpy(nb + *len, p, n);
  *buf = nb;
  *len += n;
  return 0;
}

/* Writes `n` bytes to the socket now; what it does not take goes to
 * `pend` behind an inner write.  Returns 0 or a negative error. */
static int send_now(hr__tls_t *t, const char *p, size_t n) {
  uv_buf_t buf = uv_buf_init((char *)p, (unsigned)n);
  ssize_t w = t->inner->ops->try_write(t->inner, &buf, 1, 0);
  if (w < 0) return (int)w;
  if ((size_t)w == n) return 0;
  if (append(t, &t->pend, &t->pend_len, p + w, n - (size_t)w) != 0) return HR_ENOMEM;
  return start_inner_write(t);
}

/* Sends what `t` staged in the loop's buffer.  Every entry point that
 * makes OpenSSL write ends with it.  Returns 0 or a negative error (also
 * kept in t->werr). */
static int send_staged(hr__tls_t *t) {
  hr__tlsloop_t *lp = t->lp;
  size_t n = lp->out_len;
  int err;
  if (lp->out_owner != t || n == 0) return t->werr;
  lp->out_len = 0;
  lp->out_owner = NULL;
  if (t->werr != 0) return t->werr;
  if (t->inner_writing)
    err = append(t, &t->more, &t->more_len, lp->out, n);
  else
    err = send_now(t, lp->out, n);
  if (err != 0) t->werr = err;
  return err;
}

static int bio_write(BIO *b, const char *p, int n) {
  hr__tls_t *t = BIO_get_data(b);
  hr__tlsloop_t *lp = t->lp;
  BIO_clear_retry_flags(b);
  if (n <= 0) return 0;
  if (t->werr != 0) return -1;
  if (t->inner_writing) {
    /* Small output while a write runs (alerts, tickets): after it. */
    if (append(t, &t->more, &t->more_len, p, (size_t)n) != 0) goto broken;
    return n;
  }
  if (lp->out_owner != NULL && lp->out_owner != t) {
    hr__tls_t *other = lp->out_owner;
    /* Its failure is its own: its next turn on the pump list reports it. */
    if (send_staged(other) != 0) schedule(other);
  }
  if (lp->out_len + (size_t)n > sizeof(lp->out) && send_staged(t) != 0) return -1;
  if (t->inner_writing) {
    if (append(t, &t->more, &t->more_len, p, (size_t)n) != 0) goto broken;
    return n;
  }
  if ((size_t)n > sizeof(lp->out)) {
    if ((t->werr = send_now(t, p, (size_t)n)) != 0) return -1;
    return n;
  }
  memcpy(lp->out + lp->out_len, p, (size_t)n);
  lp->out_len += (size_t)n;
  lp->out_owner = t;
  return n;
broken:
  t->werr = HR_ENOMEM;
  return -1;
}

static int bio_read(BIO *b, char *p, int n) {
  hr__tls_t *t = BIO_get_data(b);
  size_t take;
  BIO_clear_retry_flags(b);
  if (t->in_len == 0) {
    BIO_set_retry_read(b);
    return -1;
  }
  take = t->in_len < (size_t)n ? t->in_len : (size_t)n;
  memcpy(p, t->in, take);
  t->in += take;
  t->in_len -= take;
  return (int)take;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  hr__tls_t *t = BIO_get_data(b);
  (void)num;
  (void)ptr;
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
      return t != NULL ? (long)t->in_len : 0;
    default:
      return 0;
  }
}

static int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

static BIO_METHOD *bio_method;
static uv_once_t bio_once = UV_ONCE_INIT;

static void make_bio_method(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "hroute");
  if (m == NULL) return;
  BIO_meth_set_write(m, bio_write);
  BIO_meth_set_read(m, bio_read);
  BIO_meth_set_ctrl(m, bio_ctrl);
  BIO_meth_set_create(m, bio_create);
  bio_method = m; /* lives as long as the process */
}

/* After an event: what OpenSSL left unread is kept for later. */
static int keep_unread(hr__tls_t *t) {
  if (t->in_len == 0) {
    hr__mem_free(t->lp->mem, t->keep);
    t->keep = NULL;
    t->keep_len = 0;
    return 0;
  }
  if (t->in >= t->keep && t->in < t->keep + t->keep_len) {
    memmove(t->keep, t->in, t->in_len);
    t->keep_len = t->in_len;
  } else {
    char *k = hr__mem_alloc(t->lp->mem, t->in_len);
    if (k == NULL) return HR_ENOMEM;
    memcpy(k, t->in, t->in_len);
    hr__mem_free(t->lp->mem, t->keep);
    t->keep = k;
    t->keep_len = t->in_len;
  }
  t->in = t->keep;
  return 0;
}

/* A socket error met inside OpenSSL's write, or its own failure. */
static int ssl_failed(hr__tls_t *t) { return t->werr != 0 ? t->werr : UV_EPROTO; }

/* Encrypts and writes from `bufs` while the socket takes it.  Returns the
 * plaintext bytes consumed (now this transport's), or a negative error. */
static ssize_t encrypt_some(hr__tls_t *t, uv_buf_t *bufs, unsigned n) {
  ssize_t total = 0;
  unsigned i;
  for (i = 0; i < n && !t->inner_writing; i++) {
    size_t off = 0;
    while (off < bufs[i].len && !t->inner_writing) {
      size_t take = bufs[i].len - off < HR__TLS_PIECE ? bufs[i].len - off : HR__TLS_PIECE;
      int r = SSL_write(t->ssl, bufs[i].base + off, (int)take);
      if (r <= 0 || send_staged(t) != 0) return ssl_failed(t);
      off += (size_t)r;
      total += r;
    }
  }
  return total;
}

static ssize_t tls_try_write(hr__transport_t *tr, const uv_buf_t *bufs,
                             unsigned n, unsigned flags) {
  hr__tls_t *t = (hr__tls_t *)tr;
  (void)flags; /* records are sealed as they come */
  if (!t->handshaken || t->inner_writing || t->wreq != NULL || t->failed) return 0;
  return encrypt_some(t, (uv_buf_t *)bufs, n);
}

/* Goes on with the owner's write; reports its end. */
static void continue_write(hr__tls_t *t) {
  hr__wreq_t *req = t->wreq;
  ssize_t r;
  if (req == NULL || !t->handshaken || t->inner_writing || t->closing) return;
  r = encrypt_some(t, req->bufs, req->nbufs);
  if (r < 0) {
    t->wreq = NULL;
    t->base.ev->write_done(owner_of(t), (int)r);
    return;
  }
  if (hr__wreq_advance(req, (size_t)r) && !t->inner_writing) {
    t->wreq = NULL;
    t->base.ev->write_done(owner_of(t), 0);
  } else if (r > 0) {
    t->base.ev->write_progress(owner_of(t));
  }
}

static int tls_write(hr__transport_t *tr, hr__wreq_t *req) {
  hr__tls_t *t = (hr__tls_t *)tr;
  if (t->wreq != NULL) return UV_EBUSY;
  t->wreq = req;
  schedule(t); /* never completes inside this call */
  return 0;
}

/* Decrypts what the read BIO holds into the owner's buffers. */
static void deliver(hr__tls_t *t) {
  while (t->reading && !t->closing && !t->failed) {
    uv_buf_t b;
    int n, e;
    t->base.ev->alloc(owner_of(t), &b);
    if (b.len == 0) {
      t->base.ev->read(owner_of(t), UV_ENOBUFS);
      return;
    }
    n = SSL_read(t->ssl, b.base, (int)b.len);
    if (n > 0) {
      /* What OpenSSL wrote so far (tickets) stays staged: the owner's
       * answer is staged behind it and both leave in one write. */
      t->base.ev->read(owner_of(t), n);
      continue;
    }
    e = SSL_get_error(t->ssl, n);
    if (t->werr != 0) {
      fail(t, t->werr);
      return;
    }
    if (e == SSL_ERROR_WANT_READ) {
      t->base.ev->read(owner_of(t), 0); /* nothing after all */
      return;
    }
    if (e == SSL_ERROR_ZERO_RETURN) {
      t->base.ev->read(owner_of(t), UV_EOF); /* close_notify */
      return;
    }
    fail(t, ssl_failed(t));
    return;
  }
}

static void pump_once(hr__tls_t *t);

/* Drives the handshake, then delivers plaintext and pending writes; what
 * OpenSSL wrote meanwhile leaves in one go. */
static void pump(hr__tls_t *t) {
  pump_once(t);
  if (!t->closing && send_staged(t) != 0) fail(t, t->werr);
}

static void answer_plain_http(hr__tls_t *t);

static void pump_once(hr__tls_t *t) {
  if (t->closing || t->failed) return;
  if (t->werr != 0) {
    fail(t, t->werr);
    return;
  }
  if (!t->first_seen && t->in_len > 0) {
    unsigned char c = (unsigned char)t->in[0];
    t->first_seen = 1;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
      answer_plain_http(t);
      return;
    }
  }
  if (!t->handshaken) {
    int r = SSL_do_handshake(t->ssl), e;
    if (r != 1) {
      e = SSL_get_error(t->ssl, r);
      if (t->werr != 0 || (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE))
        fail(t, ssl_failed(t));
      return;
    }
    t->handshaken = 1;
  }
  continue_write(t);
  if (!t->closing && !t->failed) deliver(t);
}

void hr__tlsloop_run(uv_idle_t *h) {
  hr__tlsloop_t *lp = h->data;
  while (lp->pump_head != NULL) {
    hr__tls_t *t = lp->pump_head;
    lp->pump_head = t->pump_next;
    t->on_pump = 0;
    pump(t);
    if (!t->closing && keep_unread(t) != 0) fail(t, UV_ENOMEM);
  }
  uv_idle_stop(h);
}

/* ---- events of the inner (TCP) transport ---------------------------------- */

static void inner_alloc(void *owner, uv_buf_t *buf) {
  hr__tls_t *t = owner;
  if (t->raw)
    t->base.ev->alloc(owner_of(t), buf);
  else
    *buf = uv_buf_init(t->lp->in, sizeof(t->lp->in));
}

static void answer_plain_http(hr__tls_t *t) {
  uv_buf_t b = uv_buf_init((char *)plain_http_answer, sizeof(plain_http_answer) - 1);
  t->inner->ops->try_write(t->inner, &b, 1, 0);
  fail(t, UV_EPROTO);
}

static void inner_read(void *owner, ssize_t nread) {
  hr__tls_t *t = owner;
  if (t->closing || t->failed) return;
  if (nread == 0) return;
  if (nread < 0 || t->raw) {
    t->base.ev->read(owner_of(t), nread); /* EOF or an error; raw bytes */
    return;
  }
  if (t->keep_len > 0) {
    /* Behind what was left unread. */
    if (append(t, &t->keep, &t->keep_len, t->lp->in, (size_t)nread) != 0) {
      fail(t, UV_ENOMEM);
      return;
    }
    t->in = t->keep;
    t->in_len = t->keep_len;
  } else {
    t->in = t->lp->in;
    t->in_len = (size_t)nread;
  }
  pump(t);
  if (!t->closing && keep_unread(t) != 0) fail(t, UV_ENOMEM);
}

static void inner_write_progress(void *owner) {
  hr__tls_t *t = owner;
  if (t->wreq != NULL) t->base.ev->write_progress(owner_of(t));
}

static void inner_write_done(void *owner, int status) {
  hr__tls_t *t = owner;
  t->inner_writing = 0;
  hr__mem_free(t->lp->mem, t->pend);
  t->pend = t->more;
  t->pend_len = t->more_len;
  t->more = NULL;
  t->more_len = 0;
  if (status >= 0 && t->pend_len > 0 && (status = start_inner_write(t)) == 0)
    return; /* what came meanwhile goes first */
  if (status < 0) {
    if (t->wreq != NULL) {
      t->wreq = NULL;
      t->base.ev->write_done(owner_of(t), status);
    } else {
      fail(t, status);
    }
    return;
  }
  if (t->wreq != NULL) {
    t->base.ev->write_progress(owner_of(t));
    continue_write(t);
  }
}

static void inner_closed(void *owner) {
  hr__tls_t *t = owner;
  if (t->ssl != NULL) {
    HR__TLS_UNREF(t->first_ctx);
    HR__TLS_UNREF(SSL_get_SSL_CTX(t->ssl)); /* a named one, if it moved */
  }
  SSL_free(t->ssl);
  t->ssl = NULL;
  hr__mem_free(t->lp->mem, t->pend);
  hr__mem_free(t->lp->mem, t->more);
  hr__mem_free(t->lp->mem, t->keep);
  t->pend = t->more = t->keep = NULL;
  t->base.ev->closed(owner_of(t));
}

static const hr__transport_events_t inner_events = {
    inner_alloc, inner_read, inner_write_progress, inner_write_done, inner_closed};

/* ---- operations ------------------------------------------------------------- */

static int tls_read_start(hr__transport_t *tr) {
  hr__tls_t *t = (hr__tls_t *)tr;
  t->reading = 1;
  /* Plaintext decrypted earlier may wait in OpenSSL: deliver it soon. */
  if (t->handshaken && (SSL_pending(t->ssl) > 0 || t->keep_len > 0)) schedule(t);
  return t->inner->ops->read_start(t->inner);
}

static void tls_read_stop(hr__transport_t *tr) {
  hr__tls_t *t = (hr__tls_t *)tr;
  t->reading = 0;
  /* Also during the handshake: it waits for read_start, so nothing piles
   * up unread (the header timeout still runs). */
  t->inner->ops->read_stop(t->inner);
}

static int tls_begin(hr__transport_t *tr, const char *early, size_t n) {
  hr__tls_t *t = (hr__tls_t *)tr;
  t->raw = 0;
  if (n == 0) return 0;
  /* As if left unread by an earlier event: the pump reads it soon, never
   * inside this call. */
  if (append(t, &t->keep, &t->keep_len, early, n) != 0) return HR_ENOMEM;
  t->in = t->keep;
  t->in_len = t->keep_len;
  schedule(t);
  return 0;
}

static int tls_shutdown(hr__transport_t *tr) {
  hr__tls_t *t = (hr__tls_t *)tr;
  int err;
  if (t->inner_writing || t->wreq != NULL) return UV_EBUSY;
  if (t->handshaken && !t->failed) {
    SSL_shutdown(t->ssl); /* close_notify; the peer's is not awaited */
    ERR_clear_error();
    if ((err = send_staged(t)) != 0) return err;
    if (t->inner_writing) return UV_EBUSY;
  }
  return t->inner->ops->shutdown(t->inner);
}

static void tls_close(hr__transport_t *tr, int abort) {
  hr__tls_t *t = (hr__tls_t *)tr;
  if (t->closing) return;
  if (t->on_pump) unschedule(t);
  /* A connection that ends cleanly says so (close_notify, RFC 8446 §6.1:
   * a keep-alive timeout, an answer to the peer's own close_notify), which
   * also keeps its session resumable (OpenSSL drops the session of an SSL
   * freed without a shutdown from the cache). */
  if (!abort && t->handshaken && !t->failed && !t->inner_writing &&
      !(SSL_get_shutdown(t->ssl) & SSL_SENT_SHUTDOWN)) {
    SSL_shutdown(t->ssl);
    ERR_clear_error();
  }
  if (t->lp->out_owner == t) {
    if (!abort) send_staged(t); /* a last alert or close_notify */
    t->lp->out_len = 0;
    t->lp->out_owner = NULL;
  }
  t->closing = 1;
  t->reading = 0;
  t->wreq = NULL;
  t->inner->ops->close(t->inner, abort); /* inner_closed follows */
}

static int tls_peer(const hr__transport_t *tr, struct sockaddr *a, int *len) {
  const hr__tls_t *t = (const hr__tls_t *)tr;
  return t->inner->ops->peer(t->inner, a, len);
}

static int tls_local(const hr__transport_t *tr, struct sockaddr *a, int *len) {
  const hr__tls_t *t = (const hr__tls_t *)tr;
  return t->inner->ops->local(t->inner, a, len);
}

/* The socket's: records not yet read, records not yet acknowledged. */
static int tls_queues(const hr__transport_t *tr, size_t *unread, size_t *unacked) {
  const hr__tls_t *t = (const hr__tls_t *)tr;
  return t->inner->ops->queues(t->inner, unread, unacked);
}

static int tls_info(const hr__transport_t *tr, hr_tls_info_t *info) {
  const hr__tls_t *t = (const hr__tls_t *)tr;
  const unsigned char *alpn = NULL;
  unsigned int alen = 0;
  const char *sni;
  if (t->ssl == NULL || !t->handshaken) return HR_ENOTFOUND;
  info->version = SSL_get_version(t->ssl);
  info->cipher = SSL_get_cipher_name(t->ssl);
  SSL_get0_alpn_selected(t->ssl, &alpn, &alen);
  info->alpn.ptr = (const char *)alpn;
  info->alpn.len = alen;
  sni = SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name);
  info->sni = hr_span_cstr(sni);
  info->resumed = SSL_session_reused(t->ssl) == 1;
  return 0;
}

/* Copies what `b` holds into memory from `alloc`. */
static int bio_span(BIO *b, void *(*alloc)(void *, size_t), void *ctx, hr_span_t *out) {
  char *p, *q;
  long n = BIO_get_mem_data(b, &p);
  if (n < 0) return HR_ENOMEM;
  q = alloc(ctx, (size_t)n + 1);
  if (q == NULL) return HR_ENOMEM;
  memcpy(q, p, (size_t)n);
  q[n] = '\0';
  out->ptr = q;
  out->len = (size_t)n;
  return 0;
}

static int tls_client(const hr__transport_t *tr, int der,
                      void *(*alloc)(void *, size_t), void *ctx,
                      hr_span_t *subject, hr_span_t *cert) {
  const hr__tls_t *t = (const hr__tls_t *)tr;
  X509 *x;
  BIO *b;
  int err = 0;
  if (t->ssl == NULL || !t->handshaken) return HR_ENOTFOUND;
  x = SSL_get0_peer_certificate(t->ssl);
  if (x == NULL || SSL_get_verify_result(t->ssl) != X509_V_OK) return HR_ENOTFOUND;
  b = BIO_new(BIO_s_mem());
  if (b == NULL) return HR_ENOMEM;
  if (subject != NULL) {
    if (X509_NAME_print_ex(b, X509_get_subject_name(x), 0, XN_FLAG_RFC2253) < 0)
      err = HR_ENOMEM;
    else
      err = bio_span(b, alloc, ctx, subject);
    (void)BIO_reset(b);
  }
  if (err == 0 && cert != NULL) {
    if ((der ? i2d_X509_bio(b, x) : PEM_write_bio_X509(b, x)) != 1)
      err = HR_ENOMEM;
    else
      err = bio_span(b, alloc, ctx, cert);
  }
  BIO_free(b);
  ERR_clear_error();
  return err;
}

static const hr__transport_ops_t tls_ops = {
    .read_start = tls_read_start,
    .read_stop = tls_read_stop,
    .try_write = tls_try_write,
    .write = tls_write,
    .shutdown = tls_shutdown,
    .close = tls_close,
    .peer = tls_peer,
    .local = tls_local,
    .queues = tls_queues,
    .tls_info = tls_info,
    .tls_client = tls_client,
    .try_sendfile = NULL, /* records are encrypted in user space */
    .begin = tls_begin,
};

int hr__tls_init(hr__transport_t *tr, uv_loop_t *loop, int fd, SSL *ssl,
                 hr__tlsloop_t *lp, int raw, const hr__transport_events_t *ev,
                 void *owner) {
  hr__tls_t *t = (hr__tls_t *)tr;
  BIO *bio;
  int err;
  memset(t, 0, sizeof(*t));
  t->inner = (hr__transport_t *)((char *)t + (sizeof(hr__tls_t) + 15) / 16 * 16);
  uv_once(&bio_once, make_bio_method);
  if (bio_method == NULL || (bio = BIO_new(bio_method)) == NULL) return UV_ENOMEM;
  /* The inner transport first: when it fails, the caller still owns fd
   * and ssl. */
  if ((err = hr__tcp_init(t->inner, loop, NULL, fd, &inner_events, t)) != 0) {
    BIO_free(bio);
    return err;
  }
  BIO_set_data(bio, t);
  SSL_set_bio(ssl, bio, bio); /* one reference, owned by the SSL now */
  SSL_set_accept_state(ssl);
  t->ssl = ssl;
  t->first_ctx = SSL_get_SSL_CTX(ssl);
  t->lp = lp;
  t->base.ops = &tls_ops;
  t->base.ev = ev;
  t->base.owner = owner;
  t->raw = (unsigned)(raw != 0);
  return 0;
}

void hr__tlsloop_init(hr__tlsloop_t *lp, uv_loop_t *loop, hr__mem_t *mem,
                      void *owner) {
  uv_idle_init(loop, &lp->idle);
  lp->idle.data = lp;
  lp->pump_head = NULL;
  lp->mem = mem;
  lp->owner = owner;
  lp->out_len = 0;
  lp->out_owner = NULL;
}
