/* SPDX-License-Identifier: MIT */
/*
 * Per-loop deadline lists (see timer.h).  The loop's uv_timer_t is only
 * restarted when a new deadline is earlier than the one it is armed for;
 * when it fires early for a node that moved later, it re-arms itself for
 * the new earliest head.
 */
#include "server/net/timer.h"

static void on_timer(uv_timer_t *h);

void hr__tnode_init(hr__tnode_t *n) {
  n->prev = n->next = NULL;
  n->due = 0;
  n->list = HR__TL_NONE;
}

void hr__timers_init(hr__timers_t *t, uv_loop_t *loop, hr__timeout_cb cb) {
  int i;
  for (i = 0; i < HR__TL_COUNT; i++) {
    t->head[i].prev = t->head[i].next = &t->head[i];
    t->head[i].list = (uint8_t)i;
  }
  uv_timer_init(loop, &t->timer);
  t->timer.data = t;
  t->armed_due = 0;
  t->cb = cb;
}

void hr__timers_close(hr__timers_t *t, uv_close_cb cb) {
  uv_close((uv_handle_t *)&t->timer, cb);
}

void hr__timer_clear(hr__tnode_t *n) {
  if (n->list == HR__TL_NONE) return;
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = NULL;
  n->list = HR__TL_NONE;
}

static void arm_loop_timer(hr__timers_t *t, uint64_t due) {
  uint64_t now = uv_now(t->timer.loop);
  if (t->armed_due != 0 && t->armed_due <= due) return;
  t->armed_due = due;
  uv_timer_start(&t->timer, on_timer, due > now ? due - now : 0, 0);
}

void hr__timer_set(hr__timers_t *t, hr__tnode_t *n, hr__tlist_t list,
                   uint64_t due) {
  hr__tnode_t *head = &t->head[list], *at;
  if (n->list == (uint8_t)list && n->due == due) return;
  hr__timer_clear(n);
  /* From the tail: deadlines of one kind are armed in nearly sorted order. */
  for (at = head->prev; at != head && at->due > due; at = at->prev)
    ;
  n->prev = at;
  n->next = at->next;
  at->next->prev = n;
  at->next = n;
  n->due = due;
  n->list = (uint8_t)list;
  arm_loop_timer(t, due);
}

static void on_timer(uv_timer_t *h) {
  hr__timers_t *t = h->data;
  uint64_t now = uv_now(h->loop), next = 0;
  int i;
  t->armed_due = 0;
  for (i = 0; i < HR__TL_COUNT; i++) {
    hr__tnode_t *head = &t->head[i];
    /* The callback may change any list: take one expired head at a time. */
    while (head->next != head && head->next->due <= now) {
      hr__tnode_t *n = head->next;
      hr__timer_clear(n);
      t->cb(t, n, (hr__tlist_t)i);
    }
  }
  for (i = 0; i < HR__TL_COUNT; i++) {
    hr__tnode_t *head = &t->head[i];
    if (head->next != head && (next == 0 || head->next->due < next))
      next = head->next->due;
  }
  if (next != 0 && (t->armed_due == 0 || next < t->armed_due)) {
    t->armed_due = next;
    uv_timer_start(h, on_timer, next > now ? next - now : 0, 0);
  }
}
