/* SPDX-License-Identifier: MIT */
/*
 * TLS contexts: hroute's defaults (TLS 1.2 and 1.3, ECDHE + AEAD ciphers
 * for TLS 1.2, no renegotiation, no compression, ALPN h2 or http/1.1, buffers
 * released while idle), certificate chain and key from files or memory,
 * checked against each other, and their publication (see tlsctx.h).
 */
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/pem.h>

#include "hroute/error.h"
#include "server/net/tlsctx.h"
#include "util/detail.h"
#include "util/rcu.h"
#include "util/testpoint.h"

/* The "intermediate" profile's TLS 1.2 suites; TLS 1.3 keeps OpenSSL's. */
static const char tls12_ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

void hr_tls_options_init(hr_tls_options_t *o) { memset(o, 0, sizeof(*o)); }

/* ALPN (RFC 7301): "h2" when offered and the listener speaks HTTP/2
 * (`arg`, its hr__tlsconf_t, says; RFC 9113 §3.2), else "http/1.1" when
 * offered; a client that offers neither is refused with
 * no_application_protocol; none offered, none chosen. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
  const hr__tlsconf_t *conf = arg;
  const unsigned char *h1 = NULL;
  unsigned int i = 0;
  (void)ssl;
  while (i < inlen) {
    unsigned int n = in[i];
    if (i + 1 + n > inlen) break;
    if (n == 2 && memcmp(in + i + 1, "h2", 2) == 0 && conf != NULL && conf->h2) {
      *out = in + i + 1;
      *outlen = 2;
      return SSL_TLSEXT_ERR_OK;
    }
    if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) h1 = in + i + 1;
    i += 1 + n;
  }
  if (h1 == NULL) return SSL_TLSEXT_ERR_ALERT_FATAL;
  *out = h1;
  *outlen = 8;
  return SSL_TLSEXT_ERR_OK;
}

/* Records the detail of a refused certificate, key or CA list: `what`
 * names it ("certificate file \"/x.pem\""), then come OpenSSL's reasons
 * from this thread's error queue, oldest (the cause) first, each once
 * ("no start line; PEM lib").  Empties the queue.  Returns HR_ETLS. */
static int tls_refused(const char *what) {
  char why[384], one[256];
  const char *reason;
  size_t len = 0;
  unsigned long e;
  why[0] = '\0';
  int colons;
  while ((e = ERR_get_error()) != 0) {
    /* "error:<code>:<library>:<function>:<reason>": OpenSSL's own words,
     * a system error's strerror() text included. */
    ERR_error_string_n(e, one, sizeof one);
    reason = one;
    for (colons = 0; colons < 4 && reason != NULL; colons++)
      if ((reason = strchr(reason, ':')) != NULL) reason++;
    if (reason == NULL || *reason == '\0' || strstr(why, reason) != NULL) continue;
    len += (size_t)snprintf(why + len, sizeof why - len, "%s%s", len ? "; " : "", reason);
    if (len >= sizeof why) break;
  }
  hr__detail_set(HR_ETLS, "%s: %s", what, why[0] ? why : "refused by OpenSSL");
  return HR_ETLS;
}

/* Whether OpenSSL's oldest or newest queued error is a key that does not
 * match the certificate. */
static int mismatch(void) {
  unsigned long first = ERR_peek_error(), last = ERR_peek_last_error();
  return (ERR_GET_LIB(first) == ERR_LIB_X509 && ERR_GET_REASON(first) == X509_R_KEY_VALUES_MISMATCH) ||
         (ERR_GET_LIB(last) == ERR_LIB_X509 && ERR_GET_REASON(last) == X509_R_KEY_VALUES_MISMATCH);
}

