/* SPDX-License-Identifier: MIT */
/*
 * bench_tls_state: what OpenSSL itself keeps for one idle server SSL, the
 * part of an idle TLS connection's memory that no server built on OpenSSL
 * can give back (docs/architecture.md quotes its output).
 *
 *   bench_tls_state CERT.pem KEY.pem [1.2]
 *
 * It counts every OpenSSL allocation (CRYPTO_set_mem_functions, with the
 * usable size malloc gave and the call stack at the time), makes N server
 * SSLs with SSL_MODE_RELEASE_BUFFERS as hroute's contexts do, each talking
 * to a client SSL over a BIO pair: a full handshake (TLS 1.3, or 1.2 with
 * the third argument), one request and one response, then a read that
 * finds nothing (the keep-alive wait).  The clients are then cut off and
 * the servers freed: what SSL_free gives back is the idle state.  It
 * prints bytes and allocations per server SSL, in total and by allocation
 * site (the first frames with an exported symbol; libssl's own static
 * functions show as "?").  The BIO pair is left out of the total: hroute's
 * BIO holds no buffer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

enum { DEPTH = 8, SLOTS = 1 << 20, SITES = 4096, CONNS = 50 };

typedef struct live_s {
  void *p; /* NULL: empty; TOMB: freed */
  void *stack[DEPTH];
  int depth;
} live_t;

typedef struct site_s {
  char where[512];
  long bytes, count;
} site_t;

static live_t table[SLOTS];
static site_t sites[SITES];
static int nsites, counting, collecting;
static char tomb;
#define TOMB ((void *)&tomb)

static size_t slot_of(void *p) {
  return (size_t)(((uintptr_t)p >> 4) * 2654435761u) & (SLOTS - 1);
}

static live_t *lookup(void *p) {
  size_t i = slot_of(p);
  for (; table[i].p != NULL; i = (i + 1) & (SLOTS - 1))
    if (table[i].p == p) return &table[i];
  return NULL;
}

static live_t *insert(void *p) {
  size_t i = slot_of(p);
  while (table[i].p != NULL && table[i].p != TOMB) i = (i + 1) & (SLOTS - 1);
  table[i].p = p;
  return &table[i];
}

/* Adds a freed allocation to its site: frames 2..6 (past the allocator
 * and CRYPTO_malloc), named by the nearest exported symbol. */
static void collect(live_t *l) {
  char where[512];
  int i, off = 0;
  where[0] = '\0';
  for (i = 2; i < l->depth && i < 7 && off < (int)sizeof where - 64; i++) {
    Dl_info di;
    const char *name = "?";
    long delta = 0;
    if (dladdr(l->stack[i], &di) && di.dli_sname != NULL) {
      name = di.dli_sname;
      delta = (char *)l->stack[i] - (char *)di.dli_saddr;
    }
    off += snprintf(where + off, sizeof where - (size_t)off, "%s%s+0x%lx", i > 2 ? " < " : "",
                    name, delta);
  }
  for (i = 0; i < nsites; i++)
    if (strcmp(sites[i].where, where) == 0) break;
  if (i == nsites) {
    if (nsites == SITES) return;
    snprintf(sites[nsites++].where, sizeof sites[0].where, "%s", where);
  }
  sites[i].bytes += (long)malloc_usable_size(l->p);
  sites[i].count++;
}

static void *count_malloc(size_t n, const char *file, int line) {
  void *p = malloc(n);
  (void)file;
  (void)line;
  if (p != NULL && counting) {
    live_t *l = insert(p);
    l->depth = backtrace(l->stack, DEPTH);
  }
  return p;
}

static void count_free(void *p, const char *file, int line) {
  (void)file;
  (void)line;
  if (p != NULL && counting) {
    live_t *l = lookup(p);
    if (l != NULL) {
      if (collecting) collect(l);
      l->p = TOMB;
    }
  }
  free(p);
}

static void *count_realloc(void *q, size_t n, const char *file, int line) {
  live_t *l, saved;
  void *p;
  if (q == NULL) return count_malloc(n, file, line);
  l = counting ? lookup(q) : NULL;
  if (l != NULL) {
    saved = *l;
    l->p = TOMB;
  }
  p = realloc(q, n);
  if (p == NULL && l != NULL) *insert(q) = saved;
  else if (p != NULL && l != NULL) {
    saved.p = p;
    *insert(p) = saved;
  }
  return p;
}

