/* SPDX-License-Identifier: MIT */
/*
 * The error detail of the calling thread (hr_error_detail in
 * include/hroute/error.h): the setup calls that can say which address,
 * which file or which OpenSSL reason made them fail clear it when they
 * start and record one line with the code they return.
 */
#ifndef HR_UTIL_DETAIL_H
#define HR_UTIL_DETAIL_H

/* Forgets this thread's detail. */
void hr__detail_clear(void);

/* Records `err` and the message `fmt` formats (truncated at 511 bytes) as
 * this thread's detail; returns `err`, so that a failing path can
 * `return hr__detail_set(err, ...)`. */
int hr__detail_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The address `sa` (IPv4 or IPv6) and its port as text into out[cap]:
 * "127.0.0.1:8080", "[::1]:8080". */
void hr__detail_addr(const void *sa, char *out, unsigned cap);

#endif
