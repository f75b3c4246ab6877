/* SPDX-License-Identifier: MIT */
/*
 * Names below a static root: the lexical check (no dot segments, empty
 * components, NUL; dotfiles unless allowed) and the open that the kernel
 * keeps below the root (openat2's RESOLVE_BENEATH), with a walk one
 * component at a time, links refused, where openat2 is missing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "static/static.h"

int hr__static_check_name(hr_span_t name, int dotfiles) {
  size_t i = 0;
  if (memchr(name.ptr, '\0', name.len) != NULL) return HR__NAME_BAD;
  while (i < name.len) {
    const char *c = name.ptr + i, *slash = memchr(c, '/', name.len - i);
    size_t n = slash != NULL ? (size_t)(slash - c) : name.len - i;
    /* A trailing '/' (a directory) leaves no component after it. */
    if (n == 0) return HR__NAME_BAD;
    if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) return HR__NAME_BAD;
    if (c[0] == '.' && !dotfiles && !(n == 11 && memcmp(c, ".well-known", 11) == 0))
      return HR__NAME_HIDDEN;
    i += n + (slash != NULL);
  }
  return HR__NAME_OK;
}

static int openat2_once(int rootfd, const char *name, unsigned long long resolve) {
  struct open_how how;
  long r;
  memset(&how, 0, sizeof how);
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  how.resolve = resolve;
  do
    r = syscall(SYS_openat2, rootfd, name, &how, sizeof how);
  while (r < 0 && errno == EINTR);
  return r >= 0 ? (int)r : -errno;
}

/* Without openat2: each component with O_NOFOLLOW, so no link is taken. */
static int walk(int rootfd, const char *name) {
  char comp[256];
  int dir = rootfd, fd;
  const char *p = name;
  if (*p == '\0') {
    fd = openat(rootfd, ".", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    return fd >= 0 ? fd : -errno;
  }
  for (;;) {
    const char *slash = strchr(p, '/');
    size_t n = slash != NULL ? (size_t)(slash - p) : strlen(p);
    int last = slash == NULL || slash[1] == '\0';
    if (n >= sizeof comp) {
      if (dir != rootfd) close(dir);
      return -ENAMETOOLONG;
    }
    memcpy(comp, p, n);
    comp[n] = '\0';
    fd = openat(dir, comp,
                O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW |
                    (last ? 0 : O_DIRECTORY));
    if (fd < 0) fd = -errno;
    if (dir != rootfd) close(dir);
    if (fd < 0 || last) return fd;
    dir = fd;
    p = slash + 1;
  }
}

int hr__static_open(int rootfd, const char *name, hr_static_symlinks_t mode) {
  static const unsigned long long resolve[] = {
      [HR_STATIC_SYMLINKS_INSIDE] = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
      [HR_STATIC_SYMLINKS_NONE] = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
      [HR_STATIC_SYMLINKS_ANY] = RESOLVE_NO_MAGICLINKS,
  };
  int fd = openat2_once(rootfd, *name ? name : ".", resolve[mode]);
  if (fd != -ENOSYS) return fd;
  /* A kernel before 5.6: links are refused, or followed anywhere. */
  if (mode == HR_STATIC_SYMLINKS_ANY) {
    fd = openat(rootfd, *name ? name : ".", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    return fd >= 0 ? fd : -errno;
  }
  return walk(rootfd, name);
}
