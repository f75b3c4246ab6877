/* SPDX-License-Identifier: MIT */
/** @file
 * HTTPS (HTTP/1.1 over TLS 1.2 and 1.3, RFC 8446, RFC 9110 §4.2.2): TLS
 * listeners, their certificates, and replacing a certificate while the
 * server runs.  TLS is a transport like TCP: everything the server does on
 * a plain connection (strictness checks, pipelining, limits and timeouts)
 * applies unchanged; the handshake counts against the header timeout.
 *
 * What handshakes use is an immutable, atomically published context per
 * listener (an OpenSSL SSL_CTX): hr_server_tls_update() builds and checks a
 * new one, publishes it with one release store, and frees the old one after
 * a grace period, as route tables are.  Handshakes under way finish with the
 * context they started with; established connections are not touched.
 *
 * Protocol defaults, close to the widely used "intermediate" server
 * profile: TLS 1.2 and 1.3 only; TLS 1.2 with ECDHE and AEAD ciphers only
 * (AES-GCM, ChaCha20-Poly1305); renegotiation refused; ALPN "http/1.1"
 * (a client offering only other protocols, such as "h2", gets the
 * no_application_protocol alert); compression off; OpenSSL's read and write
 * buffers released while a connection is idle.  A plain HTTP request sent
 * to a TLS port is answered with a 400 in plain text and closed, as nginx
 * does.
 */
#ifndef HROUTE_TLS_H
#define HROUTE_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "server.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Certificate and settings of a TLS listener; initialise with
 * hr_tls_options_init().  Certificate and key come from PEM files or from
 * PEM text in memory (a file name, when set, wins).  Everything is read and
 * copied by the call it is passed to; nothing is kept. */
typedef struct hr_tls_options_s {
  /** The certificate chain: the server's certificate first, then the
   * intermediates (PEM).  Required. */
  const char *cert_file;
  const char *cert_pem; /**< or the chain as PEM text in memory (cert_file NULL) */
  size_t cert_pem_len;  /**< bytes of cert_pem */
  /** Its private key (PEM, unencrypted).  Required; must match. */
  const char *key_file;
  const char *key_pem; /**< or the key as PEM text in memory (key_file NULL) */
  size_t key_pem_len;  /**< bytes of key_pem */
  /** Called with the new SSL_CTX * (as void *) after hroute's defaults are
   * set and before it is published, to change what the host wants
   * (ciphers, curves, session settings).  Returns 0, or non-zero to refuse
   * the context (the call then returns HR_ETLS).  Called on the thread
   * that made the call, once per context built.  May be NULL. */
  int (*ctx_setup)(void *ssl_ctx, void *udata);
  void *ctx_udata; /**< passed to ctx_setup unchanged */
  /** Client certificates (mutual TLS): HR_TLS_CLIENT_NONE (default: none
   * asked for), HR_TLS_CLIENT_OPTIONAL (asked for; a client may send none,
   * but one it sends must verify), HR_TLS_CLIENT_REQUIRED (the handshake
   * fails without a certificate that verifies). */
  int client_certs;
  /** The CAs client certificates must chain to (PEM, one or more); required
   * unless client_certs is HR_TLS_CLIENT_NONE. */
  const char *client_ca_file;
  const char *client_ca_pem; /**< or as PEM text in memory (client_ca_file NULL) */
  size_t client_ca_pem_len;  /**< bytes of client_ca_pem */
  /** Session resumption.  Tickets (RFC 8446 §4.6.1, RFC 5077) are sealed
   * with keys the listener keeps across certificate replacements and
   * rotates every ticket_rotate_ms milliseconds (0: 12 hours), keeping the
   * previous key for tickets issued before; set no_tickets to issue none.
   * session_cache_size bounds the TLS 1.2 session-ID cache (entries; 0:
   * OpenSSL's default of 20480; -1: no cache).  Only the listener's
   * hr_server_listen_tls call reads these; hr_server_tls_update keeps
   * them. */
  int no_tickets;
  uint64_t ticket_rotate_ms; /**< ms between ticket key rotations; 0: 12 hours */
  long session_cache_size;   /**< TLS 1.2 session-ID cache entries; 0: 20480; -1: none */
} hr_tls_options_t;

/** hr_tls_options_t.client_certs: no client certificate is asked for (the
 * default). */
#define HR_TLS_CLIENT_NONE 0
/** hr_tls_options_t.client_certs: a certificate is asked for; a client may
 * send none, but one it sends must verify against the client CAs. */
#define HR_TLS_CLIENT_OPTIONAL 1
/** hr_tls_options_t.client_certs: the handshake fails without a client
 * certificate that verifies against the client CAs. */
#define HR_TLS_CLIENT_REQUIRED 2

/** Fills `opts` with no certificate and no setup callback. */
HR_EXTERN void hr_tls_options_init(hr_tls_options_t *opts);

