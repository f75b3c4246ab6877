/* SPDX-License-Identifier: MIT */
/* A temporary directory tree for the static file tests (tmptree.h). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmptree.h"

void tt_make(const char *tag, char *top, size_t tcap, char *root, size_t rcap) {
  snprintf(top, tcap, "/tmp/%s-XXXXXX", tag);
  assert_non_null(mkdtemp(top));
  snprintf(root, rcap, "%s/root", top);
  assert_int_equal(mkdir(root, 0755), 0);
}

void tt_put(const char *root, const char *rel, const void *data, size_t n) {
  char path[256];
  int fd;
  snprintf(path, sizeof path, "%s/%s", root, rel);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, n), (ssize_t)n);
  close(fd);
}

int tt_remove(const char *top) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
  return system(cmd) == 0 ? 0 : -1;
}
