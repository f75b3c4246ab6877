/* SPDX-License-Identifier: MIT */
/*
 * TLS test support: self-signed ECDSA P-256 certificates made in memory at
 * test time (no key is ever committed), and a blocking OpenSSL client over
 * loopback with the same hard timeouts as the raw client.
 */
#ifndef HR_TEST_TLSFX_H
#define HR_TEST_TLSFX_H

#include <stddef.h>
#include <openssl/ssl.h>

#include <hroute.h>

/* A certificate for `cn` (also its subjectAltName DNS name, plus IP
 * 127.0.0.1) and its key, as PEM text.  Returns 0 or -1. */
typedef struct tf_cert_s {
  char *cert_pem;
  size_t cert_len;
  char *key_pem;
  size_t key_len;
} tf_cert_t;
int tf_cert_make(tf_cert_t *c, const char *cn);
/* The same, issued by `ca` (a certificate made by tf_cert_make). */
int tf_cert_make_signed(tf_cert_t *c, const char *cn, const tf_cert_t *ca);
/* When set, tf_connect presents this certificate (mutual TLS). */
extern const tf_cert_t *tf_client_cert;
/* When set, tf_connect offers this session for resumption. */
extern SSL_SESSION *tf_resume;
/* When set, the client asks for no tickets (session-ID resumption). */
extern int tf_no_ticket;
/* When set, tf_connect first sends these bytes in the clear (a PROXY
 * protocol header): in one write with the ClientHello, or, with
 * tf_preface_apart, in a write of their own before it. */
extern const char *tf_preface;
extern size_t tf_preface_len;
extern int tf_preface_apart;
void tf_cert_free(tf_cert_t *c);
/* The two self-signed certificates most TLS tests use: CN "localhost"
 * into *a and CN "second.test" into *b.  0 or -1 (both freed). */
int tf_cert_pair(tf_cert_t *a, tf_cert_t *b);
void tf_cert_pair_free(tf_cert_t *a, tf_cert_t *b);
/* TLS listener options (hr_tls_options_init) presenting `c`; they borrow
 * its PEM, which must outlive them. */
void tf_tls_options(hr_tls_options_t *o, const tf_cert_t *c);

/* A client connection.  `max_version` 0 or TLS1_2_VERSION...; `alpn` NULL
 * or a wire-format list ("\x08http/1.1"); `sni` NULL or a host name. */
typedef struct tf_conn_s {
  int fd;
  SSL_CTX *ctx;
  SSL *ssl;
  int reused; /* the handshake resumed tf_resume */
} tf_conn_t;
/* Connects and completes the handshake, trusting `trust` (and `trust2`
 * unless NULL).  Returns 0, or -1 (connection failed or handshake refused;
 * *c is then closed). */
int tf_connect(tf_conn_t *c, int port, const tf_cert_t *trust,
               const tf_cert_t *trust2, int max_version, const char *alpn,
               size_t alpn_len, const char *sni);
int tf_write(tf_conn_t *c, const void *p, size_t n); /* 0 or -1 */
/* Reads one response with a Content-Length body into buf (NUL-terminated);
 * returns its length, or -1. */
long tf_read_response(tf_conn_t *c, char *buf, size_t cap);
/* The subject CN of the server's certificate into out; 0 or -1. */
int tf_peer_cn(tf_conn_t *c, char *out, size_t cap);
void tf_close(tf_conn_t *c);

#endif
