/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 validation (RFC 3629 §4): shortest forms only, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF.  What WebSocket text messages
 * and close reasons must be (RFC 6455 §5.6, §8.1).
 */
#ifndef HR_UTIL_UTF8_H
#define HR_UTIL_UTF8_H

#include <stddef.h>

/* 1 when the `n` bytes at `p` are well-formed UTF-8 (n == 0 is). */
int hr__utf8_valid(const void *p, size_t n);

#endif /* HR_UTIL_UTF8_H */
