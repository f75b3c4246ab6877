/* SPDX-License-Identifier: MIT */
/*
 * A WebSocket connection (include/hroute/websocket.h).  handshake.c checks
 * the opening handshake and answers it; input.c reads frames with wslay's
 * frame API and builds messages (RFC 6455 §5.4, §5.5); session.c ties the
 * connection to its upgraded stream: sending, closing, timers, pause,
 * posts.  wslay's frame layer does the framing both ways (headers,
 * lengths, masking); the message layer is hroute's, so that every failure
 * gets its close code and nothing waits in a second queue: frames go
 * straight into the connection's output queue.  Only the public API is
 * used (upgrade.h: the stream's calls), as an application's own protocol
 * over a stream would.
 */
#ifndef HR_WEBSOCKET_WS_H
#define HR_WEBSOCKET_WS_H

#include <stdatomic.h>
#include <stdint.h>
#include <wslay/wslay.h>

#include "hroute/error.h"
#include "hroute/upgrade.h"
#include "hroute/websocket.h"

/* Close codes of RFC 6455 §7.4.1. */
enum {
  HR__WS_NORMAL = 1000,
  HR__WS_GOING_AWAY = 1001,
  HR__WS_PROTOCOL = 1002,
  HR__WS_NO_STATUS = 1005,
  HR__WS_ABNORMAL = 1006,
  HR__WS_BAD_DATA = 1007,
  HR__WS_TOO_BIG = 1009,
  HR__WS_INTERNAL = 1011,
};

/* permessage-deflate as agreed (deflate.c), allocated when it was. */
typedef struct hr__ws_pmd_s {
  uint8_t server_bits, client_bits; /* LZ77 windows: ours, the client's */
  uint8_t server_takeover, client_takeover; /* 1: the window outlives a message */
  uint8_t level, mem_level;
  uint32_t min_length;
  struct hr__ws_zown_s *own; /* zlib's state kept for takeover, made when used */
} hr__ws_pmd_t;

struct hr_websocket_s {
  /* The upgraded stream, set before `ws` is handed out and never changed:
   * allocated whenever `ws` may be used (its posts go through the
   * stream's, which hold it), so its thread check and loop serve `ws`'s
   * calls to the end. */
  hr_stream_t *stream;
  hr_stream_t *s;               /* the same; NULL once the connection is over */
  /* wslay's frame context (4 KiB of input buffer): made at the first
   * byte either way, freed again when the connection rests (nothing of a
   * frame buffered) at a timer, so an idle connection does not keep it. */
  wslay_frame_context_ptr fc;
  hr_websocket_callbacks_t cb;
  void *udata;
  const hr_allocator_t *a;      /* the server's: a post may free `ws` anywhere */
  /* One reference for the connection's life, one per pending post. */
  _Atomic unsigned refs;
  uint64_t max_message;

  /* Reading (input.c).  The peer's bytes during a read callback, and
   * those a pause left over. */
  const uint8_t *in;
  size_t in_len;
  uint8_t *held;
  size_t held_len;
  uint64_t frame_got;           /* payload bytes of the current frame so far */
  uint64_t given, taken;        /* bytes given to wslay; of whole headers and payloads */
  uint8_t tail[14];             /* the last bytes given to wslay: the longest
                                   frame header (input.c, header_refusal) */
  uint8_t msg_type;             /* HR_WS_TEXT/BINARY being assembled, or 0 */
  uint8_t ctrl_op;              /* the control frame being read */
  uint8_t ctrl_len;
  /* Its payload.  After the peer's close frame nothing more is read, so
   * the close's payload stays: its reason is ctrl + 2 (reason_len). */
  uint8_t ctrl[125];
  hr__ws_pmd_t *pmd;            /* NULL: not negotiated */
  uint8_t *msg;                 /* the message being assembled */
  size_t msg_len, msg_cap;

  /* Timers (session.c); loop times in ms, lengths from the options. */
  uint32_t ping_interval_ms, ping_timeout_ms, idle_timeout_ms, close_timeout_ms;
  uint64_t last_rx, last_msg, ping_sent, close_sent_at;
  uint64_t fin_at;

