/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the header-section scanner: no input may crash it or
 * read past the bytes it is given, and the answer must not depend on how the
 * input is split across calls (the first byte chooses the split size).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/strict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const hr__head_limits_t lim = {512, 2048, 20};
  hr__head_scan_t whole, split;
  const char *p;
  char *copy;
  size_t step, n;
  long a, b = 0;
  if (size < 1) return 0;
  step = (size_t)data[0] % 17 + 1;
  size--;
  /* An exact-size heap copy, so that ASan sees any over-read. */
  copy = malloc(size ? size : 1);
  if (copy == NULL) return 0;
  memcpy(copy, data + 1, size);
  p = copy;
  hr__head_scan_init(&whole);
  a = hr__head_scan(&whole, p, size, &lim);
  hr__head_scan_init(&split);
  for (n = 0; n < size && b == 0;) {
    n = n + step < size ? n + step : size;
    b = hr__head_scan(&split, p, n, &lim);
  }
  if (a != b) abort();
  if (a > 0 && ((size_t)a > size || (size_t)a > lim.max_header)) abort();
  free(copy);
  return 0;
}
