/* SPDX-License-Identifier: MIT */
/** @file
 * WebSocket (RFC 6455) on an upgraded connection (upgrade.h), with
 * Debian's wslay doing the framing (its frame layer: headers, lengths,
 * masking; the message layer is hroute's).  A handler calls hr_websocket_accept
 * on a GET that asks for one; from then on whole messages arrive at the
 * message callback (fragments reassembled up to a per-route limit, text
 * checked as UTF-8), pings are answered, the close handshake is done, and
 * hr_websocket_send queues messages with backpressure.  One extension is
 * offered when an endpoint turns it on: permessage-deflate (RFC 7692,
 * hr_websocket_deflate_t), with zlib; otherwise frames with RSV bits set
 * fail the connection.
 *
 * How a connection ends, and the close code each end sees:
 *   - A frame that breaks RFC 6455 (not masked, a reserved opcode or bit, a
 *     fragmented or oversized control frame, a continuation out of place,
 *     a length not in its shortest form, a close frame of one byte or with
 *     a code not allowed on the wire): the server sends close 1002 and
 *     closes the connection (§7.1.7).
 *   - A text message (or close reason) that is not UTF-8: 1007 (§8.1).
 *   - A message longer than max_message_bytes: 1009, counted by the
 *     lengths frames declare: a frame whose header says the message will
 *     be longer is refused as soon as its length is in, before its mask
 *     key and payload (a 4 GiB frame's first 10 bytes suffice).
 *   - The peer's close: answered with the same code (§5.5.1), then the
 *     server closes the TCP connection (§7.1.1).  Whichever way it ends,
 *     output the peer does not take within close_timeout_ms of the end
 *     being asked for is dropped with the connection.
 *   - hr_websocket_close: the server's close frame, then it waits up to
 *     close_timeout_ms (from the call) for the peer's before closing the
 *     connection: with FIN when everything went out, else it is dropped
 *     (the peer reads nothing either), not left to write_timeout_ms.
 *   - No byte from the peer for ping_interval_ms: a ping; still nothing
 *     ping_timeout_ms later: the connection is dropped (closed gets 1006).
 *   - No message (text or binary, either way) for idle_timeout_ms: close
 *     1001.
 *   - A graceful server shutdown: the shutdown callback, or close 1001 when
 *     there is none; the shutdown deadline drops what is still open.
 *
 * Threads: every call from the loop thread that serves the connection (the
 * callbacks run there), except hr_websocket_post(), which any thread may
 * call; use it to send from other threads.
 */
#ifndef HROUTE_WEBSOCKET_H
#define HROUTE_WEBSOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A WebSocket connection, made by hr_websocket_accept and owned by the
 * server: valid until its closed callback has returned, and for callbacks
 * hr_websocket_post queued before then, until they have run. */
typedef struct hr_websocket_s hr_websocket_t;

/** Message types (the frame opcodes of RFC 6455 §5.6), and a flag for
 * hr_websocket_send. */
enum { HR_WS_TEXT = 1, HR_WS_BINARY = 2, HR_WS_UNCOMPRESSED = 0x100 };
/** @var HR_WS_TEXT
 * A text message: its payload is UTF-8 (opcode 0x1). */
/** @var HR_WS_BINARY
 * A binary message: any bytes (opcode 0x2). */
/** @var HR_WS_UNCOMPRESSED
 * OR'ed into hr_websocket_send's type: send this message uncompressed
 * even when permessage-deflate was negotiated (data compressed already). */

