/* SPDX-License-Identifier: MIT */
/*
 * TLS test support (see tlsfx.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "rawclient.h"
#include "tlsfx.h"

const tf_cert_t *tf_client_cert;
SSL_SESSION *tf_resume;
int tf_no_ticket;
const char *tf_preface;
size_t tf_preface_len;
int tf_preface_apart;

/* Sends tf_preface in the clear, then the ClientHello: with the preface in
 * one write unless tf_preface_apart (the ClientHello is made into a
 * memory BIO first, then the socket takes over the handshake).  0 or -1. */
static int send_preface(tf_conn_t *c) {
  BIO *rb, *wb, *sb;
  char *hello, *both;
  long n;
  int ok;
  if (tf_preface_apart) {
    return send(c->fd, tf_preface, tf_preface_len, MSG_NOSIGNAL) == (ssize_t)tf_preface_len ? 0
                                                                                          : -1;
  }
  rb = BIO_new(BIO_s_mem());
  wb = BIO_new(BIO_s_mem());
  if (rb == NULL || wb == NULL) {
    BIO_free(rb);
    BIO_free(wb);
    return -1;
  }
  SSL_set_bio(c->ssl, rb, wb);
  if (SSL_connect(c->ssl) == 1 || (n = BIO_get_mem_data(wb, &hello)) <= 0) return -1;
  if ((both = malloc(tf_preface_len + (size_t)n)) == NULL) return -1;
  memcpy(both, tf_preface, tf_preface_len);
  memcpy(both + tf_preface_len, hello, (size_t)n);
  ok = send(c->fd, both, tf_preface_len + (size_t)n, MSG_NOSIGNAL) ==
       (ssize_t)(tf_preface_len + (size_t)n);
  free(both);
  if (!ok || (sb = BIO_new_socket(c->fd, BIO_NOCLOSE)) == NULL) return -1;
  SSL_set_bio(c->ssl, sb, sb); /* frees the memory BIOs */
  return 0;
}

static char *bio_text(BIO *b, size_t *len) {
  char *p;
  long n = BIO_get_mem_data(b, &p);
  char *out = malloc((size_t)n + 1);
  if (out == NULL) return NULL;
  memcpy(out, p, (size_t)n);
  out[n] = '\0';
  *len = (size_t)n;
  return out;
}

static int add_ext(X509 *x, int nid, const char *value) {
  X509V3_CTX ctx;
  X509_EXTENSION *e;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
  e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  if (e == NULL) return -1;
  X509_add_ext(x, e, -1);
  X509_EXTENSION_free(e);
  return 0;
}

static EVP_PKEY *read_key(const tf_cert_t *c) {
  BIO *b = BIO_new_mem_buf(c->key_pem, (int)c->key_len);
  EVP_PKEY *k = b != NULL ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  return k;
}

static X509 *read_cert(const tf_cert_t *c) {
  BIO *b = BIO_new_mem_buf(c->cert_pem, (int)c->cert_len);
  X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  return x;
}

int tf_cert_make(tf_cert_t *c, const char *cn) { return tf_cert_make_signed(c, cn, NULL); }

int tf_cert_make_signed(tf_cert_t *c, const char *cn, const tf_cert_t *ca) {
  EVP_PKEY *k = EVP_EC_gen("P-256"), *ca_key = NULL;
  X509 *ca_cert = NULL;
  X509 *x = X509_new();
  BIO *bc = BIO_new(BIO_s_mem()), *bk = BIO_new(BIO_s_mem());
  char san[300];
  int rc = -1;
  memset(c, 0, sizeof(*c));
  if (k == NULL || x == NULL || bc == NULL || bk == NULL) goto out;
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(random() & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, k);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             (const unsigned char *)cn, -1, -1, 0);
  if (ca != NULL) {
    ca_key = read_key(ca);
    ca_cert = read_cert(ca);
    if (ca_key == NULL || ca_cert == NULL) goto out;
    X509_set_issuer_name(x, X509_get_subject_name(ca_cert));
  } else {
    X509_set_issuer_name(x, X509_get_subject_name(x));
  }
  snprintf(san, sizeof san, "DNS:%s,IP:127.0.0.1", cn);
  if (add_ext(x, NID_subject_alt_name, san) != 0) goto out;
  if (add_ext(x, NID_basic_constraints, ca != NULL ? "critical,CA:FALSE" : "critical,CA:TRUE") != 0)
    goto out;
  if (X509_sign(x, ca_key != NULL ? ca_key : k, EVP_sha256()) == 0) goto out;
  if (PEM_write_bio_X509(bc, x) != 1 ||
      PEM_write_bio_PrivateKey(bk, k, NULL, NULL, 0, NULL, NULL) != 1)
    goto out;
  c->cert_pem = bio_text(bc, &c->cert_len);
  c->key_pem = bio_text(bk, &c->key_len);
  rc = c->cert_pem != NULL && c->key_pem != NULL ? 0 : -1;
out:
  BIO_free(bc);
  BIO_free(bk);
  X509_free(x);
  X509_free(ca_cert);
  EVP_PKEY_free(k);
  EVP_PKEY_free(ca_key);
  return rc;
}

