/* SPDX-License-Identifier: MIT */
/*
 * Connections handed over by 101 Switching Protocols
 * (include/hroute/upgrade.h).  hr_response_upgrade answers the request and
 * leaves the stream on the exchange; when the exchange ends (h1.c), the
 * connection is marked upgraded and finds its stream by slot in the
 * worker's table (the slot shares the connection record's request counter,
 * so an HTTP connection pays nothing for it).  From then on conn.c hands
 * what it reads here instead of to the parser, and tells the stream when
 * the connection ends.
 */
#include <string.h>

#include "server/conn/conn.h"
#include "util/text.h"
#include "util/thread.h"

struct hr_stream_s {
  hr_stream_callbacks_t cb;
  hr__tnode_t timer; /* hr_stream_set_timeout, in the HR__TL_STREAM list */
  /* One reference while the stream is in the worker's table, one per
   * pending post (hr_stream_post): the last release frees it. */
  _Atomic unsigned refs;
  void *udata;
  hr__conn_t *conn;  /* NULL once the stream is over (or before attach) */
  hr__worker_t *w;
  uint32_t slot;
  int status;        /* what `closed` will say */
  unsigned attached : 1, paused : 1, closing : 1, want_drain : 1, shutdown_told : 1;
  unsigned owner_closed : 1; /* hr_stream_close: 0 once FIN is out */
  unsigned dead : 1;         /* failed or aborted: closed soon, never inside a call (doom) */
};

/* ---- the worker's table ------------------------------------------------------ */

static int slot_take(hr__worker_t *w, hr_stream_t *s) {
  uint32_t i;
  for (i = 0; i < w->streams_cap; i++)
    if (w->streams[i] == NULL) break;
  if (i == w->streams_cap) {
    uint32_t cap = w->streams_cap ? w->streams_cap * 2 : 16;
    hr_stream_t **n = hr__mem_realloc(&w->mem, w->streams, cap * sizeof(*n));
    if (n == NULL) return -1;
    memset(n + w->streams_cap, 0, (cap - w->streams_cap) * sizeof(*n));
    w->streams = n;
    w->streams_cap = cap;
  }
  w->streams[i] = s;
  s->slot = i;
  return 0;
}

static hr_stream_t *stream_of(const hr__conn_t *c) { return c->w->streams[c->stream_slot]; }

void hr__streams_free(hr__worker_t *w) {
  hr__mem_free(&w->mem, w->streams);
  w->streams = NULL;
  w->streams_cap = 0;
}

/* Streams come from the server's allocator itself, not the worker's
 * counted one: a post's release may free one from another thread. */
static hr_stream_t *stream_new(hr__worker_t *w) {
  const hr_allocator_t *a = w->mem.a;
  hr_stream_t *s = a->malloc(a->ctx, sizeof(*s));
  if (s == NULL) return NULL;
  memset(s, 0, sizeof(*s));
  hr__tnode_init(&s->timer);
  atomic_init(&s->refs, 1);
  s->w = w;
  return s;
}

static void stream_hold(hr_stream_t *s) {
  atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

static void stream_release(hr_stream_t *s) {
  /* acq_rel: every holder's use of *s happens before the free. */
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
    const hr_allocator_t *a = s->w->mem.a;
    a->free(a->ctx, s);
  }
}

/* The stream is over: out of the table and the timers, then the table's
 * reference goes. */
static void stream_free(hr_stream_t *s) {
  s->w->streams[s->slot] = NULL;
  hr__timer_clear(&s->timer);
  s->conn = NULL;
  stream_release(s);
}

/* ---- the upgrade ------------------------------------------------------------- */

/* protocol = token [ "/" token ] (RFC 9110 §7.8) */
static int protocol_ok(const char *p) {
  const char *slash = strchr(p, '/');
  size_t n = strlen(p);
  if (n > 64) return 0;
  if (slash != NULL)
    return hr__is_token((hr_span_t){p, (size_t)(slash - p)}) &&
           hr__is_token((hr_span_t){slash + 1, n - (size_t)(slash - p) - 1});
  return hr__is_token((hr_span_t){p, n});
}

/* Whether the request asked for an upgrade: Upgrade, and "upgrade" in
 * Connection (noted by parse.c). */
static int asks_upgrade(const hr_request_t *req) {
  hr_span_t v;
  return req->conn_upgrade && hr_request_field(req, HR_SPAN_LIT("Upgrade"), NULL, &v) == 0 &&
         v.len > 0;
}