/* "certificate file \"<path>\"" or "certificate (PEM in memory)" into out. */
static const char *named(char *out, size_t cap, const char *kind, const char *file) {
  if (file != NULL)
    snprintf(out, cap, "%s file \"%s\"", kind, file);
  else
    snprintf(out, cap, "%s (PEM in memory)", kind);
  return out;
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

/* A host name as the router keeps them, into out[256]: lowercase, no
 * trailing dot, only letters, digits, '-' and '.', optionally "*." first.
 * Returns 0 or -1 (not such a name). */
static int name_norm(char *out, const char *name) {
  size_t n = strlen(name), i, start = 0;
  if (n > 0 && name[n - 1] == '.') n--;
  if (n >= 2 && name[0] == '*' && name[1] == '.') start = 2;
  if (n == start || n > 253) return -1;
  for (i = start; i < n; i++) {
    char ch = name[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
      return -1;
  }
  for (i = 0; i < n; i++)
    out[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
  out[n] = '\0';
  return 0;
}

/* The server-name callback: the context of the name the client asked for,
 * if the listener has one; else the handshake goes on with the default.
 * Runs in the handshake, on the loop thread. */
static int on_servername(SSL *ssl, int *alert, void *arg) {
  hr__tlsconf_t *conf = arg;
  const char *sn = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  const hr__tlsnames_t *names;
  char low[256];
  size_t i;
  (void)alert;
  /* A name no table can hold (not a host name) matches none. */
  if (sn == NULL || name_norm(low, sn) != 0) return SSL_TLSEXT_ERR_NOACK;
  hr__rcu_read_lock();
  /* Acquire: pairs with the release in hr__tlsconf_set_name. */
  names = atomic_load_explicit(&conf->names, memory_order_acquire);
  HR__TP(HR__TP_TLS_SNI_NAMES, conf);
  for (i = 0; names != NULL && i < names->n; i++) {
    const char *e = names->e[i].name;
    int hit;
    if (e[0] == '*') { /* "*.example.com": one label before ".example.com" */
      const char *dot = strchr(low, '.');
      hit = dot != NULL && dot != low && strcmp(dot, e + 1) == 0;
    } else {
      hit = strcmp(low, e) == 0;
    }
    if (hit) {
      SSL_CTX *nctx = names->e[i].ctx;
      HR__TLS_USED(nctx);
      SSL_set_SSL_CTX(ssl, nctx); /* takes its own reference */
      /* SSL_set_SSL_CTX keeps the verify settings SSL_new copied from the
       * default context: take the named one's (mutual TLS per name). */
      SSL_set_verify(ssl, SSL_CTX_get_verify_mode(nctx), NULL);
      if (SSL_CTX_get_client_CA_list(nctx) != NULL)
        SSL_set_client_CA_list(ssl, SSL_dup_CA_list(SSL_CTX_get_client_CA_list(nctx)));
      break;
    }
  }
  hr__rcu_read_unlock();
  return SSL_TLSEXT_ERR_OK;
}

/* The CAs client certificates must chain to, and the list of their names
 * sent in the CertificateRequest. */
static int load_client_cas(SSL_CTX *ctx, const hr_tls_options_t *o) {
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  STACK_OF(X509_NAME) *names;
  BIO *b;
  X509 *x;
  int n = 0;
  if (o->client_ca_file != NULL) {
    if (SSL_CTX_load_verify_locations(ctx, o->client_ca_file, NULL) != 1) return HR_ETLS;
    names = SSL_load_client_CA_file(o->client_ca_file);
    if (names == NULL) return HR_ETLS;
    SSL_CTX_set_client_CA_list(ctx, names);
    return 0;
  }
  if (o->client_ca_pem == NULL || o->client_ca_pem_len == 0) return HR_EINVAL;
  names = sk_X509_NAME_new_null();
  b = BIO_new_mem_buf(o->client_ca_pem, (int)o->client_ca_pem_len);
  if (names == NULL || b == NULL) {
    sk_X509_NAME_free(names);
    BIO_free(b);
    return HR_ENOMEM;
  }
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
    X509_NAME *nm = X509_NAME_dup(X509_get_subject_name(x));
    if (X509_STORE_add_cert(store, x) == 1 && nm != NULL && sk_X509_NAME_push(names, nm) > 0)
      n++;
    else
      X509_NAME_free(nm);
    X509_free(x);
  }
  BIO_free(b);
  if (n == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return HR_ETLS;
  }
  SSL_CTX_set_client_CA_list(ctx, names);
  return 0;
}

/* ---- session resumption -------------------------------------------------- */

static int conf_index = -1;
static uv_once_t conf_index_once = UV_ONCE_INIT;

#ifdef HR__TSAN
/* Runs inside the SSL_CTX_free that drops the last reference on `parent`,
 * before OpenSSL frees it: see HR__TLS_UNREF. */
static void ctx_freed(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                      void *argp) {
  (void)ptr, (void)ad, (void)idx, (void)argl, (void)argp;
  __tsan_acquire(parent);
}
#define CTX_FREED ctx_freed
#else
#define CTX_FREED NULL
#endif

static void make_conf_index(void) {
  conf_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, CTX_FREED);
}

static uint64_t now_ms(void) { return uv_hrtime() / 1000000; }

static int make_key(hr__tkey_t *k) {
  return RAND_bytes(k->name, sizeof k->name) == 1 &&
                 RAND_bytes(k->aes, sizeof k->aes) == 1 &&
                 RAND_bytes(k->hmac, sizeof k->hmac) == 1
             ? 0
             : HR_ETLS;
}

/* Frees through `a`, the server's allocator: what a call_rcu callback
 * frees must not need the server, which may be gone by then (see
 * hr__tlsconf_free). */
static void a_free(const hr_allocator_t *a, void *p) {
  if (p != NULL) a->free(a->ctx, p);
}

static void free_tickets(struct rcu_head *h) {
  hr__tickets_t *t = caa_container_of(h, hr__tickets_t, rcu.head);
  HR__CB_BEGIN(h); /* the queue and the grace period: see util/rcu.h */
  OPENSSL_cleanse(t->key, sizeof t->key);
  a_free(t->alloc, t);
  HR__CB_DONE();
}

/* Rotates when the published keys are still those of publication
 * `expected` (any when 0), so that two loops finding the keys expired at
 * once rotate once.  A serial, not the keys' pointer: the caller may have
 * left the section in which it saw them (on_ticket), after which they may
 * be freed and their block reused for newer keys, which a pointer compare
 * would take for the expired ones and rotate away. */
static int rotate_if(hr__tlsconf_t *conf, uint64_t expected) {
  hr__tickets_t *old, *nt = hr__mem_alloc(conf->mem, sizeof(*nt));
  int err;
  if (nt == NULL) return HR_ENOMEM;
  memset(nt, 0, sizeof(*nt));
  nt->alloc = conf->mem->a;
  nt->created = now_ms();
  if ((err = make_key(&nt->key[0])) != 0) {
    hr__mem_free(conf->mem, nt);
    return err;
  }
  nt->nkeys = 1;
  uv_mutex_lock(&conf->lock);
  old = atomic_load_explicit(&conf->tickets, memory_order_relaxed);
  if (expected != 0 && (old == NULL || old->serial != expected)) {
    uv_mutex_unlock(&conf->lock); /* another loop rotated first */
    OPENSSL_cleanse(nt->key, sizeof nt->key);
    hr__mem_free(conf->mem, nt);
    return 0;
  }
  if (old != NULL) {
    nt->key[1] = old->key[0];
    nt->nkeys = 2;
  }
  nt->serial = ++conf->tickets_serial;
  /* Release: pairs with the acquire load in on_ticket. */
  atomic_store_explicit(&conf->tickets, nt, memory_order_release);
  uv_mutex_unlock(&conf->lock);
  if (old != NULL) {
    atomic_store_explicit(&conf->used_call_rcu, 1, memory_order_relaxed);
    hr__call_rcu(&old->rcu, free_tickets);
  }
  return 0;
}

int hr__tlsconf_rotate(hr__tlsconf_t *conf) { return rotate_if(conf, 0); }

/* Key lookup for a ticket being sealed (enc) or opened.  Returns what
 * OpenSSL's ticket callback expects: 1 (use it), 2 (opened with the
 * previous key: renew it), 0 (unknown key: full handshake), -1 (error).
 * Runs in the handshake, on the loop thread. */
static int on_ticket(SSL *ssl, unsigned char *name, unsigned char *iv,
                     EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc) {
  hr__tlsconf_t *conf = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), conf_index);
  const hr__tickets_t *tk;
  uint64_t expired = 0; /* the serial of keys found expired */
  const hr__tkey_t *k = NULL;
  OSSL_PARAM params[3];
  int rc = 0;
  if (conf == NULL) return -1;
  hr__rcu_read_lock();
  /* Acquire: pairs with the release in hr__tlsconf_rotate. */
  tk = atomic_load_explicit(&conf->tickets, memory_order_acquire);
  if (tk != NULL && enc) {
    k = &tk->key[0];
    rc = 1;
    if (now_ms() - tk->created >= conf->rotate_ms) expired = tk->serial;
    memcpy(name, k->name, sizeof k->name);
    if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1 ||
        EVP_EncryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1)
      rc = -1;
  } else if (tk != NULL) {
    int i;
    for (i = 0; i < tk->nkeys && k == NULL; i++)
      if (memcmp(name, tk->key[i].name, sizeof tk->key[i].name) == 0) {
        k = &tk->key[i];
        rc = i == 0 ? 1 : 2;
      }
    if (k != NULL && EVP_DecryptInit_ex(ectx, EVP_aes_256_cbc(), NULL, k->aes, iv) != 1)
      rc = -1;
  }
  if (k != NULL && rc > 0) {
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)k->hmac,
                                                  sizeof k->hmac);
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[2] = OSSL_PARAM_construct_end();
    if (EVP_MAC_CTX_set_params(hctx, params) != 1) rc = -1;
  }
  hr__rcu_read_unlock();
  /* Time for new keys: made and published here, outside the section (the
   * keys are known by their serial after it, see rotate_if). */
  if (expired != 0) {
    HR__TP(HR__TP_TLS_TICKET_EXPIRED, conf);
    rotate_if(conf, expired);
  }
  return rc;
}

