/* SPDX-License-Identifier: MIT */
/** @file
 * Protocol upgrades (RFC 9110 §7.8, §15.2.2): a handler answers a request
 * that asks for one (Upgrade, with "upgrade" in Connection) with 101
 * Switching Protocols, and the connection is handed over as a byte stream:
 * what the peer sends goes to a read callback, writes are queued with the
 * server's usual backpressure, reading can be paused.  No byte after the
 * request is parsed as HTTP again: bytes that arrived with the request
 * (pipelined behind it) are the stream's first.  The HTTP timers stop
 * (only the write-progress deadline stays: a peer that takes nothing is
 * still dropped), the connection still counts toward max_connections, and
 * a graceful shutdown tells the stream's owner (or closes the stream when
 * it has no shutdown callback); at the shutdown deadline the stream is
 * closed.  WebSocket (RFC 6455) is built on this.
 *
 * Threads: every call on a stream from the loop thread that serves it
 * (its callbacks run there), except hr_stream_post(), which any thread may
 * call.
 */
#ifndef HROUTE_UPGRADE_H
#define HROUTE_UPGRADE_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An upgraded connection as a byte stream, made by hr_response_upgrade and
 * owned by the server: valid until its closed callback has returned, and
 * for callbacks hr_stream_post queued before then, until they have run. */
typedef struct hr_stream_s hr_stream_t;

/** What the server calls on a stream, on its loop thread, each with the
 * udata given to hr_response_upgrade (which copies this).  read and closed
 * are required; the others may be NULL. */
typedef struct hr_stream_callbacks_s {
  /** Bytes from the peer, `len` > 0, valid during the call only. */
  void (*read)(hr_stream_t *s, const char *data, size_t len, void *udata);
  /** The stream is over: 0 after hr_stream_close once everything was
   * written and FIN sent (the server then waits up to 2 s for the peer's
   * own close, as after an HTTP response), UV_EOF when the peer closed
   * (what was queued is written first), HR_ECLOSED when the server ended
   * it (shutdown, a reset, a write error or timeout, out of memory).  It
   * runs exactly once, never inside a call of the owner's; no call on `s`
   * after it.  A paused stream reads nothing, so it notices a peer that
   * closes only when resumed (or at a write). */
  void (*closed)(hr_stream_t *s, int status, void *udata);
  /** Optional: after hr_stream_write answered HR_EAGAIN, the queue fell to
   * half the server's write_high_water_bytes or less. */
  void (*drain)(hr_stream_t *s, void *udata);
  /** Optional: the server began a graceful shutdown; end the stream
   * (hr_stream_close) before its deadline.  NULL: it is closed at once
   * (closed gets HR_ECLOSED). */
  void (*shutdown)(hr_stream_t *s, void *udata);
  /** Optional (needed by hr_stream_set_timeout): the deadline set there
   * passed.  It is then unset; set it again to be called again. */
  void (*timeout)(hr_stream_t *s, void *udata);
} hr_stream_callbacks_t;

/**
 * Answers `req` with 101 Switching Protocols, with "Upgrade: <protocol>"
 * and "Connection: Upgrade" besides the fields the handler added, and
 * hands the connection over to `cb` (copied) with `udata` once the
 * exchange ends (the after-middleware and the access log see the 101).
 * The request must be HTTP/1.1, not HEAD, carry an Upgrade field and
 * "upgrade" in Connection (RFC 9110 §7.8), and be read whole (its body
 * too); `protocol` is a token (optionally "/version").  The route's
 * constant fields are not sent with a 101.  Stores the stream in *out (may
 * be NULL): writes, pause and close work at once (a greeting goes right
 * after the 101).  Returns 0, HR_EINVAL (the request asked for no upgrade,
 * a bad protocol, a callback missing), HR_ESTATE (the response already
 * started, or the request's body is still to come: a streaming route),
 * HR_ECLOSED (the connection is gone: the response is complete),
 * HR_ENOMEM, HR_ETHREAD.  Loop thread.
 */
HR_EXTERN int hr_response_upgrade(hr_response_t *res, const char *protocol,
                                  const hr_stream_callbacks_t *cb, void *udata,
                                  hr_stream_t **out);

/**
 * Queues a copy of `len` bytes for the peer.  When more than the server's
 * write_high_water_bytes are queued already, nothing is and HR_EAGAIN is
 * returned: wait for the drain callback (it runs on a later loop turn,
 * also when the queue emptied at once).  Returns 0, HR_EAGAIN, HR_ESTATE
 * (after hr_stream_close), HR_ENOMEM (the stream is being closed: closed
 * follows with HR_ECLOSED), HR_ECLOSED (the stream is over; its closed
 * callback ran or is due), HR_ETHREAD.
 */
HR_EXTERN int hr_stream_write(hr_stream_t *s, const void *data, size_t len);

/** Stops (paused != 0) or restarts delivering the peer's bytes; while
 * paused they wait in the kernel (TCP's window pushes back).  Returns 0 or
 * HR_ECLOSED. */
HR_EXTERN int hr_stream_pause(hr_stream_t *s, int paused);

/** Ends the stream: what is queued is written, then FIN; the closed
 * callback follows with 0 (or an error).  Later writes answer HR_ESTATE.
 * Returns 0, or HR_ECLOSED when the stream is over already. */
HR_EXTERN int hr_stream_close(hr_stream_t *s);

/** Sets the stream's one deadline `ms` milliseconds from now, replacing
 * the one before (0 unsets it); when it passes, the timeout callback runs.
 * Nothing the peer or the owner does moves it: the owner keeps its own
 * clock (uv_now) and sets the deadline again as it sees fit.  Returns 0,
 * HR_EINVAL (no timeout callback), HR_ECLOSED, HR_ETHREAD. */
HR_EXTERN int hr_stream_set_timeout(hr_stream_t *s, uint64_t ms);

/** Callback run on the stream's loop thread by hr_stream_post(). */
typedef void (*hr_stream_post_cb)(hr_stream_t *s, void *udata);

/**
 * Runs `cb(s, udata)` on the loop thread that serves `s`, soon, never
 * inside this call: the way to write to a stream from another thread.
 * Any thread may call it until the stream's closed callback has returned;
 * the owner makes sure no thread calls it later (typically: a lock the
 * posting threads hold, taken by the closed callback to forget the
 * stream).  A callback posted before then still runs, after the closed
 * callback if the stream ended meanwhile (its calls on `s` then return
 * HR_ECLOSED); `s` stays allocated until it has.  Allocates one small
 * node.  Returns 0, HR_EINVAL (cb NULL), HR_ENOMEM, HR_ECLOSED (the
 * worker has finished); cb does not run on an error.
 */
HR_EXTERN int hr_stream_post(hr_stream_t *s, hr_stream_post_cb cb, void *udata);

/** The udata given to hr_response_upgrade. */
HR_EXTERN void *hr_stream_udata(const hr_stream_t *s);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_UPGRADE_H */
