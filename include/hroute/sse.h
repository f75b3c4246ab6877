/* SPDX-License-Identifier: MIT */
/**
 * @file
 * Server-sent events: a `text/event-stream` response (the HTML standard,
 * "Server-sent events", §9.2) on a streaming response, over HTTP/1.1
 * (chunked) and HTTP/2 (DATA frames) alike.
 *
 * A handler starts the stream, keeps the hr_sse_t, and sends events as they
 * happen (from its loop thread; from another thread through
 * hr_response_post()).  Each event goes out whole or not at all: when the
 * client does not keep up and the response's queue is over the server's
 * write_high_water_bytes, hr_sse_send() answers HR_EAGAIN and the drain
 * callback says when to go on.  A comment line goes out as a heartbeat
 * when nothing else was sent for `heartbeat_ms`, so that proxies and the
 * client see the connection live.  When the client goes away, the close
 * callback runs; the owner then ends the stream with hr_sse_end(), which
 * frees it.
 *
 * @code
 *   static void feed(hr_request_t *req, hr_response_t *res, void *udata) {
 *     hr_sse_t *sse;
 *     hr_span_t last;
 *     if (hr_sse_start(req, res, NULL, &sse) != 0) return;   // answered
 *     if (hr_sse_last_event_id(req, &last) == 0) replay_after(last);
 *     hr_sse_send(sse, "tick", "1", "12:00:00", 8);
 *     ... later: hr_sse_end(sse);
 *   }
 * @endcode
 */
#ifndef HROUTE_SSE_H
#define HROUTE_SSE_H

#include "common.h"
#include "error.h"
#include "http.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An event stream (hr_sse_start). */
typedef struct hr_sse_s hr_sse_t;

/** Runs once, on the loop thread, when the client went away (or the
 * server cut the response: a timeout, a shutdown) before hr_sse_end().
 * Sends fail from then on with HR_ECLOSED; call hr_sse_end() (here or
 * later) to free the stream. */
typedef void (*hr_sse_close_cb)(hr_sse_t *sse, void *udata);

/** Runs on the loop thread when the queue drained after an HR_EAGAIN
 * (`status` 0), or with HR_ECLOSED when the connection was lost. */
typedef void (*hr_sse_drain_cb)(hr_sse_t *sse, int status, void *udata);

/** Options of hr_sse_start(); hr_sse_options_init() sets the defaults. */
typedef struct hr_sse_options_s {
  /** A comment line (":" and a blank line) after this many milliseconds without any
   * other output; 0: none.  Default 15000 (many proxies drop a connection
   * idle for 30 or 60 s). */
  uint32_t heartbeat_ms;
  /** When nonzero, the stream starts with "retry: N": the client's
   * reconnection delay in milliseconds.  Default 0 (the browser's own,
   * a few seconds). */
  uint32_t retry_ms;
  hr_sse_close_cb on_close; /**< see hr_sse_close_cb; NULL: none */
  void *udata;              /**< passed to on_close and the drain callback */
} hr_sse_options_t;

/** Fills `o` with the defaults (heartbeat 15 s, no retry line, no callback). */
HR_EXTERN void hr_sse_options_init(hr_sse_options_t *o);

/**
 * Starts the event stream as the response to `req`: 200 with
 * "Content-Type: text/event-stream", "Cache-Control: no-cache" and
 * "X-Accel-Buffering: no" (a proxy that buffers responses, nginx for one,
 * passes the events on at once), of unknown length; fields the handler
 * added before go too.  The head goes out at once, with the retry line or
 * a comment.  `o` NULL: the defaults.  Returns 0 and stores the stream
 * (the caller's until hr_sse_end()), or HR_EINVAL (NULL arguments),
 * HR_ESTATE (the response started already), HR_ENOMEM (nothing sent:
 * the response is still the caller's to complete), HR_ECLOSED (the
 * connection is gone: complete the response), HR_ETHREAD.  Loop thread
 * of the request.
 */
HR_EXTERN int hr_sse_start(hr_request_t *req, hr_response_t *res, const hr_sse_options_t *o,
                           hr_sse_t **out);

/**
 * Sends one event: "event: <event>" when `event` is not NULL, "id: <id>"
 * when `id` is not NULL (the client's Last-Event-ID from then on; "" resets
 * it), then `data` (`len` bytes, UTF-8) as one "data:" line per line of
 * it (split at CR LF, CR or LF, as the client splits them), and the blank
 * line that dispatches it.  Returns 0, HR_EINVAL (an event name or id with
 * CR, LF or NUL; data NULL with len > 0), HR_EAGAIN (the client is behind:
 * nothing was sent; wait for the drain callback), HR_ECLOSED (the client
 * is gone), HR_ENOMEM (nothing sent), HR_ETHREAD.  Loop thread.
 */
HR_EXTERN int hr_sse_send(hr_sse_t *sse, const char *event, const char *id, const void *data,
                          size_t len);

/** Sends a comment line (": <text>", ignored by the client; text without
 * CR or LF, NULL for none).  Returns as hr_sse_send(). */
HR_EXTERN int hr_sse_comment(hr_sse_t *sse, const char *text);

/** Sends "retry: <ms>", the client's reconnection delay.  Returns as
 * hr_sse_send(). */
HR_EXTERN int hr_sse_retry(hr_sse_t *sse, uint32_t ms);

/** Sets the callback for the drain after an HR_EAGAIN (NULL to clear).
 * Returns 0, HR_ECLOSED, HR_ETHREAD. */
HR_EXTERN int hr_sse_on_drain(hr_sse_t *sse, hr_sse_drain_cb cb);

/**
 * The request's Last-Event-ID field (RFC-less: the HTML standard's, sent
 * by a client that reconnects after an event with an id).  Returns 0 and
 * stores the value (a span into the request, valid while it is), or
 * HR_ENOTFOUND.  Loop thread of the request.
 */
HR_EXTERN int hr_sse_last_event_id(const hr_request_t *req, hr_span_t *out);

/** The response the stream writes to (for hr_response_post() from another
 * thread, which is how events are sent from there). */
HR_EXTERN hr_response_t *hr_sse_response(const hr_sse_t *sse);

/**
 * Ends the stream: the response completes (the last chunk over HTTP/1.1,
 * END_STREAM over HTTP/2) and `sse` is freed (its timer closes on the
 * loop).  Returns what hr_response_end() returns (HR_ECLOSED when the
 * client left first); the stream is gone either way, except for
 * HR_ETHREAD (another thread: nothing was done).
 */
HR_EXTERN int hr_sse_end(hr_sse_t *sse);

#ifdef __cplusplus
}
#endif

#endif /* HROUTE_SSE_H */
