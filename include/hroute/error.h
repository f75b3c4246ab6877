/* SPDX-License-Identifier: MIT */
/** @file
 * Error codes.  Every fallible call returns 0 (or a non-negative count) on
 * success and a negative code on failure.  hroute's own codes come from the
 * table below and sit in the range -20999..-20001; libuv error codes
 * (UV_EADDRINUSE, ...) are passed through unchanged, so hr_strerror() and
 * hr_err_name() accept both.  Codes are only ever appended, never renumbered.
 */
#ifndef HROUTE_ERROR_H
#define HROUTE_ERROR_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** XX(name, value, message).  ECONFLICT and EMETHOD are no longer returned
 * by any call (routes may name one position differently; a method that a
 * path lacks is a match status, 405, not an error); they keep their values
 * so that code naming them still compiles. */
#define HR_ERRNO_MAP(XX)                                                      \
  XX(ENOMEM, -20001, "out of memory")                                         \
  XX(EINVAL, -20002, "invalid argument")                                      \
  XX(EEXIST, -20003, "route already registered for this method and pattern") \
  XX(EPATTERN, -20004, "invalid route pattern")                               \
  XX(ECONFLICT, -20005, "pattern conflicts with a registered route (unused)") \
  XX(ENOTFOUND, -20006, "not found")                                          \
  XX(EMETHOD, -20007, "method not allowed for this path (unused)")            \
  XX(ESTATE, -20008, "call not valid in the object's current state")         \
  XX(EAGAIN, -20009, "output queue is full; wait for the drain callback")     \
  XX(ECLOSED, -20010, "connection closed before the response completed")     \
  XX(ETOOLARGE, -20011, "value exceeds the configured limit")                 \
  XX(EPARSE, -20012, "malformed input")                                       \
  XX(ENOSPC, -20013, "buffer too small")                                      \
  XX(ESHUTDOWN, -20014, "server is shutting down")                            \
  XX(ETHREAD, -20015, "called from a thread this call does not allow")       \
  XX(ENODELEGATE, -20016, "no header delegate for this value type")          \
  XX(ETLS, -20017, "TLS material or settings refused (certificate, key)")

/** hroute's error codes: one enumerator per HR_ERRNO_MAP entry, its name
 * prefixed with HR_ (HR_ENOMEM = -20001, ...).  Calls return them as a
 * plain negative int. */
typedef enum hr_errno_e {
/** Makes one enumerator of an HR_ERRNO_MAP entry (undefined again below). */
#define HR__ERR_ENUM(name, val, msg) HR_##name = (val),
  HR_ERRNO_MAP(HR__ERR_ENUM)
#undef HR__ERR_ENUM
  /** Not a code (no call returns it): it follows the last entry's comma, just
   * above hroute's range. */
  HR__ERRNO_END_ = -20000
} hr_errno_t;

/** Returns a one-line English description of `err` (an hroute or libuv code;
 * "success" for 0), or "unknown error" (static storage).  Any thread. */
HR_EXTERN const char *hr_strerror(int err);

/** Returns the symbolic name of `err` ("HR_ENOMEM", "EADDRINUSE", ...; "OK"
 * for 0) or "UNKNOWN" (static storage).  Any thread. */
HR_EXTERN const char *hr_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_ERROR_H */
