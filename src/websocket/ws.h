/* SPDX-License-Identifier: MIT */
/*
 * A WebSocket connection (include/hroute/websocket.h): handshake.c checks
 * the opening handshake and answers it; session.c runs the connection over
 * the upgraded stream with wslay's event API.
 */
#ifndef HR_WEBSOCKET_WS_H
#define HR_WEBSOCKET_WS_H

#include <stdatomic.h>
#include <stdint.h>
#include <wslay/wslay.h>

#include "hroute/upgrade.h"
#include "hroute/websocket.h"

typedef struct hr__ws_held_s hr__ws_held_t; /* a message that came while paused */

struct hr_websocket_s {
  struct hr__worker_s *w;       /* the loop's; never changes */
  hr_stream_t *s;               /* NULL once the connection is over */
  wslay_event_context_ptr ctx;  /* NULL once over */
  hr_websocket_callbacks_t cb;
  void *udata;
  const hr_allocator_t *a;      /* the server's: a post may free `ws` anywhere */
  /* One reference for the connection's life, one per pending post. */
  _Atomic unsigned refs;
  /* The peer's bytes, during the stream's read callback. */
  const uint8_t *in;
  size_t in_len;
  size_t high_water;            /* the server's write_high_water_bytes */
  uint32_t ping_interval_ms, ping_timeout_ms, idle_timeout_ms, close_timeout_ms;
  uint64_t last_rx;             /* loop time of the last byte from the peer */
  uint64_t last_msg;            /* of the last message either way */
  uint64_t ping_sent, close_sent_at;
  char *subprotocol;
  hr__ws_held_t *held_msgs;     /* delivered on resume, before held bytes */
  uint8_t *held;                /* the peer's bytes not yet given to wslay */
  size_t held_len;
  uint8_t reason_len;           /* the peer's close reason */
  char reason[123];
  unsigned ping_out : 1;        /* a ping went out, no byte came since */
  unsigned in_recv : 1;         /* inside wslay_event_recv: sends only queue */
  unsigned want_drain : 1;      /* the owner got HR_EAGAIN */
  unsigned paused : 1;          /* hr_websocket_pause */
  unsigned read_paused : 1;     /* wslay holds frames the stream refused */
  unsigned stream_paused : 1;   /* what hr_stream_pause was last told */
  unsigned resume_posted : 1;
  unsigned fin_asked : 1;       /* hr_stream_close was called */
  unsigned close_queued : 1;    /* a close frame was queued (by anyone) */
};

/* session.c: sets up wslay and the timers' lengths from `o`; returns 0
 * or HR_ENOMEM.  Once the 101 is queued (ws->s set), _start arms the
 * timers; when the upgrade failed instead, _free undoes _init and frees
 * `ws`. */
int hr__ws_session_init(hr_websocket_t *ws, const hr_websocket_options_t *o);
void hr__ws_session_start(hr_websocket_t *ws);
void hr__ws_session_free(hr_websocket_t *ws);
extern const hr_stream_callbacks_t hr__ws_stream_callbacks;
void hr__ws_release(hr_websocket_t *ws);

#endif /* HR_WEBSOCKET_WS_H */
