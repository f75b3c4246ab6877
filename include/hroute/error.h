/* SPDX-License-Identifier: MIT */
/** @file
 * Error codes.  Every fallible call returns 0 (or a non-negative count) on
 * success and a negative code on failure.  hroute's own codes come from the
 * table below and sit in the range -20999..-20001; libuv error codes
 * (UV_EADDRINUSE, ...) are passed through unchanged, so hr_strerror() and
 * hr_err_name() accept both.  Codes are only ever appended, never renumbered.
 * hr_error_detail() says what a failed setup call was about (which
 * address, which file, OpenSSL's reason).
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

/**
 * Says why the last failed setup call on this thread failed, naming what
 * it was about, where hr_strerror() can only name the code: the address
 * ("bind 127.0.0.1:8080: address already in use", "resolve
 * \"nosuch.invalid\": Name or service not known"), the file and OpenSSL's
 * reasons, oldest first ("certificate file \"/etc/x.pem\": no start line;
 * PEM lib", "key file \"k.pem\" does not match certificate file
 * \"c.pem\": key values mismatch"), the directory ("static root
 * \"/srv/www\": no such file or directory").
 *
 * The calls that record a detail are hr_server_new (which compression
 * setting is wrong: "compression settings: gzip_level outside 1..12"),
 * hr_router_set_compress (the same, or the host), hr_server_listen,
 * hr_server_listen_ex, hr_server_listen_tls, hr_server_attach,
 * hr_server_start, hr_server_tls_update, hr_server_tls_add_name and
 * hr_static_new.  (Route registration says what is wrong in
 * hr_route_error_t.reason instead.)  Each forgets the thread's previous detail when it
 * starts, and records one, with the code it returns, when it fails for a
 * reason it can name (others, a NULL argument say, record none).
 *
 * Returns that message when the last detail recorded on this thread was
 * recorded with `err`, else hr_strerror(err): pass the code the call just
 * returned, and the answer is always a message for it.  One line, no
 * trailing newline, at most 511 bytes.
 *
 * Lifetime and threads: the detail is per thread (thread-local storage,
 * as errno and OpenSSL's error queue are): any thread may call this, and
 * it sees only the failures of calls it made itself.  The string stays
 * valid and unchanged until the same thread makes another of the calls
 * above (or exits); copy it to keep it longer.  Never NULL.
 */
HR_EXTERN const char *hr_error_detail(int err);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_ERROR_H */
