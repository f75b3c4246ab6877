/* SPDX-License-Identifier: MIT */
/*
 * bench_codec: what the compressor alone costs per response body, hroute's
 * against nginx's, so that bench/compress.sh can say where a request's
 * time goes.  For each FILE and each gzip level it compresses the whole
 * file again and again (--iterations, default 2000; the median of 5
 * passes) two ways and prints microseconds per body and the bytes made:
 *
 *   hroute  hr__compress, the whole-body path of the response
 *           (src/codec/codec.c: libdeflate when it was built in, else
 *           zlib), with one compressor per level kept, as each loop keeps
 *           it;
 *   nginx   zlib as nginx 1.22's gzip filter sets it up for a response of
 *           known length: deflateInit2 per response with the level, the
 *           window and memLevel shrunk to the body (a window bit and a
 *           memLevel less while the length is under half the window less
 *           262 bytes; memLevel at least 1), deflate(Z_FINISH), deflateEnd;
 *           zlib's memory carved from one block, as nginx carves it from
 *           its request pool (8 KiB + 2^(wbits+2) + 2^(memLevel+9) bytes),
 *           the block reused from response to response (malloc's steady
 *           state, without its trimming and mapping in the figure).
 *
 * One line per file and level:
 *   codec gzip 1  10k.json  hroute 20.71 us 2072 B  nginx 29.20 us 2195 B (wbits 14, memLevel 7)
 *
 *   bench_codec [--levels 1,6] [--iterations N] FILE...
 *
 * Pinned, with nothing else running: taskset -c 0 build/release/bench_codec FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif

#include "codec/codec.h"
#include "timing.h"
#include "util/mem.h"

#define PASSES 5

static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *b = NULL;
  long n;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
      (b = malloc((size_t)n + 1)) == NULL || fread(b, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "bench_codec: cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* nginx's window and memLevel for a body of `len` bytes (its defaults 15
 * and 8, ngx_http_gzip_filter_memory). */
static void nginx_memory(size_t len, int *wbits, int *memlevel) {
  *wbits = 15;
  *memlevel = 8;
  while (len < (size_t)((1 << (*wbits - 1)) - 262)) {
    (*wbits)--;
    (*memlevel)--;
  }
  if (*memlevel < 1) *memlevel = 1;
}

#ifdef HR_HAVE_ZLIB
/* nginx's request pool for zlib: one block, carved in order. */
static struct {
  unsigned char *block;
  size_t size, used;
} pool;

static voidpf pool_alloc(voidpf opaque, uInt items, uInt size) {
  size_t n = ((size_t)items * size + 15) & ~(size_t)15;
  (void)opaque;
  if (pool.size - pool.used < n) return NULL; /* sized as nginx sizes it: never */
  pool.used += n;
  return pool.block + pool.used - n;
}

static void pool_free(voidpf opaque, voidpf p) {
  (void)opaque;
  (void)p;
}

static size_t nginx_once(int level, int wbits, int memlevel, const unsigned char *in, size_t len,
                         unsigned char *out, size_t cap) {
  z_stream z;
  size_t n;
  memset(&z, 0, sizeof z);
  z.zalloc = pool_alloc;
  z.zfree = pool_free;
  pool.used = 0;
  if (deflateInit2(&z, level, Z_DEFLATED, wbits + 16, memlevel, Z_DEFAULT_STRATEGY) != Z_OK)
    return 0;
  z.next_in = (unsigned char *)in;
  z.avail_in = (uInt)len;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  n = deflate(&z, Z_FINISH) == Z_STREAM_END ? (size_t)z.total_out : 0;
  deflateEnd(&z);
  return n;
}

/* One body compressed one way: hroute's (cs) or nginx's (cs NULL). */
typedef struct job_s {
  hr__codecs_t *cs;
  int level, wbits, memlevel;
  const unsigned char *in;
  size_t len;
  unsigned char *out;
  size_t cap;
} job_t;

static size_t once(const job_t *j) {
  return j->cs != NULL
             ? hr__compress(j->cs, HR_CODING_GZIP, j->level, j->in, j->len, j->out, j->cap)
             : nginx_once(j->level, j->wbits, j->memlevel, j->in, j->len, j->out, j->cap);
}

/* Median over PASSES of the microseconds per body; *bytes the size made. */
static double time_job(const job_t *j, long iters, size_t *bytes) {
  double us[PASSES];
  int p;
  for (p = 0; p < PASSES; p++) {
    uint64_t t = bench_now_ns();
    long i;
    for (i = 0; i < iters; i++) *bytes = once(j);
    us[p] = (double)(bench_now_ns() - t) / 1e3 / (double)iters;
  }
  return bench_median(us, PASSES);
}
#endif

static void usage(void) {
  fprintf(stderr, "usage: bench_codec [--levels 1,6] [--iterations N] FILE...\n");
  exit(2);
}

int main(int argc, char **argv) {
  int levels[12], nlevels = 0, a = 1, k;
  long iters = 2000;
  hr__mem_t m;
  hr__codecs_t *cs;
  const char *lv = "1,6";
  for (; a < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
    if (a + 1 >= argc) usage();
    if (strcmp(argv[a], "--levels") == 0)
      lv = argv[a + 1];
    else if (strcmp(argv[a], "--iterations") == 0 && (iters = atol(argv[a + 1])) > 0)
      continue;
    else
      usage();
  }
  if (a >= argc) usage();
  for (const char *p = lv; *p != '\0' && nlevels < 12;) {
    char *end;
    long l = strtol(p, &end, 10);
    if (end == p || l < 1 || l > 9) {
      fprintf(stderr, "bench_codec: --levels takes gzip levels 1..9 (zlib's), comma-separated\n");
      return 2;
    }
    levels[nlevels++] = (int)l;
    p = *end == ',' ? end + 1 : end;
  }
#ifndef HR_HAVE_ZLIB
  (void)m;
  (void)cs;
  (void)k;
  (void)iters;
  (void)levels;
  fprintf(stderr, "bench_codec: built without zlib (nginx's compressor, and hroute's gzip)\n");
  return 2;
#else

  hr__mem_init(&m, NULL);
  if ((cs = hr__codecs_new(&m)) == NULL) return 1;
  for (; a < argc; a++) {
    size_t len, cap, hb = 0, nb = 0;
    unsigned char *in = read_file(argv[a], &len), *out;
    const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
    int wbits, memlevel;
    cap = hr__compress_bound(HR_CODING_GZIP, len) + 1024;
    if ((out = malloc(cap)) == NULL) return 1;
    nginx_memory(len, &wbits, &memlevel);
    /* nginx's preallocation, and room for zlib's state beside it. */
    pool.size = 8192 + ((size_t)1 << (wbits + 2)) + ((size_t)1 << (memlevel + 9)) + 65536;
    if ((pool.block = malloc(pool.size)) == NULL) return 1;
    for (k = 0; k < nlevels; k++) {
      job_t hj = {cs, levels[k], wbits, memlevel, in, len, out, cap}, nj = hj;
      double h, n;
      nj.cs = NULL;
      h = time_job(&hj, iters, &hb);
      n = time_job(&nj, iters, &nb);
      if (hb == 0 || nb == 0) {
        fprintf(stderr, "bench_codec: %s did not compress\n", name);
        return 1;
      }
      printf("codec gzip %d  %s  hroute %.2f us %zu B  nginx %.2f us %zu B (wbits %d, memLevel %d)\n",
             levels[k], name, h, hb, n, nb, wbits, memlevel);
    }
    free(pool.block);
    free(out);
    free(in);
  }
  hr__codecs_free(cs);
  return 0;
#endif
}