int hr_response_upgrade_check(const hr_response_t *res) {
  const hr__exchange_t *ex = HR__EX_OF_RES(res);
  int err = hr__exchange_check_thread(ex);
  if (err != 0) return err;
  if (res->state != HR__RES_NEW) return HR_ESTATE;
  /* The whole request first: a body still to come (a streaming route,
   * perhaps held back for 100 Continue) would be taken for stream bytes. */
  return ex->msg_complete ? 0 : HR_ESTATE;
}

const hr_allocator_t *hr_response_allocator(const hr_response_t *res) {
  return HR__EX_OF_RES(res)->w->mem.a;
}

int hr_response_upgrade(hr_response_t *res, const char *protocol,
                        const hr_stream_callbacks_t *cb, void *udata, hr_stream_t **out) {
  hr__exchange_t *ex = HR__EX_OF_RES(res);
  hr_request_t *req = &ex->req;
  hr__conn_t *c = ex->conn;
  hr_stream_t *s;
  int err = hr_response_upgrade_check(res);
  if (out != NULL) *out = NULL;
  if (err != 0) return err;
  if (cb == NULL || cb->read == NULL || cb->closed == NULL || protocol == NULL ||
      !protocol_ok(protocol) || req->version != 11 || req->is_head || !asks_upgrade(req))
    return HR_EINVAL;
  if (c == NULL) {
    res->state = HR__RES_DONE;
    ex->handler_active = 0;
    hr__exchange_release(ex);
    return HR_ECLOSED;
  }
  s = stream_new(c->w);
  if (s == NULL) return HR_ENOMEM;
  s->cb = *cb;
  s->udata = udata;
  s->status = HR_ECLOSED;
  if (slot_take(c->w, s) != 0) {
    stream_release(s);
    return HR_ENOMEM;
  }
  /* RFC 9110 §15.2.2: the protocols switched to, and Connection naming
   * Upgrade; no Content-Length in a 1xx (§8.6). */
  if (hr__out_append(c, "HTTP/1.1 101 Switching Protocols\r\n", 34) != 0 ||
      (res->fields_len > 0 && hr__out_append(c, res->fields, res->fields_len) != 0) ||
      hr__out_append(c, "Upgrade: ", 9) != 0 || hr__out_append(c, protocol, strlen(protocol)) != 0 ||
      hr__out_append(c, "\r\nConnection: Upgrade\r\n\r\n", 25) != 0) {
    stream_free(s);
    hr__conn_framing_lost(c);
    return HR_ENOMEM;
  }
  res->status = 101;
  ex->upgrade = s;
  s->conn = c; /* writes, pause and close work at once; bytes follow the 101 */
  res->state = HR__RES_DONE;
  hr__conn_response_done(c);
  if (out != NULL) *out = s;
  return 0;
}

void hr__stream_attach(hr__conn_t *c, hr_stream_t *s) {
  c->upgraded = 1;
  c->stream_slot = s->slot;
  s->attached = 1;
  /* Closed by its owner before the hand-over: its bytes, then FIN. */
  if (s->closing) hr__conn_drain(c);
  /* A shutdown that began meanwhile is the owner's to hear now. */
  if (c->w->stopping) hr__stream_shutdown(c);
}

void hr__stream_discard(hr_stream_t *s) {
  /* The exchange ended without handing the connection over (it was lost
   * first): the owner hears that the stream is over. */
  s->cb.closed(s, HR_ECLOSED, s->udata);
  stream_free(s);
}

/* ---- events from the connection --------------------------------------------- */

int hr__stream_paused(const hr__conn_t *c) { return stream_of(c)->paused; }

int hr__stream_wants_drain(const hr__conn_t *c) {
  const hr_stream_t *s = stream_of(c);
  return s->want_drain && !s->closing;
}

void hr__stream_fin_sent(hr__conn_t *c) {
  hr_stream_t *s = stream_of(c);
  if (s->owner_closed) s->status = 0; /* everything went out */
}

void hr__stream_process(hr__conn_t *c) {
  hr_stream_t *s = stream_of(c);
  const hr_server_options_t *o = &c->w->server->opts;
  if (!s->dead && !s->paused && c->rbuf != NULL && c->msg_start < c->rlen) {
    uint32_t from = c->msg_start, to = c->rlen;
    /* Consumed before the call: the callback may pause, write or close. */
    c->msg_start = c->rlen = 0;
    s->cb.read(s, c->rbuf + from, to - from, s->udata);
    if (c->state == HR__C_CLOSED || c->w->streams[c->stream_slot] != s) return;
  }
  if (!s->dead && s->want_drain && !s->closing && !hr__out_writing(c) &&
      hr__out_queued_memory(c) <= o->write_high_water_bytes / 2) {
    s->want_drain = 0;
    if (s->cb.drain != NULL) s->cb.drain(s, s->udata);
  }
  /* Doomed by a callback just now: closed before what it queued goes. */
  if (s->dead) hr__conn_close(c);
}