int hr__tlsconf_sessions(hr__tlsconf_t *conf, const hr_tls_options_t *o) {
  conf->no_tickets = o->no_tickets;
  conf->rotate_ms = o->ticket_rotate_ms ? o->ticket_rotate_ms : 12ull * 3600 * 1000;
  conf->cache_size = o->session_cache_size;
  return conf->no_tickets ? 0 : hr__tlsconf_rotate(conf);
}

/* Tickets and the session cache of a context built for `conf`. */
static int sessions_on(SSL_CTX *ctx, hr__tlsconf_t *conf) {
  static const unsigned char sid_ctx[] = "hroute";
  uv_once(&conf_index_once, make_conf_index);
  if (conf_index < 0 || SSL_CTX_set_ex_data(ctx, conf_index, conf) != 1) return -1;
  SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);
  if (conf->no_tickets)
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  else if (SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket) != 1)
    return -1;
  if (conf->cache_size < 0)
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  else if (conf->cache_size > 0)
    SSL_CTX_sess_set_cache_size(ctx, conf->cache_size);
  return 0;
}

int hr__tlsctx_build(const hr_tls_options_t *o, hr__tlsconf_t *conf, SSL_CTX **out) {
  SSL_CTX *ctx;
  char what[600], cert[280], key[280];
  int err = 0;
  if (o == NULL || out == NULL) return HR_EINVAL;
  if ((o->cert_file == NULL && (o->cert_pem == NULL || o->cert_pem_len == 0)) ||
      (o->key_file == NULL && (o->key_pem == NULL || o->key_pem_len == 0)))
    return hr__detail_set(HR_EINVAL, "TLS options: a certificate (cert_file or cert_pem) "
                                     "and a key (key_file or key_pem) are needed");
  ERR_clear_error(); /* the reasons below are this call's alone */
  ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == NULL) return HR_ENOMEM;
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, tls12_ciphers) != 1)
    err = tls_refused("TLS defaults (versions, ciphers)");
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_select, conf);
  if (conf != NULL) {
    SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
    SSL_CTX_set_tlsext_servername_arg(ctx, conf);
    if (err == 0 && sessions_on(ctx, conf) != 0) err = tls_refused("session resumption");
  }
  named(cert, sizeof cert, "certificate", o->cert_file);
  named(key, sizeof key, "key", o->key_file);
  if (err == 0 && (err = load_chain(ctx, o)) == HR_ETLS) tls_refused(cert);
  /* A key for another certificate: OpenSSL refuses it as it is loaded
   * ("key values mismatch"), or drops it then and finds no private key
   * at the check: say which two do not match. */
  snprintf(what, sizeof what, "%s does not match %s", key, cert);
  if (err == 0 && (err = load_key(ctx, o)) == HR_ETLS) tls_refused(mismatch() ? what : key);
  if (err == 0 && SSL_CTX_check_private_key(ctx) != 1) err = tls_refused(what);
  if (err == 0 && o->client_certs != HR_TLS_CLIENT_NONE) {
    if (o->client_certs != HR_TLS_CLIENT_OPTIONAL &&
        o->client_certs != HR_TLS_CLIENT_REQUIRED)
      err = HR_EINVAL;
    else if ((err = load_client_cas(ctx, o)) == HR_ETLS)
      tls_refused(named(what, sizeof what, "client CA", o->client_ca_file));
    SSL_CTX_set_verify(ctx,
                       SSL_VERIFY_PEER | (o->client_certs == HR_TLS_CLIENT_REQUIRED
                                              ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                                              : 0),
                       NULL);
  }
  if (err == 0 && o->ctx_setup != NULL && o->ctx_setup(ctx, o->ctx_udata) != 0)
    err = tls_refused("the ctx_setup callback");
  ERR_clear_error(); /* OpenSSL's error queue is per thread: leave it clean */
  if (err != 0) {
    SSL_CTX_free(ctx);
    return err;
  }
  HR__TLS_BUILT(ctx); /* complete: what its publication must order */
  *out = ctx;
  return 0;
}

