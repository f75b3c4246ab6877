/* SPDX-License-Identifier: MIT */
/*
 * The error detail (hr_error_detail): one message per thread, kept in
 * thread-local storage as errno and OpenSSL's error queue are, so that no
 * lock is taken and a failure on one thread never shows on another.  The
 * setup calls that record one (server listen, attach, start, TLS
 * certificates, static roots) are not on a request's path; nothing here
 * allocates.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "hroute/error.h"
#include "util/detail.h"

#define HR__DETAIL_MAX 512

/* This thread's last detail: the code it was recorded with (0: none) and
 * its text. */
static _Thread_local struct {
  int err;
  char text[HR__DETAIL_MAX];
} detail;

void hr__detail_clear(void) {
  detail.err = 0;
  detail.text[0] = '\0';
}

int hr__detail_set(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail.text, sizeof detail.text, fmt, ap);
  va_end(ap);
  detail.err = err;
  return err;
}

void hr__detail_addr(const void *sa, char *out, unsigned cap) {
  char host[INET6_ADDRSTRLEN] = "?";
  const struct sockaddr *s = sa;
  if (s->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a6 = sa;
    inet_ntop(AF_INET6, &a6->sin6_addr, host, sizeof host);
    snprintf(out, cap, "[%s]:%u", host, (unsigned)ntohs(a6->sin6_port));
  } else {
    const struct sockaddr_in *a4 = sa;
    inet_ntop(AF_INET, &a4->sin_addr, host, sizeof host);
    snprintf(out, cap, "%s:%u", host, (unsigned)ntohs(a4->sin_port));
  }
}

const char *hr_error_detail(int err) {
  if (err != 0 && detail.err == err && detail.text[0] != '\0') return detail.text;
  return hr_strerror(err);
}