void hr__stream_peer_eof(hr__conn_t *c) { stream_of(c)->status = UV_EOF; }

void hr__stream_gone(hr__conn_t *c) {
  hr_stream_t *s = stream_of(c);
  s->conn = NULL;
  c->upgraded = 0;
  hr__timer_clear(&s->timer);
  s->cb.closed(s, s->status, s->udata);
  stream_free(s);
}

void hr__stream_timeout(hr__tnode_t *n) {
  hr_stream_t *s = (hr_stream_t *)((char *)n - offsetof(hr_stream_t, timer));
  if (s->dead) { /* doom's deadline */
    hr__conn_close(s->conn);
    return;
  }
  s->cb.timeout(s, s->udata);
}

void hr__stream_shutdown(hr__conn_t *c) {
  hr_stream_t *s = stream_of(c);
  if (s->shutdown_told || s->closing) return;
  s->shutdown_told = 1;
  if (s->cb.shutdown != NULL) {
    s->cb.shutdown(s, s->udata);
    return;
  }
  /* No one to say goodbye: what is queued (the 101 perhaps) goes out,
   * then FIN. */
  s->status = HR_ECLOSED;
  s->closing = 1;
  hr__conn_drain(c);
  hr__conn_kick(c);
}

/* ---- the owner's calls -------------------------------------------------------- */

int hr_stream_check_thread(const hr_stream_t *s) {
  if (s == NULL) return HR_EINVAL;
  return hr__thread_is(&s->w->loop_thread) ? 0 : hr__worker_call_thread_err(s->w);
}

static int check(const hr_stream_t *s) {
  int err = hr_stream_check_thread(s);
  if (err != 0) return err;
  return s->conn == NULL || s->dead || s->conn->state == HR__C_CLOSED ? HR_ECLOSED : 0;
}

/* The stream is to be closed, what is queued dropped, never inside the
 * owner's call: right after the callback that asked when it is one of
 * hr__stream_process's (before the queue is flushed), else by the stream's
 * own deadline, set to now (hr__stream_timeout), whatever the connection's
 * state: one its owner closed (DRAINING) is no longer stepped, so a kick
 * would only flush what is to be dropped. */
static void doom(hr_stream_t *s) {
  s->status = HR_ECLOSED;
  s->dead = 1;
  hr__timer_set(&s->w->timers, &s->timer, HR__TL_STREAM, uv_now(s->w->loop));
}

/* Appends to the output queue; on failure the stream is doomed. */
static int append(hr_stream_t *s, const void *data, size_t len) {
  hr__conn_t *c = s->conn;
  if (len == 0) return 0;
  if (hr__out_append(c, data, len) != 0) {
    doom(s);
    return HR_ENOMEM;
  }
  hr__conn_kick(c);
  return 0;
}

int hr_stream_write(hr_stream_t *s, const void *data, size_t len) {
  int err = check(s);
  if (err != 0) return err;
  if (s->closing) return HR_ESTATE;
  if (len > 0 && hr__out_queued_memory(s->conn) > s->w->server->opts.write_high_water_bytes) {
    s->want_drain = 1;
    return HR_EAGAIN;
  }
  return append(s, data, len);
}

int hr_stream_write_past_mark(hr_stream_t *s, const void *data, size_t len) {
  int err = check(s);
  if (err != 0) return err;
  if (s->closing) return HR_ESTATE;
  return append(s, data, len);
}

size_t hr_stream_queued(const hr_stream_t *s) {
  if (hr_stream_check_thread(s) != 0 || s->conn == NULL) return 0;
  return hr__out_queued_memory(s->conn);
}

size_t hr_stream_high_water(const hr_stream_t *s) {
  return s != NULL ? s->w->server->opts.write_high_water_bytes : 0;
}

int hr_stream_want_drain(hr_stream_t *s) {
  int err = check(s);
  if (err != 0) return err;
  if (s->cb.drain == NULL) return HR_EINVAL;
  if (s->closing) return HR_ESTATE;
  s->want_drain = 1;
  hr__conn_kick(s->conn); /* a queue low already: the drain on the next turn */
  return 0;
}