void hr__tlsconf_init(hr__tlsconf_t *conf, hr__mem_t *mem) {
  uv_mutex_init(&conf->lock);
  conf->mem = mem;
  atomic_init(&conf->ctx, NULL);
  atomic_init(&conf->names, NULL);
  atomic_init(&conf->used_call_rcu, 0);
  atomic_init(&conf->tickets, NULL);
  conf->tickets_serial = 0;
  conf->rotate_ms = 12ull * 3600 * 1000;
  conf->cache_size = 0;
  conf->no_tickets = 0;
  conf->h2 = 0;
}

void hr__tlsconf_set_default(hr__tlsconf_t *conf, SSL_CTX *ctx) {
  atomic_store_explicit(&conf->ctx, ctx, memory_order_release);
}

/* What a replacement retires: a context, or a names table with the
 * references it holds (a new table takes references of its own). */
typedef struct retired_s {
  hr__rcu_head_t rcu;
  SSL_CTX *ctx;
  hr__tlsnames_t *names;
  const hr_allocator_t *alloc; /* the server's allocator (see a_free) */
} retired_t;

static void free_retired(retired_t *r) {
  size_t i;
  HR__TLS_UNREF(r->ctx);
  SSL_CTX_free(r->ctx);
  if (r->names != NULL) {
    for (i = 0; i < r->names->n; i++) {
      HR__TLS_UNREF(r->names->e[i].ctx);
      SSL_CTX_free(r->names->e[i].ctx);
    }
    a_free(r->alloc, r->names);
  }
}