/**
 * permessage-deflate (RFC 7692): messages compressed with DEFLATE (zlib's
 * raw deflate, RFC 1951), each flagged by RSV1 in its first frame.  Off
 * unless `enabled`; then the first offer in the client's
 * Sec-WebSocket-Extensions that these settings can meet is accepted (§7.1:
 * an offer with an unknown, repeated or malformed parameter is declined,
 * and so is one that limits the server's window to 8 bits, which zlib's
 * raw deflate cannot write), and the answer names the parameters agreed.
 * No acceptable offer: the connection goes on uncompressed.
 *
 * Memory.  By default (`context_takeover` 0) each message is compressed
 * alone both ways: the answer carries server_no_context_takeover and
 * client_no_context_takeover, and the loop's shared compressors (one per
 * set of window, level and memLevel agreed, up to 4, the least recently
 * used made again) and one decompressor, reset for each message, serve
 * every connection of that loop (hr_stream_loop_local): a connection
 * holds no compression state at all,
 * only its message while it is being read, as without the extension.  With
 * `context_takeover` 1 each direction keeps its LZ77 window across
 * messages (smaller output for many small, similar messages), unless the
 * client asked for no context takeover in that direction: a connection
 * then keeps zlib's state from its first compressed message to its end,
 * about 2^(server_window_bits+2) + 2^(mem_level+9) bytes for the
 * compressor and 2^(client window) bytes plus 7 KiB for the decompressor
 * (zlib's figures; 15 and 8 give about 300 KiB, 10 and 4 about 22 KiB;
 * docs/websocket.md has the measured ones).  From the server's allocator.
 *
 * Messages received compressed are inflated to at most max_message_bytes
 * (more: 1009, however small the compressed message; the compressed bytes
 * on the wire count against the same limit plus 1/16 of it and 1 KiB,
 * room for data that did not shrink; the loop's buffer for it grows to
 * the limit and a byte at most and is not kept after a refusal; bytes
 * after a final block, BFINAL, are ignored, as RFC 7692 §7.2.3.4's own
 * example needs); data that is not valid DEFLATE
 * fails the connection with 1007.  Messages sent: compressed when at least
 * `min_length` bytes long, not empty and not flagged HR_WS_UNCOMPRESSED;
 * without context takeover, a message that does not shrink goes
 * uncompressed.
 * Control frames are never compressed (RFC 7692 §6.1).
 */
typedef struct hr_websocket_deflate_s {
  /** 1: accept permessage-deflate offers; 0 (the default): decline them
   * (the extension is not named in the answer).  Without zlib at build
   * time offers are always declined. */
  uint8_t enabled;
  /** 0 (the default): no context takeover either way (see above); 1: keep
   * the windows across messages when the client allows. */
  uint8_t context_takeover;
  /** The server's LZ77 window, 9..15 bits (15): sent as
   * server_max_window_bits when under 15 or when the client asks for
   * less, the smaller of the two used. */
  uint8_t server_window_bits;
  /** The window the client may use, 8..15 bits (15): sent as
   * client_max_window_bits when the client offers that parameter and the
   * window agreed is under 15 (the client's value, when it gives one,
   * lowers it).  A client that does not offer it
   * may use 15, and the decompressor's window is then 15. */
  uint8_t client_window_bits;
  /** zlib's compression level, 1..9 (1). */
  uint8_t level;
  /** zlib's memLevel, 1..9 (8): memory for the compressor's hash chains. */
  uint8_t mem_level;
  /** Messages shorter than this are sent uncompressed (64 bytes). */
  uint32_t min_length;
} hr_websocket_deflate_t;

/** Per-endpoint settings; hr_websocket_options_init() fills the defaults
 * shown.  Times in milliseconds; 0 turns a timer off. */
typedef struct hr_websocket_options_s {
  /** Longest message accepted, after reassembly (1 MiB); longer: 1009. */
  uint64_t max_message_bytes;
  uint32_t ping_interval_ms; /**< 30000: peer silent this long, ping it */
  uint32_t ping_timeout_ms;  /**< 10000: no byte this long after a ping, drop */
  uint32_t idle_timeout_ms;  /**< 0: no message this long either way, 1001 */
  uint32_t close_timeout_ms; /**< 5000: wait for the peer's close frame */
  /** Subprotocols the endpoint speaks, best first, NULL-terminated (NULL:
   * none).  The first of these that the client offers in
   * Sec-WebSocket-Protocol is chosen, whatever the client's own order (RFC
   * 6455 §4.2.2); when it offers none of them the handshake goes on
   * without one.  Read during hr_websocket_accept only. */
  const char *const *subprotocols;
  /** Which pages may open the connection (RFC 6455 §10.2: a browser sends
   * the page's origin; a server that does not check it lets any site act
   * with its users' cookies, "cross-site WebSocket hijacking").  NULL: a
   * request with an Origin field must come from the host it asks for (the
   * origin's host and port equal the Host field, ASCII case-insensitively);
   * one without (most non-browser clients) is accepted.  Otherwise a
   * NULL-terminated list of origins accepted exactly (ASCII
   * case-insensitively, e.g. "https://app.example.com"), where "*" accepts
   * any.  Refused: 403.  Read during hr_websocket_accept only. */
  const char *const *origins;
  /** permessage-deflate (off by default; see hr_websocket_deflate_t).
   * Read during hr_websocket_accept only. */
  hr_websocket_deflate_t deflate;
} hr_websocket_options_t;

