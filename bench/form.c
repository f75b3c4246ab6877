/* SPDX-License-Identifier: MIT */
/*
 * bench_form: speed of the urlencoded parser (form.h) that the query and
 * form accessors use: hr_form_next splitting and hr_form_decode on each
 * key and value that needs it (what the request accessors do, less the
 * arena), over three queries: a short API query, a search box with '+'
 * and escapes, and a 40-pair form.  Prints ns per query and MB/s, best and
 * median of 9 passes of about 20 ms each.  Run it pinned:
 * taskset -c 1 build/release/bench_form
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "timing.h"

static volatile size_t sink;

/* Splits and decodes `q` once; returns the decoded bytes. */
static size_t parse_once(hr_span_t q) {
  hr_span_t rest = q;
  hr_form_pair_t p;
  char buf[512];
  size_t total = 0, n;
  while (hr_form_next(&rest, &p)) {
    if (memchr(p.key.ptr, '%', p.key.len) || memchr(p.key.ptr, '+', p.key.len)) {
      if (p.key.len > sizeof buf || hr_form_decode(p.key, buf, &n) != 0) abort();
      total += n;
    } else {
      total += p.key.len;
    }
    if (p.value.len && (memchr(p.value.ptr, '%', p.value.len) || memchr(p.value.ptr, '+', p.value.len))) {
      if (p.value.len > sizeof buf || hr_form_decode(p.value, buf, &n) != 0) abort();
      total += n;
    } else {
      total += p.value.len;
    }
  }
  return total;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void run(const char *label, const char *q) {
  hr_span_t s = hr_span_cstr(q);
  double ns[9];
  size_t i, iters = 1000;
  uint64_t t0, t1;
  /* Calibrate to about 20 ms a pass. */
  for (;;) {
    t0 = bench_now_ns();
    for (i = 0; i < iters; i++) sink += parse_once(s);
    t1 = bench_now_ns();
    if (t1 - t0 > 20000000 || iters > (1u << 30)) break;
    iters *= 2;
  }
  for (i = 0; i < 9; i++) {
    size_t k;
    t0 = bench_now_ns();
    for (k = 0; k < iters; k++) sink += parse_once(s);
    t1 = bench_now_ns();
    ns[i] = (double)(t1 - t0) / (double)iters;
  }
  qsort(ns, 9, sizeof ns[0], cmp);
  printf("%-28s %5zu bytes  best %8.1f ns  median %8.1f ns  %7.1f MB/s\n", label, s.len,
         ns[0], ns[4], (double)s.len / ns[4] * 1000.0);
}

int main(void) {
  static char form[2048];
  size_t i, at = 0;
  for (i = 0; i < 40; i++)
    at += (size_t)snprintf(form + at, sizeof form - at, "%sfield%zu=value+number+%zu", i ? "&" : "", i, i);
  printf("hr_form_next + hr_form_decode (what hr_request_query_* do, without the arena)\n");
  run("api: 4 plain pairs", "page=2&per_page=50&sort=created&direction=desc");
  run("search: '+' and escapes", "q=caf%C3%A9+au+lait&lang=fr&safe=on&tags=a%2Cb%2Cc");
  run("form: 40 pairs with '+'", form);
  return 0;
}