static void reclaim(struct rcu_head *h) {
  retired_t *r = caa_container_of(h, retired_t, rcu.head);
  HR__CB_BEGIN(h); /* the queue, and every reader that could have loaded it is done */
  free_retired(r);
  a_free(r->alloc, r);
  HR__CB_DONE();
}

/* Frees `r`'s objects once no reader can hold them.  Called WITHOUT
 * conf->lock: waiting for a grace period while holding it would deadlock
 * with a reader that takes it, that is, a handler (inside its connection's
 * read-side section) calling hr_server_tls_update: this thread would wait
 * for the handler's section to end, the handler for the lock. */
static void retire(hr__tlsconf_t *conf, retired_t *r) {
  if (r->ctx == NULL && r->names == NULL) return;
  if (urcu_bp_read_ongoing()) {
    /* Called inside a read-side section (a handler): waiting for a grace
     * period here would wait for ourselves. */
    retired_t *q = hr__mem_alloc(conf->mem, sizeof(*q));
    if (q == NULL) return; /* leak it rather than free it under a reader */
    *q = *r;
    q->alloc = conf->mem->a;
    atomic_store_explicit(&conf->used_call_rcu, 1, memory_order_relaxed);
    hr__call_rcu(&q->rcu, reclaim);
    return;
  }
  HR__TP(HR__TP_TLS_RETIRE_WAIT, conf);
  hr__synchronize_rcu();
  r->alloc = conf->mem->a;
  free_retired(r);
}

