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
 * (its callbacks run there), except hr_stream_post(), hr_stream_post_fn(),
 * hr_stream_check_thread(), hr_stream_loop(), hr_stream_high_water() and
 * hr_stream_udata(), which any thread may call while the stream is
 * allocated.
 *
 * A protocol of the application's own can be built on a stream with these
 * calls alone, as src/websocket/ builds RFC 6455: hr_response_upgrade_check
 * before refusing a handshake of its own, hr_response_allocator for its
 * per-connection state, hr_stream_write_past_mark for what it owes the peer
 * whatever the backlog (bounded by its own count of hr_stream_queued against
 * hr_stream_high_water, with hr_stream_want_drain to hear when the queue
 * fell), hr_stream_abort to drop a peer that reads nothing,
 * hr_stream_check_thread to answer its own calls from other threads, and
 * hr_stream_post_fn to offer a post of its own.
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
 * What hr_response_upgrade would answer now of the exchange's state, with
 * nothing sent or changed: 0 when `res` can still become an upgrade (no
 * response started, the request read whole, its body too).  It does not
 * look at the request's fields (hr_response_upgrade checks those:
 * HR_EINVAL) nor at the connection (HR_ECLOSED when it is gone).  A handler
 * that checks a handshake of its own protocol, and answers a bad one with a
 * refusal of its own (hr_response_send), calls it first, so that it sends
 * no refusal where an upgrade could not have been sent either: a streaming
 * route whose body is still to come answers HR_ESTATE here and leaves the
 * response to the handler (hr_websocket_accept does this).  Returns 0,
 * HR_ESTATE (the response already started, or the request's body is still
 * to come), HR_ECLOSED (the response was abandoned at a shutdown deadline),
 * HR_ETHREAD.  Loop thread.
 */
HR_EXTERN int hr_response_upgrade_check(const hr_response_t *res);

/**
 * The server's allocator: hr_server_options_t.allocator, or libc's when
 * that was NULL; never NULL.  For the state a stream's owner keeps for the
 * life of the connection (made before hr_response_upgrade, since it is the
 * stream's udata), so that it comes from where the server's own memory
 * comes from and fails where that does (an out-of-memory test's counting
 * allocator).  Blocks from it may be freed on any thread, for as long as
 * the allocator itself lives (the application's: it outlives the server).
 * Any thread, while `res` is valid.
 */
HR_EXTERN const hr_allocator_t *hr_response_allocator(const hr_response_t *res);

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

/**
 * Queues a copy of `len` bytes as hr_stream_write does, whatever is queued
 * already: the high-water mark is not checked (and no drain is asked for).
 * For bytes a protocol owes its peer however far behind the peer reads,
 * such as the pong that answers a ping or a close frame (RFC 6455 §5.5.1,
 * §5.5.2), or a unit it must not cut in two.  The server bounds nothing
 * written this way: the owner bounds it (hr_stream_queued against
 * hr_stream_high_water), typically by refusing its own sends and reading
 * nothing more while over the mark, so that a peer that sends but never
 * reads fills its own TCP window, not the server's memory.  Returns 0 (also
 * for `len` 0, which queues nothing), HR_ESTATE (after hr_stream_close),
 * HR_ENOMEM (the stream is being closed: closed follows with HR_ECLOSED),
 * HR_ECLOSED (the stream is over, or aborted), HR_EINVAL (`s` NULL),
 * HR_ETHREAD.  Loop thread.
 */
HR_EXTERN int hr_stream_write_past_mark(hr_stream_t *s, const void *data, size_t len);

/**
 * Bytes queued for the peer and not yet taken by the kernel (the 101 head
 * while the handler that upgraded still runs, then every write): the
 * figure that hr_stream_write compares with hr_stream_high_water.  Nothing
 * is written to the socket inside a call of the owner's (the queue goes
 * out once the callback that wrote has returned), so within one callback
 * it grows by exactly what was written.  0 once the stream is over (its
 * closed callback ran), for `s` NULL, and from a thread other than the
 * loop's (which may not read it).  Loop thread.
 */
HR_EXTERN size_t hr_stream_queued(const hr_stream_t *s);

/**
 * The server's write_high_water_bytes (hr_server_options_t), in bytes: the
 * figure over which hr_stream_write answers HR_EAGAIN; the drain callback
 * runs once hr_stream_queued is at half of it or less.  Fixed for the
 * server's life.  0 for `s` NULL.  Any thread, while `s` is allocated.
 */
HR_EXTERN size_t hr_stream_high_water(const hr_stream_t *s);

/**
 * Asks for the drain callback as an HR_EAGAIN from hr_stream_write does:
 * it runs once, never inside this call, when nothing is being written and
 * hr_stream_queued is at half of hr_stream_high_water or less (right after
 * the callback that asked returns, or on the loop turn the peer took
 * enough); ask again to be called again.  For an owner that holds back by
 * its own count rather than by a refused write (one that stops reading, or
 * its own sends, while hr_stream_queued is over the mark).  No drain comes
 * after hr_stream_close.  Returns 0, HR_EINVAL (`s` NULL, or no drain
 * callback), HR_ESTATE (after hr_stream_close), HR_ECLOSED, HR_ETHREAD.
 * Loop thread.
 */
HR_EXTERN int hr_stream_want_drain(hr_stream_t *s);

