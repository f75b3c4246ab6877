/* SPDX-License-Identifier: MIT */
/*
 * TLS contexts: hroute's defaults (TLS 1.2 and 1.3, ECDHE + AEAD ciphers
 * for TLS 1.2, no renegotiation, no compression, ALPN http/1.1, buffers
 * released while idle), certificate chain and key from files or memory,
 * checked against each other, and their publication (see tlsctx.h).
 */
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>

#include "hroute/error.h"
#include "server/tlsctx.h"
#include "util/rcu.h"

/* The "intermediate" profile's TLS 1.2 suites; TLS 1.3 keeps OpenSSL's. */
static const char tls12_ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

void hr_tls_options_init(hr_tls_options_t *o) { memset(o, 0, sizeof(*o)); }

/* ALPN (RFC 7301): http/1.1 when offered; a client that offers only other
 * protocols is refused with no_application_protocol; none offered, none
 * chosen. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
  unsigned int i = 0;
  (void)ssl;
  (void)arg;
  while (i < inlen) {
    unsigned int n = in[i];
    if (i + 1 + n > inlen) break;
    if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *outlen = 8;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + n;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int load_chain(SSL_CTX *ctx, const hr_tls_options_t *o) {
  BIO *b;
  X509 *x;
  int ok;
  if (o->cert_file != NULL)
    return SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) == 1 ? 0 : HR_ETLS;
  b = BIO_new_mem_buf(o->cert_pem, (int)o->cert_pem_len);
  if (b == NULL) return HR_ENOMEM;
  x = PEM_read_bio_X509(b, NULL, NULL, NULL);
  ok = x != NULL && SSL_CTX_use_certificate(ctx, x) == 1;
  X509_free(x);
  while (ok && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
    /* The chain takes the reference. */
    if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
      X509_free(x);
      ok = 0;
    }
  }
  BIO_free(b);
  return ok ? 0 : HR_ETLS;
}

static int load_key(SSL_CTX *ctx, const hr_tls_options_t *o) {
  BIO *b;
  EVP_PKEY *k;
  int ok;
  if (o->key_file != NULL)
    return SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) == 1
               ? 0
               : HR_ETLS;
  b = BIO_new_mem_buf(o->key_pem, (int)o->key_pem_len);
  if (b == NULL) return HR_ENOMEM;
  k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
  ok = k != NULL && SSL_CTX_use_PrivateKey(ctx, k) == 1;
  EVP_PKEY_free(k);
  BIO_free(b);
  return ok ? 0 : HR_ETLS;
}

int hr__tlsctx_build(const hr_tls_options_t *o, SSL_CTX **out) {
  SSL_CTX *ctx;
  int err = 0;
  if (o == NULL || out == NULL) return HR_EINVAL;
  if ((o->cert_file == NULL && (o->cert_pem == NULL || o->cert_pem_len == 0)) ||
      (o->key_file == NULL && (o->key_pem == NULL || o->key_pem_len == 0)))
    return HR_EINVAL;
  ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == NULL) return HR_ENOMEM;
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, tls12_ciphers) != 1)
    err = HR_ETLS;
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
  if (err == 0) err = load_chain(ctx, o);
  if (err == 0) err = load_key(ctx, o);
  if (err == 0 && SSL_CTX_check_private_key(ctx) != 1) err = HR_ETLS;
  if (err == 0 && o->ctx_setup != NULL && o->ctx_setup(ctx, o->ctx_udata) != 0)
    err = HR_ETLS;
  ERR_clear_error(); /* OpenSSL's error queue is per thread: leave it clean */
  if (err != 0) {
    SSL_CTX_free(ctx);
    return err;
  }
  *out = ctx;
  return 0;
}

int hr__tlsconf_init(hr__tlsconf_t *conf, hr__mem_t *mem, SSL_CTX *ctx) {
  if (uv_mutex_init(&conf->lock) != 0) return HR_ENOMEM;
  conf->mem = mem;
  atomic_init(&conf->ctx, ctx);
  conf->used_call_rcu = 0;
  return 0;
}

typedef struct retired_s {
  struct rcu_head rcu;
  SSL_CTX *ctx;
  hr__mem_t *mem;
} retired_t;

static void reclaim(struct rcu_head *h) {
  retired_t *r = (retired_t *)((char *)h - offsetof(retired_t, rcu));
  HR__GP_ACQUIRE(); /* every reader that could have loaded it is done */
  SSL_CTX_free(r->ctx);
  hr__mem_free(r->mem, r);
}

void hr__tlsconf_replace(hr__tlsconf_t *conf, SSL_CTX *ctx) {
  SSL_CTX *old;
  uv_mutex_lock(&conf->lock);
  /* Release: pairs with the acquire load in hr__tlsconf_new_ssl, so a
   * reader sees the context complete. */
  old = atomic_exchange_explicit(&conf->ctx, ctx, memory_order_acq_rel);
  if (urcu_bp_read_ongoing()) {
    /* Called inside a read-side section (a handler): waiting for a grace
     * period here would wait for ourselves. */
    retired_t *r = hr__mem_alloc(conf->mem, sizeof(*r));
    if (r != NULL) {
      r->ctx = old;
      r->mem = conf->mem;
      conf->used_call_rcu = 1;
      urcu_bp_call_rcu(&r->rcu, reclaim);
      old = NULL;
    } else {
      /* No memory for the node: leak one context rather than free it
       * under a reader. */
      old = NULL;
    }
  }
  uv_mutex_unlock(&conf->lock);
  if (old != NULL) {
    urcu_bp_synchronize_rcu();
    HR__GP_ACQUIRE();
    SSL_CTX_free(old);
  }
}

SSL *hr__tlsconf_new_ssl(hr__tlsconf_t *conf) {
  SSL *ssl;
  hr__rcu_read_lock();
  /* Acquire: pairs with the release in hr__tlsconf_replace. */
  ssl = SSL_new(atomic_load_explicit(&conf->ctx, memory_order_acquire));
  hr__rcu_read_unlock();
  return ssl;
}

void hr__tlsconf_free(hr__tlsconf_t *conf) {
  if (conf->used_call_rcu) urcu_bp_barrier();
  SSL_CTX_free(atomic_load_explicit(&conf->ctx, memory_order_relaxed));
  uv_mutex_destroy(&conf->lock);
}