/**
 * Adds a TLS listening address, as hr_server_listen() does for TCP
 * (a numeric `host` or a name, resolved there; `port` 0 picks a free
 * one), with the certificate of
 * `opts`, which is loaded and checked now (the key must match the
 * certificate).  Call before hr_server_attach / hr_server_start.  Its
 * index (for hr_server_port and hr_server_tls_update) is its place among
 * all hr_server_listen* calls.  Returns 0, HR_EINVAL (bad address, port,
 * missing certificate or key, or already started), HR_ETLS (a file that
 * cannot be read, PEM that does not parse, a key that does not match, a
 * setup callback that refused), a getaddrinfo code (hr_server_listen),
 * HR_ENOMEM.  An HR_ETLS records its detail (hr_error_detail): the file
 * (or "certificate (PEM in memory)") and OpenSSL's reasons, oldest first:
 * "certificate file \"c.pem\": No such file or directory; system lib",
 * "key file \"k.pem\" does not match certificate file \"c.pem\": key
 * values mismatch".  Any thread.
 */
HR_EXTERN int hr_server_listen_tls(hr_server_t *server, const char *host,
                                   int port, const hr_tls_options_t *opts);

/**
 * Replaces the certificate of TLS listener `index` while the server runs
 * (or before it starts): the new material is loaded and checked first; on
 * any error the old certificate stays in force and nothing changes.  New
 * handshakes use the new certificate once this returns.  Any thread, any
 * time, a handler included (inside a read-side section the old certificate
 * is reclaimed later by liburcu's call_rcu thread; elsewhere this call
 * waits for a grace period, with no lock held, before it returns); calls
 * for one listener are serialised only while the new context is swapped
 * in.  Returns 0, HR_EINVAL (no TLS
 * listener at `index`, missing certificate or key), HR_ETLS (as for
 * hr_server_listen_tls, with the same detail), HR_ENOMEM.
 */
HR_EXTERN int hr_server_tls_update(hr_server_t *server, size_t index,
                                   const hr_tls_options_t *opts);

/**
 * Adds (or replaces) the certificate TLS listener `index` presents to
 * clients that ask for server name `name` (SNI, RFC 6066 §3): a host name
 * ("api.example.com") or a wildcard for one label ("*.example.com"),
 * compared without case and without a trailing dot, as the router's host
 * tables are.  Clients that ask for another name, or for none, get the
 * listener's default certificate.  Published and reclaimed like
 * hr_server_tls_update; any thread, any time.  Returns 0, HR_EINVAL (no
 * TLS listener at `index`, not a host name, missing certificate or key),
 * HR_ETLS (with its detail, as for hr_server_listen_tls), HR_ENOMEM.
 */
HR_EXTERN int hr_server_tls_add_name(hr_server_t *server, size_t index,
                                     const char *name,
                                     const hr_tls_options_t *opts);

/**
 * Rotates the session-ticket keys of TLS listener `index` now: new tickets
 * are sealed with a new key; tickets sealed with the key before it are
 * still accepted (and renewed), older ones are not.  The keys are published
 * like a route table.  Any thread.  Returns 0, HR_EINVAL (no TLS listener
 * at `index`), HR_ENOMEM, HR_ETLS (no randomness).
 */
HR_EXTERN int hr_server_tls_rotate_tickets(hr_server_t *server, size_t index);

/** What a TLS connection negotiated, for handlers (hr_request_tls). */
typedef struct hr_tls_info_s {
  const char *version;  /**< "TLSv1.3", "TLSv1.2" (static storage) */
  const char *cipher;   /**< the OpenSSL cipher name (static storage) */
  hr_span_t alpn;       /**< "http/1.1", or empty when the client sent none */
  hr_span_t sni;        /**< the server name the client asked for, or empty */
  int resumed;          /**< 1 when the session was resumed */
} hr_tls_info_t;

/**
 * Fills *info for a request that came over TLS.  Spans are valid until the
 * response completes.  Returns 0, or HR_ENOTFOUND (not a TLS connection,
 * or the connection is gone).  Loop thread.
 */
HR_EXTERN int hr_request_tls(const hr_request_t *req, hr_tls_info_t *info);

/** Formats for hr_request_tls_client.  HR_TLS_PEM: text, base64 between
 * "-----BEGIN CERTIFICATE-----" and "-----END CERTIFICATE-----" lines. */
#define HR_TLS_PEM 0
/** Format for hr_request_tls_client: DER, the certificate's binary
 * encoding. */
#define HR_TLS_DER 1

/**
 * The verified client certificate of a mutual-TLS connection: its subject
 * in RFC 2253 form ("CN=client,O=Example") in *subject and the certificate
 * itself, PEM or DER (`format`), in *cert (either may be NULL).  Both are
 * allocated in the request's arena and valid until the response completes.
 * Returns 0, HR_ENOTFOUND (not TLS, no certificate sent, or the connection
 * is gone), HR_EINVAL, HR_ENOMEM.  Loop thread.
 */
HR_EXTERN int hr_request_tls_client(hr_request_t *req, int format,
                                    hr_span_t *subject, hr_span_t *cert);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_TLS_H */
