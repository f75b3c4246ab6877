/* SPDX-License-Identifier: MIT */
/*
 * Per-loop deadlines: one uv_timer_t per loop instead of one per
 * connection.  Every timeout a connection can wait for has a fixed length
 * per kind (keep-alive, header section, body, write progress, lingering
 * close; a stream's owner picks its own, and a node placed out of order
 * only costs a longer walk from the tail), so a node armed later in a kind's list is almost always due later
 * too: each kind keeps a list sorted by deadline, a node is inserted from
 * the tail (normally in one step), and the loop's timer is armed for the
 * earliest head.  Moving, re-arming and clearing a node are O(1) in the
 * normal case.  Loop thread only.
 */
#ifndef HR_SERVER_TIMER_H
#define HR_SERVER_TIMER_H

#include <stdint.h>
#include <uv.h>

typedef enum {
  HR__TL_IDLE = 0, /* keep-alive wait between requests */
  HR__TL_HEADER,   /* header section not complete */
  HR__TL_BODY,     /* body inactivity */
  HR__TL_WRITE,    /* output not progressing */
  HR__TL_LINGER,   /* closing: draining the peer's bytes after our FIN */
  HR__TL_STREAM,   /* an upgraded stream's owner deadline (lengths vary) */
  HR__TL_NAP,      /* an idle HTTP/2 connection gives its frame buffer back */
  HR__TL_COUNT,
  HR__TL_NONE = HR__TL_COUNT
} hr__tlist_t;

typedef struct hr__tnode_s {
  struct hr__tnode_s *prev, *next;
  uint64_t due; /* loop time, ms */
  uint8_t list; /* hr__tlist_t; HR__TL_NONE when not armed */
} hr__tnode_t;

typedef struct hr__timers_s hr__timers_t;
/* Called for each node whose deadline passed, after it was unarmed; it may
 * arm, clear or free any node. */
typedef void (*hr__timeout_cb)(hr__timers_t *t, hr__tnode_t *node,
                               hr__tlist_t list);

struct hr__timers_s {
  hr__tnode_t head[HR__TL_COUNT]; /* sentinels of circular lists */
  uv_timer_t timer;
  uint64_t armed_due; /* when `timer` fires; 0 when stopped */
  hr__timeout_cb cb;
};

/* Initialises the lists and the loop's timer (a handle the caller closes
 * with hr__timers_close). */
void hr__timers_init(hr__timers_t *t, uv_loop_t *loop, hr__timeout_cb cb);
void hr__timers_close(hr__timers_t *t, uv_close_cb cb);
void hr__tnode_init(hr__tnode_t *n);
/* Arms `n` in `list` for `due` (moving it when armed elsewhere). */
void hr__timer_set(hr__timers_t *t, hr__tnode_t *n, hr__tlist_t list,
                   uint64_t due);
/* Unarms `n` (no-op when not armed). */
void hr__timer_clear(hr__tnode_t *n);

#endif /* HR_SERVER_TIMER_H */