void tf_cert_free(tf_cert_t *c) {
  free(c->cert_pem);
  free(c->key_pem);
  memset(c, 0, sizeof(*c));
}

static int trust_cert(SSL_CTX *ctx, const tf_cert_t *t) {
  BIO *b = BIO_new_mem_buf(t->cert_pem, (int)t->cert_len);
  X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
  int ok = x != NULL && X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), x) == 1;
  X509_free(x);
  BIO_free(b);
  return ok ? 0 : -1;
}

int tf_connect(tf_conn_t *c, int port, const tf_cert_t *trust,
               const tf_cert_t *trust2, int max_version, const char *alpn,
               size_t alpn_len, const char *sni) {
  struct sockaddr_in sa;
  struct timeval tv = {RC_TIMEOUT_MS / 1000, (RC_TIMEOUT_MS % 1000) * 1000};
  memset(c, 0, sizeof(*c));
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (c->fd < 0) return -1;
  setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->ctx = SSL_CTX_new(TLS_client_method());
  if (c->ctx == NULL || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      trust_cert(c->ctx, trust) != 0 ||
      (trust2 != NULL && trust_cert(c->ctx, trust2) != 0))
    goto fail;
  SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
  if (max_version) SSL_CTX_set_max_proto_version(c->ctx, max_version);
  if (alpn != NULL && SSL_CTX_set_alpn_protos(c->ctx, (const unsigned char *)alpn,
                                              (unsigned)alpn_len) != 0)
    goto fail;
  if (tf_client_cert != NULL) {
    EVP_PKEY *k = read_key(tf_client_cert);
    X509 *x = read_cert(tf_client_cert);
    int ok = k != NULL && x != NULL && SSL_CTX_use_certificate(c->ctx, x) == 1 &&
             SSL_CTX_use_PrivateKey(c->ctx, k) == 1;
    X509_free(x);
    EVP_PKEY_free(k);
    if (!ok) goto fail;
  }
  c->ssl = SSL_new(c->ctx);
  if (c->ssl == NULL) goto fail;
  if (sni != NULL) SSL_set_tlsext_host_name(c->ssl, sni);
  if (tf_no_ticket) SSL_set_options(c->ssl, SSL_OP_NO_TICKET);
  if (tf_resume != NULL) SSL_set_session(c->ssl, tf_resume);
  SSL_set_fd(c->ssl, c->fd);
  if (tf_preface != NULL && send_preface(c) != 0) goto fail;
  if (SSL_connect(c->ssl) != 1) goto fail;
  c->reused = SSL_session_reused(c->ssl) == 1;
  return 0;
fail:
  tf_close(c);
  return -1;
}

int tf_write(tf_conn_t *c, const void *p, size_t n) {
  return SSL_write(c->ssl, p, (int)n) == (int)n ? 0 : -1;
}

long tf_read_response(tf_conn_t *c, char *buf, size_t cap) {
  size_t len = 0;
  for (;;) {
    char *end;
    int n;
    buf[len] = '\0';
    end = strstr(buf, "\r\n\r\n");
    if (end != NULL) {
      const char *cl = strcasestr(buf, "\r\nContent-Length:");
      size_t need = (size_t)(end + 4 - buf) + (cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
      if (len >= need) return (long)len;
    }
    if (len + 1 >= cap) return -1;
    n = SSL_read(c->ssl, buf + len, (int)(cap - 1 - len));
    if (n <= 0) return -1;
    len += (size_t)n;
  }
}

int tf_peer_cn(tf_conn_t *c, char *out, size_t cap) {
  X509 *x = SSL_get1_peer_certificate(c->ssl);
  int n;
  if (x == NULL) return -1;
  n = X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out, (int)cap);
  X509_free(x);
  return n > 0 ? 0 : -1;
}

void tf_close(tf_conn_t *c) {
  /* A clean close_notify: an SSL freed without one makes its session
   * unresumable. */
  if (c->ssl != NULL) {
    if (SSL_is_init_finished(c->ssl)) SSL_shutdown(c->ssl);
    SSL_free(c->ssl);
  }
  if (c->ctx != NULL) SSL_CTX_free(c->ctx);
  if (c->fd > 0) close(c->fd);
  memset(c, 0, sizeof(*c));
  c->fd = -1;
  ERR_clear_error();
}

int tf_cert_pair(tf_cert_t *a, tf_cert_t *b) {
  if (tf_cert_make(a, "localhost") != 0) return -1;
  if (tf_cert_make(b, "second.test") != 0) {
    tf_cert_free(a);
    return -1;
  }
  return 0;
}

void tf_cert_pair_free(tf_cert_t *a, tf_cert_t *b) {
  tf_cert_free(a);
  tf_cert_free(b);
}

void tf_tls_options(hr_tls_options_t *o, const tf_cert_t *c) {
  hr_tls_options_init(o);
  o->cert_pem = c->cert_pem;
  o->cert_pem_len = c->cert_len;
  o->key_pem = c->key_pem;
  o->key_pem_len = c->key_len;
}