/** Stops (paused != 0) or restarts delivering the peer's bytes; while
 * paused they wait in the kernel (TCP's window pushes back).  Returns 0 or
 * HR_ECLOSED. */
HR_EXTERN int hr_stream_pause(hr_stream_t *s, int paused);

/** Ends the stream: what is queued is written, then FIN; the closed
 * callback follows with 0 (or an error).  Later writes answer HR_ESTATE.
 * Returns 0, or HR_ECLOSED when the stream is over already. */
HR_EXTERN int hr_stream_close(hr_stream_t *s);

/**
 * Ends the stream now, dropping what is queued: never inside this call,
 * but right after the read or drain callback that called it returns
 * (before anything it queued goes out), else soon after (this loop turn or
 * the next), the connection is closed, with a reset (RST) when output was
 * still queued (the peer cannot mistake a cut stream for a whole one), else
 * with FIN; the closed callback follows with HR_ECLOSED.  From this call on
 * the other calls answer HR_ECLOSED (hr_stream_queued still counts what
 * will be dropped).  For a peer that is to be dropped rather than waited
 * for: one that answers nothing (a ping timeout), or one that reads nothing
 * of what hr_stream_close left to write before FIN (RFC 6455 §7.1.1,
 * §7.1.7).  Also after hr_stream_close.  Returns 0, HR_ECLOSED (the stream
 * is over, or aborted already), HR_EINVAL (`s` NULL), HR_ETHREAD.  Loop
 * thread.
 */
HR_EXTERN int hr_stream_abort(hr_stream_t *s);

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

/** A function of the owner's own type, carried untouched by
 * hr_stream_post_fn (the runner casts it back). */
typedef void (*hr_stream_fn)(void);

/** Runner called by hr_stream_post_fn(), with the function and udata given
 * to it. */
typedef void (*hr_stream_post_fn_cb)(hr_stream_t *s, hr_stream_fn fn, void *udata);

/**
 * hr_stream_post with a function carried besides `udata`: runs
 * `run(s, fn, udata)` on the loop thread that serves `s`, soon, never
 * inside this call, under hr_stream_post's rules (any thread until the
 * closed callback has returned; posted before then, it still runs, and `s`
 * stays allocated until it has).  For a protocol on the stream that offers
 * a post of its own, with its own callback type and its user's udata
 * (hr_websocket_post): `run` finds the protocol's object with
 * hr_stream_udata(s), casts `fn` back and calls it, and nothing is
 * allocated besides hr_stream_post's one small node.  `fn` may be NULL.
 * A runner that runs after the loop has ended (at the worker's cleanup,
 * perhaps on the thread that stopped the server) finds
 * hr_stream_check_thread answering HR_ECLOSED.  Returns 0, HR_EINVAL (`s`
 * or `run` NULL), HR_ENOMEM, HR_ECLOSED (the worker has finished); `run`
 * does not run on an error.  Any thread.
 */
HR_EXTERN int hr_stream_post_fn(hr_stream_t *s, hr_stream_post_fn_cb run, hr_stream_fn fn,
                                void *udata);

/**
 * Whether the calling thread may make the loop-thread calls on `s`: 0 on
 * the loop thread that serves it, HR_ETHREAD on another, HR_ECLOSED on
 * another once that loop has ended (a posted callback run at the worker's
 * cleanup).  Whether the stream is over is not its concern (the other
 * calls answer HR_ECLOSED then).  For a protocol on the stream whose own
 * calls answer from other threads as the stream's do.  Returns those, or
 * HR_EINVAL (`s` NULL).  Any thread, while `s` is allocated: until its
 * closed callback has returned, and in callbacks posted before then.
 */
HR_EXTERN int hr_stream_check_thread(const hr_stream_t *s);

/** The loop that serves `s` (for the owner's clock, uv_now, and timers of
 * its own), or NULL for `s` NULL.  Any thread, while `s` is allocated. */
HR_EXTERN uv_loop_t *hr_stream_loop(const hr_stream_t *s);

/** Releases a loop-local object (hr_stream_loop_local) at the end of its
 * loop's worker. */
typedef void (*hr_stream_local_free_cb)(void *obj);

/**
 * A loop-local object for a protocol over streams: state its connections
 * on one loop can share (a scratch buffer, a codec reset per message), so
 * that no connection keeps one of its own.  Returns the object stored
 * under `key` for the loop that serves `s`: the first call on that loop
 * stores `make(make_arg)` (NULL: out of memory, nothing stored, NULL
 * returned; a later call tries again), and the server calls
 * `release(obj)` when that loop's worker ends (after every stream of it
 * has ended; on the thread that ends it, perhaps not the loop's).  `key`
 * is any address unique to the protocol (a static of its own); `make` and
 * `release` are read only on the call that stores.  Each loop has its own
 * object: it is never shared between threads.  Returns NULL also for a
 * bad argument (`s`, `key`, `make` or `release` NULL) or a stream that is
 * over.  Loop thread of `s`.
 */
HR_EXTERN void *hr_stream_loop_local(hr_stream_t *s, const void *key,
                                     void *(*make)(void *make_arg), void *make_arg,
                                     hr_stream_local_free_cb release);

/** The udata given to hr_response_upgrade. */
HR_EXTERN void *hr_stream_udata(const hr_stream_t *s);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_UPGRADE_H */