  char *subprotocol;
  uint16_t code_rx;             /* the peer's close code (1005: none) */
  uint16_t code_tx;             /* the code of the close frame sent */
  uint8_t reason_len;           /* the peer's close reason: ctrl + 2 */
  unsigned in_frame : 1;        /* a frame's payload is being read */
  unsigned in_pump : 1;         /* inside input.c's loop */
  unsigned close_rx : 1;        /* the peer's close frame came */
  unsigned close_tx : 1;        /* the server's close frame was queued */
  unsigned read_done : 1;       /* nothing more is read (closed or failed) */
  unsigned paused : 1;          /* hr_websocket_pause */
  unsigned stream_paused : 1;   /* what hr_stream_pause was last told */
  unsigned resume_posted : 1;
  unsigned want_drain : 1;      /* the owner got HR_EAGAIN */
  unsigned ping_out : 1;        /* a ping went out, no byte came since */
  unsigned fin_asked : 1;       /* hr_stream_close was called */
  unsigned broken : 1;          /* a write failed: closed follows */
  unsigned over : 1;            /* the closed callback ran */
  unsigned msg_deflated : 1;    /* the message came with RSV1 (permessage-deflate) */
};

/* input.c: gives the peer's bytes (data, len; may be none) and those held
 * to the frame reader while the owner does not pause; what is left is
 * held.  Messages go to the message callback. */
void hr__ws_input(hr_websocket_t *ws, const uint8_t *data, size_t len);
void hr__ws_input_free(hr_websocket_t *ws);
/* Keeps bytes that came while paused, for the resume. */
void hr__ws_input_hold(hr_websocket_t *ws, const uint8_t *data, size_t len);
/* wslay's recv callback: from ws->in. */
ssize_t hr__ws_recv_cb(uint8_t *buf, size_t len, int flags, void *user);

/* deflate.c: the answer to the client's permessage-deflate offers: 1 and
 * `agreed` and `answer` (the Sec-WebSocket-Extensions value, NUL-ended)
 * filled when one is accepted, else 0. */
int hr__ws_pmd_negotiate(const hr_request_t *req, const hr_websocket_deflate_t *d,
                         hr__ws_pmd_t *agreed, char *answer, size_t cap);
int hr__ws_pmd_options_ok(const hr_websocket_deflate_t *d);
/* Compresses a message to send: 0 and *out (the loop's buffer, until
 * hr__ws_pmd_sent), 1 when it goes uncompressed, HR_ENOMEM. */
int hr__ws_pmd_compress(hr_websocket_t *ws, const void *in, size_t len, const uint8_t **out,
                        size_t *out_len);
void hr__ws_pmd_sent(hr_websocket_t *ws);
/* Inflates a received message: 0 and *out (the loop's buffer, until
 * hr__ws_pmd_delivered), or a close code (1007, 1009, 1011). */
int hr__ws_pmd_inflate(hr_websocket_t *ws, const uint8_t *in, size_t len, const uint8_t **out,
                       size_t *out_len);
void hr__ws_pmd_delivered(hr_websocket_t *ws);
/* Frees zlib's state kept for context takeover (the connection ended). */
void hr__ws_pmd_end(hr_websocket_t *ws);
void hr__ws_pmd_free(hr_websocket_t *ws); /* and the agreement (ws is freed) */

/* session.c */
/* Makes ws->fc when there is none; returns 0 or -1 (out of memory). */
int hr__ws_frames(hr_websocket_t *ws);
int hr__ws_session_init(hr_websocket_t *ws, const hr_websocket_options_t *o);
void hr__ws_session_start(hr_websocket_t *ws); /* once ws->s is set */
void hr__ws_session_free(hr_websocket_t *ws);  /* the upgrade failed */
extern const hr_stream_callbacks_t hr__ws_stream_callbacks;
void hr__ws_release(hr_websocket_t *ws);
uint64_t hr__ws_now(const hr_websocket_t *ws);
/* Queues one frame (FIN set) in the connection's output queue, whatever
 * is queued already.  Returns 0 or HR_ENOMEM (the connection fails). */
int hr__ws_send_frame(hr_websocket_t *ws, int opcode, const void *data, size_t len);
/* The same with reserved bits (wslay's rsv: RSV1 is WSLAY_RSV1_BIT). */
int hr__ws_send_frame_rsv(hr_websocket_t *ws, int opcode, uint8_t rsv, const void *data,
                          size_t len);
/* Queues the server's close frame (code 0: none) unless one went out. */
void hr__ws_send_close(hr_websocket_t *ws, uint16_t code, const void *reason, size_t len);
/* Fails the connection (RFC 6455 §7.1.7): close `code`, read no more,
 * then close the TCP connection once the frame is out. */
void hr__ws_fail(hr_websocket_t *ws, uint16_t code);
/* Whether frames are read now: not while the owner pauses, unless the
 * server's close frame is out (then the peer's close is waited for). */
static inline int hr__ws_reading(const hr_websocket_t *ws) { return !ws->paused || ws->close_tx; }
/* Ends the TCP connection when both close frames are settled. */
void hr__ws_settle(hr_websocket_t *ws);
int hr__ws_close_code_ok(unsigned code, int received);

#endif /* HR_WEBSOCKET_WS_H */