int hr_stream_abort(hr_stream_t *s) {
  int err = check(s);
  if (err != 0) return err;
  doom(s);
  return 0;
}

int hr_stream_pause(hr_stream_t *s, int paused) {
  int err = check(s);
  if (err != 0) return err;
  s->paused = paused != 0;
  hr__conn_kick(s->conn); /* reading is re-armed, held bytes delivered */
  return 0;
}

int hr_stream_close(hr_stream_t *s) {
  int err = check(s);
  hr__conn_t *c;
  if (err != 0) return err;
  c = s->conn;
  if (s->closing) return 0;
  s->closing = 1;
  s->owner_closed = 1; /* closed says 0 only once FIN is out */
  /* What is queued goes out, then FIN (conn.c, as after a last response);
   * before the hand-over, from hr__stream_attach. */
  if (s->attached) hr__conn_drain(c);
  hr__conn_kick(c);
  return 0;
}

int hr_stream_set_timeout(hr_stream_t *s, uint64_t ms) {
  int err = check(s);
  if (err != 0) return err;
  if (s->cb.timeout == NULL) return HR_EINVAL;
  if (ms == 0)
    hr__timer_clear(&s->timer);
  else
    hr__timer_set(&s->w->timers, &s->timer, HR__TL_STREAM, uv_now(s->w->loop) + ms);
  return 0;
}

/* A post holds the stream until it has run: `fn` is the owner's callback
 * (hr_stream_post) or runner (hr_stream_post_fn, which carries the
 * owner's function in `aux`). */
static void run_post(void *target, hr__fn_t fn, hr__fn_t aux, void *udata) {
  (void)aux;
  ((hr_stream_post_cb)fn)(target, udata);
  stream_release(target);
}

static void run_post_fn(void *target, hr__fn_t fn, hr__fn_t aux, void *udata) {
  ((hr_stream_post_fn_cb)fn)(target, (hr_stream_fn)aux, udata);
  stream_release(target);
}

static int post(hr_stream_t *s, hr__post_run_t run, hr__fn_t fn, hr__fn_t aux, void *udata) {
  int err;
  if (s == NULL || fn == NULL) return HR_EINVAL;
  stream_hold(s);
  err = hr__worker_post(s->w, run, s, fn, aux, udata);
  if (err != 0) stream_release(s);
  return err;
}

int hr_stream_post(hr_stream_t *s, hr_stream_post_cb cb, void *udata) {
  return post(s, run_post, (hr__fn_t)cb, NULL, udata);
}

int hr_stream_post_fn(hr_stream_t *s, hr_stream_post_fn_cb run, hr_stream_fn fn, void *udata) {
  return post(s, run_post_fn, (hr__fn_t)run, (hr__fn_t)fn, udata);
}

void *hr_stream_udata(const hr_stream_t *s) { return s != NULL ? s->udata : NULL; }

uv_loop_t *hr_stream_loop(const hr_stream_t *s) { return s != NULL ? s->w->loop : NULL; }

/* ---- loop-local objects -------------------------------------------------------- */

/* One object of hr_stream_loop_local: a few per loop at most (one per
 * protocol that asks), so a list. */
struct hr__local_s {
  struct hr__local_s *next;
  const void *key;
  void *obj;
  hr_stream_local_free_cb release;
};

void *hr_stream_loop_local(hr_stream_t *s, const void *key, void *(*make)(void *), void *make_arg,
                           hr_stream_local_free_cb release) {
  struct hr__local_s *l;
  hr__worker_t *w;
  if (s == NULL || key == NULL || make == NULL || release == NULL) return NULL;
  if (hr_stream_check_thread(s) != 0 || s->conn == NULL) return NULL;
  w = s->w;
  for (l = w->locals; l != NULL; l = l->next)
    if (l->key == key) return l->obj;
  if ((l = hr__mem_alloc(&w->mem, sizeof(*l))) == NULL) return NULL;
  if ((l->obj = make(make_arg)) == NULL) {
    hr__mem_free(&w->mem, l);
    return NULL;
  }
  l->key = key;
  l->release = release;
  l->next = w->locals;
  w->locals = l;
  return l->obj;
}

void hr__stream_locals_free(hr__worker_t *w) {
  while (w->locals != NULL) {
    struct hr__local_s *l = w->locals;
    w->locals = l->next;
    l->release(l->obj);
    hr__mem_free(&w->mem, l);
  }
}
