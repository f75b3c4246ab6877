/* SPDX-License-Identifier: MIT */
/*
 * TLS contexts (tlsctx.c): building an OpenSSL SSL_CTX from a listener's
 * options with hroute's defaults, and publishing it so that the loops'
 * handshakes always see a complete one while hr_server_tls_update replaces
 * it.
 *
 * Publication: `ctx` is written by one release store (writers serialised
 * by `lock`) and read with an acquire load inside an RCU read-side
 * critical section, in which the reader takes its own reference
 * (SSL_new holds one on its context).  The reference the old pointer held
 * is dropped after a grace period, so no reader can take a reference on a
 * freed context.
 */
#ifndef HR_SERVER_TLSCTX_H
#define HR_SERVER_TLSCTX_H

#include <stdatomic.h>
#include <openssl/ssl.h>
#include <urcu/urcu-bp.h>
#include <uv.h>

#include "hroute/tls.h"
#include "util/mem.h"
#include "util/rcu.h"

/* ThreadSanitizer cannot see into OpenSSL (not instrumented), so in TSan
 * builds hroute tells it what a context's publication must order: the
 * builder's writes (HR__TLS_BUILT, one annotated write of the context's
 * first word once it is complete) against every handshake's use
 * (HR__TLS_USED, an annotated read after the acquire load).  A relaxed
 * publication then shows as a race.  Since OpenSSL's reference counts are
 * unseen too, every reference hroute drops on a context releases that
 * context's address (HR__TLS_UNREF(ctx), before SSL_free and
 * SSL_CTX_free) and the context's ex_data free callback, which runs when
 * the last one goes, acquires it: the free happens after every use made
 * by a holder of a reference.  Per context: one address for all of them
 * ordered every drop anywhere before every context's free, a TLS client's
 * own contexts in the same process included. */
#ifdef HR__TSAN
void __tsan_read8(void *addr);
void __tsan_write8(void *addr);
#define HR__TLS_BUILT(ctx) __tsan_write8(ctx)
#define HR__TLS_USED(ctx) __tsan_read8(ctx)
#define HR__TLS_UNREF(ctx)                  \
  do {                                      \
    SSL_CTX *hr__unref_ctx = (ctx);         \
    if (hr__unref_ctx != NULL) __tsan_release(hr__unref_ctx); \
  } while (0)
#else
#define HR__TLS_BUILT(ctx) ((void)(ctx))
#define HR__TLS_USED(ctx) ((void)(ctx))
#define HR__TLS_UNREF(ctx) ((void)(ctx))
#endif

/* The certificates a listener has by server name (SNI, RFC 6066 §3):
 * an immutable snapshot, published like the default context. */
typedef struct hr__tlsname_s {
  char name[256]; /* lowercase, no trailing dot; "*.example.com" for a wildcard */
  SSL_CTX *ctx;   /* one reference */
} hr__tlsname_t;

typedef struct hr__tlsnames_s {
  size_t n;
  hr__tlsname_t e[];
} hr__tlsnames_t;

/* Session-ticket keys: the current one seals, both open.  Immutable once
 * published. */
typedef struct hr__tkey_s {
  unsigned char name[16];
  unsigned char aes[32];
  unsigned char hmac[32];
} hr__tkey_t;

typedef struct hr__tickets_s {
  hr__rcu_head_t rcu;
  hr__tkey_t key[2]; /* [0] current, [1] previous */
  int nkeys;         /* 1 or 2 */
  uint64_t created;  /* uv_hrtime() / 1e6 when made */
  uint64_t serial;   /* which publication made it: 1, 2, ... (see rotate_if) */
  /* Frees it: the server's allocator itself, not the server's hr__mem_t,
   * since a call_rcu callback may run after hr_server_free (one called
   * inside a read-side section cannot wait for it). */
  const hr_allocator_t *alloc;
} hr__tickets_t;

typedef struct hr__tlsconf_s {
  _Atomic(SSL_CTX *) ctx; /* published; see above */
  _Atomic(hr__tlsnames_t *) names; /* published the same way; may be NULL */
  uv_mutex_t lock;        /* serialises replacements */
  _Atomic(hr__tickets_t *) tickets; /* published; NULL: no tickets */
  uint64_t tickets_serial; /* the last publication's serial (under `lock`) */
  uint64_t rotate_ms;     /* ticket key lifetime */
  long cache_size;        /* TLS 1.2 session cache: 0 default, -1 none */
  int no_tickets;
  int h2;                 /* ALPN offers "h2" (set before the first context) */
  _Atomic int used_call_rcu; /* hr__tlsconf_free waits for reclamations */
  hr__mem_t *mem;         /* the server's allocator */
} hr__tlsconf_t;

/* Builds a context from `o` for `conf` (its server-name callback picks the
 * certificate from conf's names).  Returns 0 and stores it, or HR_EINVAL,
 * HR_ETLS, HR_ENOMEM; an HR_ETLS records the thread's error detail
 * (util/detail.h): which file or setting, and OpenSSL's reasons. */
int hr__tlsctx_build(const hr_tls_options_t *o, struct hr__tlsconf_s *conf,
                     SSL_CTX **out);

/* Initialises `conf` with `ctx` (the reference passes to it).  Returns 0
 * or HR_ENOMEM. */
void hr__tlsconf_init(hr__tlsconf_t *conf, hr__mem_t *mem);
/* Publishes the first default context (the reference passes to conf). */
void hr__tlsconf_set_default(hr__tlsconf_t *conf, SSL_CTX *ctx);
/* Publishes `ctx` (its reference passes to `conf`) and reclaims the old
 * one after a grace period.  Any thread. */
void hr__tlsconf_replace(hr__tlsconf_t *conf, SSL_CTX *ctx);
/* Publishes `ctx` as the certificate for server name `name` (added, or
 * replacing the one it had).  Returns 0, HR_EINVAL (not a host name),
 * HR_ENOMEM (ctx is then freed).  Any thread. */
int hr__tlsconf_set_name(hr__tlsconf_t *conf, const char *name, SSL_CTX *ctx);
/* Sets up tickets and the session cache from `o` (listen time).  Returns
 * 0, HR_ENOMEM, HR_ETLS. */
int hr__tlsconf_sessions(hr__tlsconf_t *conf, const hr_tls_options_t *o);
/* Publishes new ticket keys, the current one becoming the previous.
 * Returns 0, HR_ENOMEM, HR_ETLS.  Any thread. */
int hr__tlsconf_rotate(hr__tlsconf_t *conf);
/* A new server-side SSL on the published context, or NULL.  Loop thread. */
SSL *hr__tlsconf_new_ssl(hr__tlsconf_t *conf);
/* Drops the published context; waits for pending reclamations, except
 * inside a read-side section, where none can be waited for: those run
 * later, on liburcu's call_rcu thread, and need only the allocator. */
void hr__tlsconf_free(hr__tlsconf_t *conf);

#endif /* HR_SERVER_TLSCTX_H */