/** Fills `opts` with the defaults shown in hr_websocket_options_t.  Any
 * thread. */
HR_EXTERN void hr_websocket_options_init(hr_websocket_options_t *opts);

/** How the connection ended (the closed callback's view). */
typedef struct hr_websocket_close_s {
  /** The peer's close code: 1005 when its close frame carried none, 1006
   * when no close frame came (a reset, a timeout, the server failing the
   * connection first: see sent_code). */
  uint16_t code;
  /** The code of the server's close frame; 0 when none went out. */
  uint16_t sent_code;
  /** The peer's close reason (UTF-8, at most 123 bytes), valid during the
   * call only. */
  const char *reason;
  size_t reason_len; /**< bytes of reason (not NUL-terminated); 0: none */
} hr_websocket_close_t;

/** What the server calls on a connection, on its loop thread, each with
 * the udata given to hr_websocket_accept (which copies this).  message and
 * closed are required; the others may be NULL. */
typedef struct hr_websocket_callbacks_s {
  /** A whole message: `type` HR_WS_TEXT (valid UTF-8) or HR_WS_BINARY,
   * `data` valid during the call only (len may be 0). */
  void (*message)(hr_websocket_t *ws, int type, const void *data, size_t len,
                  void *udata);
  /** The connection is over; runs exactly once, never inside a call of the
   * owner's.  No call on `ws` after it returns, except the ones in
   * callbacks posted before (they answer HR_ECLOSED). */
  void (*closed)(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata);
  /** Optional: after hr_websocket_send answered HR_EAGAIN, the queue fell
   * to half the server's write_high_water_bytes or less. */
  void (*drain)(hr_websocket_t *ws, void *udata);
  /** Optional: the server began a graceful shutdown; say goodbye
   * (hr_websocket_close) before its deadline.  NULL: close 1001. */
  void (*shutdown)(hr_websocket_t *ws, void *udata);
} hr_websocket_callbacks_t;

/**
 * Answers `res` (the response to `req`) with 101 Switching Protocols and
 * Sec-WebSocket-Accept when `req` is a valid opening handshake (RFC 6455
 * §4.2.1: GET, HTTP/1.1, Upgrade: websocket, Connection: upgrade, a
 * Sec-WebSocket-Key of 16 bytes in base64, Sec-WebSocket-Version: 13),
 * choosing a subprotocol from `opts` (NULL: the defaults).  The handler's
 * fields go out with the 101.  `cb` is copied; message and closed are
 * required.  Stores the connection in *out (may be NULL): sends work at
 * once (a greeting goes right after the 101).
 *
 * Returns 0; HR_EINVAL when the handshake is not valid: the response was
 * then sent (426 Upgrade Required with "Sec-WebSocket-Version: 13" for a
 * version other than 13, 403 for an origin `opts` does not accept, 405
 * for a method other than GET, 400 otherwise, with hr_response_error: the
 * body and Content-Type of the router's error_body hook when it has one,
 * else a one-line reason as text/plain) and is complete; HR_EINVAL also for a bad argument (no response
 * sent); HR_ESTATE (the response already started, or a body is still to
 * come), HR_ECLOSED (the connection is gone; the response is complete),
 * HR_ENOMEM, HR_ETHREAD.  Loop thread.
 */
HR_EXTERN int hr_websocket_accept(hr_request_t *req, hr_response_t *res,
                                  const hr_websocket_options_t *opts,
                                  const hr_websocket_callbacks_t *cb, void *udata,
                                  hr_websocket_t **out);