void hr__tlsconf_replace(hr__tlsconf_t *conf, SSL_CTX *ctx) {
  retired_t r;
  memset(&r, 0, sizeof(r));
  uv_mutex_lock(&conf->lock);
  /* Release: pairs with the acquire load in hr__tlsconf_new_ssl, so a
   * reader sees the context complete. */
  r.ctx = atomic_exchange_explicit(&conf->ctx, ctx, memory_order_acq_rel);
  uv_mutex_unlock(&conf->lock);
  retire(conf, &r);
}

int hr__tlsconf_set_name(hr__tlsconf_t *conf, const char *name, SSL_CTX *ctx) {
  hr__tlsnames_t *old, *nt;
  retired_t r;
  char key[256];
  size_t i, n, at;
  if (name_norm(key, name) != 0) {
    SSL_CTX_free(ctx);
    return HR_EINVAL;
  }
  uv_mutex_lock(&conf->lock);
  old = atomic_load_explicit(&conf->names, memory_order_relaxed);
  n = old != NULL ? old->n : 0;
  for (at = 0; at < n && strcmp(old->e[at].name, key) != 0; at++)
    ;
  nt = hr__mem_alloc(conf->mem, sizeof(*nt) + (n + (at == n)) * sizeof(nt->e[0]));
  if (nt == NULL) {
    uv_mutex_unlock(&conf->lock);
    SSL_CTX_free(ctx);
    return HR_ENOMEM;
  }
  /* A complete new table with references of its own, then one release
   * store (pairs with the acquire load in on_servername); the old table
   * and its references go after a grace period. */
  nt->n = n + (at == n);
  for (i = 0; i < n; i++) {
    nt->e[i] = old->e[i];
    if (i != at) SSL_CTX_up_ref(old->e[i].ctx);
  }
  memcpy(nt->e[at].name, key, sizeof key);
  nt->e[at].ctx = ctx;
  atomic_store_explicit(&conf->names, nt, memory_order_release);
  uv_mutex_unlock(&conf->lock);
  memset(&r, 0, sizeof(r));
  r.names = old;
  retire(conf, &r);
  return 0;
}

SSL *hr__tlsconf_new_ssl(hr__tlsconf_t *conf) {
  SSL_CTX *ctx;
  SSL *ssl;
  hr__rcu_read_lock();
  /* Acquire: pairs with the release in hr__tlsconf_replace. */
  ctx = atomic_load_explicit(&conf->ctx, memory_order_acquire);
  HR__TLS_USED(ctx);
  ssl = SSL_new(ctx);
  hr__rcu_read_unlock();
  HR__TP(HR__TP_TLS_NEW_SSL, conf);
  return ssl;
}

void hr__tlsconf_free(hr__tlsconf_t *conf) {
  retired_t r;
  hr__tickets_t *tk = atomic_load_explicit(&conf->tickets, memory_order_relaxed);
  /* Inside a read-side section (a handler freeing a server of its own) no
   * barrier can run (liburcu's returns at once): the callbacks still
   * queued then run later, and use only the allocator. */
  if (atomic_load_explicit(&conf->used_call_rcu, memory_order_relaxed) &&
      !urcu_bp_read_ongoing())
    hr__rcu_barrier();
  if (tk != NULL) {
    OPENSSL_cleanse(tk->key, sizeof tk->key);
    hr__mem_free(conf->mem, tk);
  }
  memset(&r, 0, sizeof(r));
  r.ctx = atomic_load_explicit(&conf->ctx, memory_order_relaxed);
  r.names = atomic_load_explicit(&conf->names, memory_order_relaxed);
  r.alloc = conf->mem->a;
  free_retired(&r);
  uv_mutex_destroy(&conf->lock);
}
