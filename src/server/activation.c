/* SPDX-License-Identifier: MIT */
/*
 * systemd socket activation (sd_listen_fds(3)): the listening sockets a
 * service manager, or the process an instance replaces, passes from
 * descriptor 3 on, announced by LISTEN_PID (this process) and LISTEN_FDS
 * (how many).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "server/internal.h"

/* The first passed descriptor (SD_LISTEN_FDS_START). */
#define HR__LISTEN_FDS_START 3

/* A decimal number without sign or spaces, at most `max`; -1 if not. */
static long parse_count(const char *v, long max) {
  long n = 0;
  if (v == NULL || *v == '\0') return -1;
  for (; *v != '\0'; v++) {
    if (*v < '0' || *v > '9') return -1;
    n = n * 10 + (*v - '0');
    if (n > max) return -1;
  }
  return n;
}

int hr_server_listen_activated(hr_server_t *s, const hr_listen_options_t *opts, size_t *count) {
  const char *pid_s, *fds_s;
  long pid, n, i;
  int err;
  if (count != NULL) *count = 0;
  if (s == NULL || count == NULL) return HR_EINVAL;
  pid_s = getenv("LISTEN_PID");
  fds_s = getenv("LISTEN_FDS");
  if (pid_s == NULL || fds_s == NULL) return 0; /* not activated */
  pid = parse_count(pid_s, 0x7fffffffL);
  n = parse_count(fds_s, 4096);
  if (pid < 0 || n < 0) return HR_EINVAL;
  if ((pid_t)pid != getpid()) return 0; /* meant for another process */
  for (i = 0; i < n; i++)
    if ((err = hr_server_listen_fd(s, HR__LISTEN_FDS_START + (int)i, opts)) != 0) return err;
  /* As sd_listen_fds(1): children of this process do not take them. */
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  *count = (size_t)n;
  return 0;
}