/**
 * Queues a copy of a message of `len` bytes (RFC 6455 §6.1), `type`
 * HR_WS_TEXT (must be valid UTF-8) or HR_WS_BINARY, either OR'ed with
 * HR_WS_UNCOMPRESSED or not, into the connection's output queue,
 * compressed first when permessage-deflate was negotiated (see
 * hr_websocket_deflate_t).  When more than the server's write_high_water_bytes are
 * queued already, nothing is and HR_EAGAIN is returned: wait for the drain
 * callback.  So what waits is bounded by the high-water mark plus one
 * message; and while that much is queued the peer's bytes
 * are not read.  Returns 0, HR_EAGAIN, HR_EINVAL (bad type, text
 * not UTF-8), HR_ESTATE (a close frame was sent already), HR_ECLOSED,
 * HR_ENOMEM (the connection fails: closed follows), HR_ETHREAD.
 */
HR_EXTERN int hr_websocket_send(hr_websocket_t *ws, int type, const void *data,
                                size_t len);

/**
 * Starts the close handshake (RFC 6455 §5.5.1, §7.1.2): sends a close frame
 * with `code` (1000-4999 except the reserved 1004-1006, 1015; 0 sends a
 * frame without a code) and `reason` (UTF-8, at most 123 bytes, may be
 * NULL), then waits up to close_timeout_ms for the peer's close.  Messages
 * that arrive meanwhile are still delivered, unless the owner paused:
 * then they are dropped, so that the peer's close is read.  Returns 0, HR_EINVAL (bad
 * code or reason), HR_ESTATE (a close frame was sent already),
 * HR_ECLOSED, HR_ENOMEM, HR_ETHREAD.
 */
HR_EXTERN int hr_websocket_close(hr_websocket_t *ws, uint16_t code, const char *reason,
                                 size_t reason_len);

/**
 * Stops (paused != 0) or restarts delivering messages: while paused, no
 * message callback runs, and the peer's bytes wait in the kernel (TCP's
 * window pushes back).  A pause inside a message callback takes effect at
 * once: bytes that had already arrived are kept and their messages
 * delivered, in order, on a later loop turn after the resume (never inside
 * this call).  Pings are not answered while paused, so a long pause may
 * meet the peer's own timeout.  Once the server's close frame is out the
 * pause no longer holds reading back: what comes before the peer's close
 * is dropped while paused.  Returns 0, HR_ECLOSED, HR_ENOMEM,
 * HR_ETHREAD.
 */
HR_EXTERN int hr_websocket_pause(hr_websocket_t *ws, int paused);

/** Callback run on the connection's loop thread by hr_websocket_post(). */
typedef void (*hr_websocket_post_cb)(hr_websocket_t *ws, void *udata);

/**
 * Runs `cb(ws, udata)` on the loop thread that serves `ws`, soon, never
 * inside this call: the way to send from another thread.  Any thread may
 * call it until the closed callback has returned, and the owner makes sure
 * none calls it later (typically: a lock the posting threads hold, which
 * the closed callback takes to forget `ws`).  A callback posted before
 * then still runs, after the closed callback if the connection ended
 * meanwhile (its calls on `ws` then answer HR_ECLOSED, and
 * hr_websocket_udata still returns the accept's udata, which the closed
 * callback may have freed: give the post a udata of its own, counted, if
 * it needs the owner's state); `ws` stays allocated until it has run.
 * Allocates one small node.  Returns 0, HR_EINVAL (cb NULL), HR_ENOMEM,
 * HR_ECLOSED (the server was closed or stopped and the loop that served
 * `ws` has ended); cb does not run on an error.
 */
HR_EXTERN int hr_websocket_post(hr_websocket_t *ws, hr_websocket_post_cb cb, void *udata);

/** The subprotocol chosen by hr_websocket_accept (a copy owned by `ws`), or
 * NULL. */
HR_EXTERN const char *hr_websocket_subprotocol(const hr_websocket_t *ws);

/** Whether permessage-deflate was negotiated on `ws` (1) or not (0; also
 * for `ws` NULL).  Any call after hr_websocket_accept returned it. */
HR_EXTERN int hr_websocket_deflated(const hr_websocket_t *ws);

/** The udata given to hr_websocket_accept. */
HR_EXTERN void *hr_websocket_udata(const hr_websocket_t *ws);

/** The loop that serves `ws` (for timers of the owner's). */
HR_EXTERN uv_loop_t *hr_websocket_loop(const hr_websocket_t *ws);

#ifdef __cplusplus
}
#endif
#endif /* HROUTE_WEBSOCKET_H */