static int by_bytes(const void *a, const void *b) {
  long d = ((const site_t *)b)->bytes - ((const site_t *)a)->bytes;
  return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
  static SSL *server[CONNS], *client[CONNS];
  SSL_CTX *sctx, *cctx;
  long total = 0, count = 0;
  int i, tls12 = argc > 3 && strcmp(argv[3], "1.2") == 0;
  if (argc < 3) {
    fprintf(stderr, "usage: bench_tls_state CERT.pem KEY.pem [1.2]\n");
    return 2;
  }
  if (!CRYPTO_set_mem_functions(count_malloc, count_realloc, count_free)) {
    fprintf(stderr, "bench_tls_state: OpenSSL allocated before main\n");
    return 1;
  }
  sctx = SSL_CTX_new(TLS_server_method());
  cctx = SSL_CTX_new(TLS_client_method());
  if (sctx == NULL || cctx == NULL ||
      SSL_CTX_use_certificate_chain_file(sctx, argv[1]) != 1 ||
      SSL_CTX_use_PrivateKey_file(sctx, argv[2], SSL_FILETYPE_PEM) != 1) {
    fprintf(stderr, "bench_tls_state: cannot load %s / %s\n", argv[1], argv[2]);
    return 1;
  }
  SSL_CTX_set_mode(sctx, SSL_MODE_RELEASE_BUFFERS);
  if (tls12) SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
  counting = 1;
  for (i = 0; i < CONNS; i++) {
    BIO *sb, *cb;
    char buf[128];
    int k;
    if (BIO_new_bio_pair(&sb, 0, &cb, 0) != 1) return 1;
    server[i] = SSL_new(sctx);
    client[i] = SSL_new(cctx);
    SSL_set_bio(server[i], sb, sb);
    SSL_set_bio(client[i], cb, cb);
    SSL_set_accept_state(server[i]);
    SSL_set_connect_state(client[i]);
    for (k = 0; k < 20 && !(SSL_is_init_finished(server[i]) && SSL_is_init_finished(client[i]));
         k++) {
      SSL_do_handshake(client[i]);
      SSL_do_handshake(server[i]);
    }
    if (!SSL_is_init_finished(server[i])) {
      fprintf(stderr, "bench_tls_state: handshake %d did not finish\n", i);
      return 1;
    }
    SSL_write(client[i], "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    if (SSL_read(server[i], buf, sizeof buf) != 27) return 1;
    SSL_write(server[i], "HTTP/1.1 204 No Content\r\n\r\n", 27);
    SSL_read(client[i], buf, sizeof buf);
    SSL_read(server[i], buf, sizeof buf); /* the keep-alive wait: nothing */
  }
  /* The pair's halves stay with the servers; the clients let go of theirs
   * and are freed outside the count. */
  for (i = 0; i < CONNS; i++) SSL_set_bio(client[i], NULL, NULL);
  collecting = 1;
  for (i = 0; i < CONNS; i++) SSL_free(server[i]);
  collecting = 0;
  qsort(sites, (size_t)nsites, sizeof sites[0], by_bytes);
  for (i = 0; i < nsites; i++) {
    if (strstr(sites[i].where, "BIO_new_bio_pair") != NULL) continue;
    total += sites[i].bytes;
    count += sites[i].count;
  }
  printf("%s: an idle server SSL holds %ld bytes in %ld allocations (BIO pair excluded)\n",
         tls12 ? "TLS 1.2" : "TLS 1.3", total / CONNS, count / CONNS);
  for (i = 0; i < nsites; i++)
    if (strstr(sites[i].where, "BIO_new_bio_pair") == NULL && sites[i].bytes / CONNS > 0)
      printf("%7ld B %3ld x  %s\n", sites[i].bytes / CONNS, sites[i].count / CONNS, sites[i].where);
  for (i = 0; i < CONNS; i++) SSL_free(client[i]);
  SSL_CTX_free(sctx);
  SSL_CTX_free(cctx);
  return 0;
}
