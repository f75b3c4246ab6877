/* SPDX-License-Identifier: MIT */
/*
 * The HTTP/2 session of a connection (RFC 9113): nghttp2's server session
 * fed from the connection's read buffer (nghttp2_session_mem_recv) and
 * drained into its output queue (nghttp2_session_mem_send), with every
 * allocation of nghttp2's through the server's allocator.  Each request
 * stream becomes an exchange; its header list is collected into the
 * exchange's request by h2_head.c, then it goes the way every request
 * goes (dispatch.c).
 *
 * What hroute bounds itself, besides what nghttp2 does (CONTINUATION
 * frames per header block, outbound SETTINGS and PING acknowledgements,
 * SETTINGS entries, concurrent streams):
 * - the decoded header list (max_header_bytes, counted as §6.5.2 counts
 *   it, and max_header_fields): 431 on the stream (HPACK bombs);
 * - stream resets, those the client sends and those the server makes for
 *   the client's errors, against one token bucket: past it, GOAWAY
 *   ENHANCE_YOUR_CALM (Rapid Reset, CVE-2023-44487; MadeYouReset);
 * - handlers of complete requests run after the whole read was processed,
 *   so a request reset in the same read never reaches its handler;
 * - output: frames are taken from nghttp2 only while the connection's
 *   queue is below the write high-water mark, so a client that does not
 *   read (acknowledgement floods, zero windows) holds at most that much.
 *
 * Closing stays conn.c's: this file asks with hr__conn_drain (after a
 * final GOAWAY) and hr__conn_close (a broken session).
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "server/conn/wire.h"
#include "server/h2/h2.h"
#include "util/rcu.h"

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN 24

int hr__h2_preface(const char *p, size_t n) {
  size_t k = n < PREFACE_LEN ? n : PREFACE_LEN;
  if (memcmp(p, preface, k) != 0) return -1;
  return n >= PREFACE_LEN ? 1 : 0;
}

/* ---- nghttp2's allocations, through the server's allocator --------------- */

/* The session's outbound frame buffer is its first allocation of 16 KiB
 * or more while it is made (nghttp2_session_new: NGHTTP2_FRAMEBUF_CHUNKLEN,
 * a frame header, a pad byte and the largest payload).  It is allocated
 * with a page of slack and handed out page-aligned, so that its pages can
 * be given back whole while the connection idles (h2_nap). */
#define HR__H2_FRAMEBUF_MIN 16384
#define HR__PAGE 4096

static void *ng_malloc(size_t size, void *ud) {
  hr__h2_t *h2 = ud;
  char *raw;
  if (!h2->creating || h2->fb != NULL || size < HR__H2_FRAMEBUF_MIN || size > SIZE_MAX - HR__PAGE)
    return hr__slab_alloc(&h2->c->w->slab, size);
  /* Whole pages, page-aligned: its last page is not shared with the next
   * block, so none of it stays in use while it naps. */
  size = (size + HR__PAGE - 1) & ~(size_t)(HR__PAGE - 1);
  raw = hr__mem_alloc(&h2->c->w->mem, size + HR__PAGE - 1);
  if (raw == NULL) return NULL;
  h2->fb_raw = raw;
  h2->fb = (char *)(((uintptr_t)raw + HR__PAGE - 1) & ~(uintptr_t)(HR__PAGE - 1));
  h2->fb_len = size;
  return h2->fb;
}

static void ng_free(void *ptr, void *ud) {
  hr__h2_t *h2 = ud;
  if (ptr != NULL && ptr == h2->fb) {
    hr__mem_free(&h2->c->w->mem, h2->fb_raw);
    h2->fb = h2->fb_raw = NULL;
    return;
  }
  hr__slab_free(&h2->c->w->slab, ptr);
}

static void *ng_realloc(void *ptr, size_t size, void *ud) {
  hr__h2_t *h2 = ud;
  char *p;
  if (ptr == NULL) return ng_malloc(size, ud); /* how nghttp2_buf_reserve allocates */
  if (ptr != h2->fb) return hr__slab_realloc(&h2->c->w->slab, ptr, size);
  /* Not done by nghttp2 1.52 to this buffer; kept correct all the same. */
  p = hr__slab_alloc(&h2->c->w->slab, size);
  if (p == NULL) return NULL;
  memcpy(p, ptr, size < h2->fb_len ? size : h2->fb_len);
  ng_free(ptr, ud);
  return p;
}

static void *ng_calloc(size_t n, size_t size, void *ud) {
  void *p;
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  p = ng_malloc(n * size, ud);
  if (p != NULL) memset(p, 0, n * size);
  return p;
}

/* The connection has had no stream for HR__H2_NAP_MS: the frame buffer's
 * pages go back to the kernel (their content is only ever the frame being
 * written, and nghttp2 writes a frame whole before it is sent: pages that
 * come back zeroed on the next frame are as good). */
static void h2_nap(hr__h2_t *h2) {
  if (h2->fb == NULL || h2->fb_napping || nghttp2_session_want_write(h2->ng)) return;
  madvise(h2->fb, h2->fb_len, MADV_DONTNEED);
  h2->fb_napping = 1;
}

static void session_free(hr__conn_t *c, hr__h2_t *h2);

/* ---- streams ------------------------------------------------------------- */

static void ready_remove(hr__h2_t *h2, hr__h2s_t *st) {
  hr__h2s_t **pp = &h2->ready, *prev = NULL;
  while (*pp != NULL && *pp != st) prev = *pp, pp = &(*pp)->ready_next;
  if (*pp == st) {
    *pp = st->ready_next;
    if (h2->ready_tail == st) h2->ready_tail = prev;
  }
  st->ready_next = NULL;
  st->ready = 0;
}

void hr__h2_ready_push(hr__h2_t *h2, hr__h2s_t *st) {
  if (st->ready) return;
  st->ready = 1;
  st->ready_next = NULL;
  if (h2->ready_tail != NULL)
    h2->ready_tail->ready_next = st;
  else
    h2->ready = st;
  h2->ready_tail = st;
}

/* The stream is done with its exchange: released when its handler is done
 * with it too, else detached (the handler hears through its abort
 * callback, with `body_status` for a body callback). */
static void stream_drop(hr__h2s_t *st, int body_status) {
  hr__exchange_t *ex = st->ex;
  hr__conn_t *c = st->h2->c;
  if (ex == NULL) return;
  if (st->ready) ready_remove(st->h2, st);
  st->ex = NULL;
  ex->h2s = NULL;
  ex->dropped = 1;
  if (ex->phase != HR__PH_HEAD) c->requests_served++; /* a request */
  if (!ex->handler_active || ex->res.state == HR__RES_DONE) {
    hr_request_t *r = &ex->req;
    if (r->body_cb != NULL && !r->body_done) {
      /* Answered before the body ended (the rest is not wanted, RFC 9113
       * §8.1): the body callback still hears, once, that it is over, as
       * it would on HTTP/1.1, where the body is read to its end. */
      hr_span_t none = {NULL, 0};
      r->body_done = 1;
      hr__exchange_hold(ex);
      r->body_cb(r, none, body_status, r->body_udata);
      hr__exchange_unhold(ex);
    }
    hr__exchange_release(ex);
    return;
  }
  hr__exchange_keep(ex);
  hr__exchange_detach(ex, hr__conn_peer_text(c));
  hr__exchange_abort(ex, body_status);
}

static void stream_free(hr__h2_t *h2, hr__h2s_t *st) {
  if (st->prev != NULL)
    st->prev->next = st->next;
  else
    h2->streams = st->next;
  if (st->next != NULL) st->next->prev = st->prev;
  h2->nstreams--;
  if (h2->nstreams == 0) h2->idle_since = uv_now(h2->c->w->loop);
  hr__h2_pieces_free(st);
  hr__mem_free(&h2->c->w->mem, st->held); /* what a paused body held */
  st->held = NULL;
  stream_drop(st, HR_ECLOSED);
  hr__slab_free(&h2->c->w->slab, st);
}

/* ---- the reset budget ---------------------------------------------------- */

/* One reset the client caused.  Past the budget the session ends with
 * GOAWAY(ENHANCE_YOUR_CALM) (RFC 9113 §5.4.1, §7). */
static void spend(hr__h2_t *h2) {
  const hr_server_options_t *o = &h2->c->w->server->opts;
  uint64_t now = uv_now(h2->c->w->loop), cap = (uint64_t)o->h2_reset_burst * 1000;
  /* h2_reset_rate tokens a second are rate milli-tokens a millisecond. */
  h2->tokens_milli += (now - h2->refilled) * o->h2_reset_rate;
  if (h2->tokens_milli > cap) h2->tokens_milli = cap;
  h2->refilled = now;
  if (h2->tokens_milli >= 1000) {
    h2->tokens_milli -= 1000;
    return;
  }
  if (h2->calm) return;
  h2->calm = 1;
  hr__stat_inc(&h2->c->w->st_bad);
  hr__log(h2->c->w, HR_LOG_INFO, "HTTP/2: too many stream resets; GOAWAY ENHANCE_YOUR_CALM");
  nghttp2_session_terminate_session(h2->ng, NGHTTP2_ENHANCE_YOUR_CALM);
}

/* ---- frames -------------------------------------------------------------- */

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *ud) {
  hr__h2_t *h2 = ud;
  hr__h2s_t *st;
  (void)ng;
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      st = hr__h2_stream_of(h2, frame->hd.stream_id);
      if (st == NULL || st->ex == NULL) break;
      if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) st->ex->msg_complete = 1;
      if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        hr__h2_head_done(st);
      } else if (frame->hd.type == NGHTTP2_HEADERS && st->fail_status) {
        hr__h2_fail(st->ex, st->fail_status, st->fail_status == 431
                                                 ? "trailer section longer than the limit"
                                                 : "out of memory");
      } else if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        st->ex->phase = HR__PH_DONE;
        hr__h2_ready_push(h2, st); /* the body (or its trailers) ended */
      }
      break;
    case NGHTTP2_RST_STREAM:
      spend(h2);
      /* The client cancelled a request whose body was still coming: a
       * client abort (nghttp2 closes the stream next). */
      st = hr__h2_stream_of(h2, frame->hd.stream_id);
      if (st != NULL && st->ex != NULL) hr__exchange_client_left(st->ex);
      break;
    case NGHTTP2_WINDOW_UPDATE:
      h2->last_progress = uv_now(h2->c->w->loop); /* room for our DATA */
      break;
    case NGHTTP2_GOAWAY:
      h2->peer_goaway = 1;
      break;
    default:
      break;
  }
  return 0;
}

/* Keeps `len` body bytes of a paused stream (after any kept before).
 * Returns 0 or -1 (out of memory). */
static int hold(hr__h2_t *h2, hr__h2s_t *st, const uint8_t *data, size_t len) {
  hr__h2held_t *h = st->held;
  if (h == NULL || h->cap - h->len < len) {
    size_t cap = h != NULL ? h->cap * 2 : 16384, have = h != NULL ? h->len : 0;
    while (cap < have + len) cap *= 2;
    h = hr__mem_realloc(&h2->c->w->mem, h, sizeof(*h) + cap);
    if (h == NULL) return -1;
    if (st->held == NULL) h->len = 0;
    h->cap = cap;
    st->held = h;
  }
  memcpy(h->data + h->len, data, len);
  h->len += len;
  return 0;
}

/* Body bytes of stream `id` to its exchange: into the buffer, or to the
 * streaming handler's callback.  Their stream's window opens again once
 * it returned (so a slow handler slows its client); the connection's at
 * once, so that one stream's handler never holds up the others. */
static void take_body(hr__h2_t *h2, hr__h2s_t *st, const char *data, size_t len) {
  hr__exchange_t *ex = st->ex;
  int32_t id = st->id;
  int rc;
  ex->last_activity = uv_now(h2->c->w->loop); /* the stream's body moves */
  hr__exchange_hold(ex);
  rc = hr__dispatch_body(ex, data, len);
  if (rc == 413)
    hr__h2_fail(ex, 413, "body larger than the limit");
  else if (rc == 503)
    hr__h2_fail(ex, 503, "out of memory");
  hr__exchange_unhold(ex);
  nghttp2_session_consume_stream(h2->ng, id, len);
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *ud) {
  hr__h2_t *h2 = ud;
  hr__h2s_t *st = hr__h2_stream_of(h2, id);
  (void)flags;
  nghttp2_session_consume_connection(ng, len);
  if (st == NULL || st->ex == NULL) {
    nghttp2_session_consume_stream(ng, id, len);
    return 0;
  }
  if (st->ex->req.body_paused || st->held != NULL) {
    /* Paused (or what came while it was is still to be delivered): kept,
     * its window shut, until the resume (RFC 9113 §5.2). */
    if (hold(h2, st, data, len) != 0) hr__h2_fail(st->ex, 503, "out of memory");
    return 0;
  }
  take_body(h2, st, (const char *)data, len);
  return 0;
}

/* A resumed stream: what it held back goes to its handler, in one piece. */
static void deliver_held(hr__h2_t *h2, hr__h2s_t *st) {
  hr__h2held_t *h = st->held;
  st->held = NULL;
  if (h->len > 0) take_body(h2, st, h->data, h->len);
  hr__mem_free(&h2->c->w->mem, h);
}

static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *frame, void *ud) {
  hr__h2_t *h2 = ud;
  hr__h2s_t *st;
  if (frame->hd.type == NGHTTP2_DATA) h2->last_progress = uv_now(h2->c->w->loop);
  if (frame->hd.type == NGHTTP2_RST_STREAM) {
    st = hr__h2_stream_of(h2, frame->hd.stream_id);
    /* A reset nghttp2 made for a fault of the client's (MadeYouReset)
     * counts against the budget; the server's own do not. */
    if (frame->rst_stream.error_code != NGHTTP2_NO_ERROR && (st == NULL || !st->reset))
      spend(h2);
    return 0;
  }
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
      nghttp2_session_get_stream_remote_close(ng, frame->hd.stream_id) == 0) {
    /* The response is complete before the request: the rest of it is not
     * wanted (RFC 9113 §8.1). */
    st = hr__h2_stream_of(h2, frame->hd.stream_id);
    if (st != NULL && !st->reset) {
      st->reset = 1;
      nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                NGHTTP2_NO_ERROR);
    }
  }
  return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *ud) {
  hr__h2_t *h2 = ud;
  hr__h2s_t *st = hr__h2_stream_of(h2, id);
  (void)code;
  if (st == NULL) return 0;
  nghttp2_session_set_stream_user_data(ng, id, NULL);
  stream_free(h2, st);
  return 0;
}

/* ---- the server's answers on a stream ------------------------------------ */

/* The server answers `status` on the stream in the handler's place.  The
 * exchange is done with the stream from here on (a running handler hears
 * of it through its abort callback); the answer goes out on its own. */
void hr__h2_fail(hr__exchange_t *ex, int status, const char *reason) {
  hr__h2s_t *st = ex->h2s;
  char body[HR__ERROR_BODY_MAX], field[256];
  const char *ctype;
  size_t n;
  int fl;
  if (st == NULL) return;
  if (status < 500) hr__stat_inc(&ex->w->st_bad); /* the client's fault: 4xx only */
  hr__log(ex->w, HR_LOG_INFO, "HTTP/2 stream %d: answered %d: %s", (int)st->id, status,
          reason != NULL ? reason : "");
  ex->discard_body = 1;
  if (st->submitted || ex->res.state != HR__RES_NEW) {
    hr__h2_reset(st, NGHTTP2_INTERNAL_ERROR); /* a response under way */
    stream_drop(st, HR_ECLOSED);
    return;
  }
  hr__exchange_view(ex);
  n = hr__error_body(&ex->answers, status, body, &ctype);
  fl = snprintf(field, sizeof field, "Content-Type: %s\r\n", ctype);
  ex->t_done = uv_hrtime();
  /* The head and body go through the protocol with the handler's own
   * fields set aside: the server's answer carries only its own. */
  ex->internal_answer = 1;
  ex->res.fields = field;
  ex->res.fields_len = (size_t)fl;
  if (ex->proto->head(ex, status, (int64_t)n, 0) != 0 ||
      (!ex->req.is_head && ex->proto->data(ex, body, n) != 0)) {
    hr__h2_reset(st, NGHTTP2_INTERNAL_ERROR);
  }
  ex->res.fields = NULL;
  ex->res.fields_len = 0;
  st->body_end = 1;
  ex->sent_status = status;
  ex->sent_bytes = ex->req.is_head ? 0 : n;
  hr__conn_kick(st->h2->c);
  stream_drop(st, status == 413 ? HR_ETOOLARGE : HR_ECLOSED);
}

/* ---- the session --------------------------------------------------------- */

static int make_session(hr__h2_t *h2) {
  nghttp2_session_callbacks *cbs;
  nghttp2_option *opt;
  nghttp2_mem m = {h2, ng_malloc, ng_free, ng_calloc, ng_realloc};
  int rv;
  if (nghttp2_session_callbacks_new(&cbs) != 0) return HR_ENOMEM;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cbs);
    return HR_ENOMEM;
  }
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, hr__h2_on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, hr__h2_on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  /* The windows are opened by nghttp2_session_consume, as bodies are
   * taken.  Closed streams are kept (nghttp2 bounds how many) so that a
   * frame on one is the stream error STREAM_CLOSED (§5.1), not ignored. */
  nghttp2_option_set_no_auto_window_update(opt, 1);
  h2->creating = 1;
  rv = nghttp2_session_server_new3(&h2->ng, cbs, h2, opt, &m);
  h2->creating = 0;
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  return rv == 0 ? 0 : HR_ENOMEM;
}

int hr__h2_start(hr__conn_t *c) {
  const hr_server_options_t *o = &c->w->server->opts;
  hr__h2_t *h2 = hr__mem_alloc(&c->w->mem, sizeof(*h2));
  nghttp2_settings_entry iv[4];
  if (h2 == NULL) return HR_ENOMEM;
  memset(h2, 0, sizeof(*h2));
  h2->c = c;
  hr__h2scan_init(&h2->scan);
  h2->refilled = h2->idle_since = h2->last_progress = uv_now(c->w->loop);
  h2->tokens_milli = (uint64_t)o->h2_reset_burst * 1000;
  if (make_session(h2) != 0) {
    hr__mem_free(&c->w->mem, h2);
    return HR_ENOMEM;
  }
  iv[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
  iv[0].value = o->h2_max_concurrent_streams;
  iv[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
  iv[1].value = o->h2_initial_window_bytes;
  iv[2].settings_id = NGHTTP2_SETTINGS_MAX_FRAME_SIZE;
  iv[2].value = o->h2_max_frame_bytes;
  iv[3].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
  iv[3].value = (uint32_t)o->max_header_bytes;
  if (nghttp2_submit_settings(h2->ng, NGHTTP2_FLAG_NONE, iv, 4) != 0) {
    nghttp2_session_del(h2->ng);
    hr__mem_free(&c->w->mem, h2);
    return HR_ENOMEM;
  }
  c->h2 = h2;
  return 0;
}

/* The handlers of requests that completed in the last read. */
static void run_ready(hr__h2_t *h2) {
  while (h2->ready != NULL && h2->c->state != HR__C_CLOSED) {
    hr__h2s_t *st = h2->ready;
    hr__exchange_t *ex = st->ex;
    h2->ready = st->ready_next;
    if (h2->ready == NULL) h2->ready_tail = NULL;
    st->ready = 0;
    st->ready_next = NULL;
    if (ex == NULL) continue;
    hr__exchange_hold(ex);
    if (st->held != NULL && !ex->req.body_paused) deliver_held(h2, st);
    /* A paused body's last call waits for the resume (which pushes the
     * stream here again); a resumed body's for its END_STREAM. */
    if (st->ex == ex && ex->msg_complete && st->held == NULL &&
        !(ex->req.body_paused && ex->req.body_cb != NULL && !ex->req.body_done))
      hr__dispatch_complete(ex);
    hr__exchange_unhold(ex);
  }
}

/* The exchange's protocol: the handler resumed its body. */
void hr__h2_resume_body(hr__exchange_t *ex) {
  hr__h2s_t *st = ex->h2s;
  if (st == NULL) return;
  hr__h2_ready_push(st->h2, st);
  hr__conn_kick(ex->conn);
}

/* Frames into the output queue while it is below the high-water mark.
 * Returns 0, or -1 when the session broke (the connection is closed). */
static int send_frames(hr__h2_t *h2) {
  hr__conn_t *c = h2->c;
  size_t mark = c->w->server->opts.write_high_water_bytes;
  while (hr__out_queued(c) <= mark) {
    const uint8_t *p;
    ssize_t n = nghttp2_session_mem_send(h2->ng, &p);
    if (n < 0 || (n > 0 && hr__out_append(c, p, (size_t)n) != 0)) {
      hr__conn_close(c);
      return -1;
    }
    if (n == 0) break;
    h2->fb_napping = 0; /* its pages are in use again */
  }
  return 0;
}

/* A fault nghttp2 found in what the client sent that ends the session. */
static void session_error(hr__h2_t *h2, ssize_t rv) {
  hr__conn_t *c = h2->c;
  hr__stat_inc(&c->w->st_bad);
  hr__log(c->w, HR_LOG_INFO, "HTTP/2: %s; closing the connection",
          nghttp2_strerror((int)rv));
  if (rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC) {
    hr__conn_close(c); /* no HTTP/2 peer: nothing to say to it */
    return;
  }
  nghttp2_session_terminate_session(
      h2->ng, rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
}

/* Hands n bytes to nghttp2, stopping at a HEADERS frame that opens a
 * stream below one opened before (h2_scan.c): a connection error of type
 * PROTOCOL_ERROR (RFC 9113 §5.1.1) unless nghttp2 still knows the stream
 * (trailers after a reset).  Returns nghttp2's error, or 0. */
static ssize_t feed(hr__h2_t *h2, const uint8_t *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    int32_t id;
    size_t k = hr__h2scan(&h2->scan, p + off, n - off, &id);
    /* Up to the suspect frame's header (which may have begun in an
     * earlier read: then everything before it is read already). */
    size_t upto = id != 0 && k >= 9 ? k - 9 : id != 0 ? 0 : k;
    ssize_t rv = upto ? nghttp2_session_mem_recv(h2->ng, p + off, upto) : 0;
    if (rv < 0) return rv;
    if (h2->dead) return 0;
    if (id != 0 && nghttp2_session_find_stream(h2->ng, id) == NULL) {
      hr__stat_inc(&h2->c->w->st_bad);
      hr__log(h2->c->w, HR_LOG_INFO, "HTTP/2: stream %d opened after a higher one",
              (int)id);
      nghttp2_session_terminate_session(h2->ng, NGHTTP2_PROTOCOL_ERROR);
      return 0; /* nothing after it is read */
    }
    if (id != 0 && k > upto) {
      rv = nghttp2_session_mem_recv(h2->ng, p + off + upto, k - upto);
      if (rv < 0) return rv;
      if (h2->dead) return 0;
    }
    off += k;
  }
  return 0;
}

void hr__h2_step(hr__conn_t *c) {
  hr__h2_t *h2 = c->h2;
  hr__h2s_t *st;
  if (c->rbuf != NULL && c->rlen > c->msg_start) {
    ssize_t rv;
    h2->in_recv = 1;
    rv = feed(h2, (const uint8_t *)c->rbuf + c->msg_start, c->rlen - c->msg_start);
    h2->in_recv = 0;
    c->msg_start = c->rlen;
    if (h2->dead) {
      session_free(c, h2);
      return;
    }
    if (rv < 0) session_error(h2, rv);
    if (c->state == HR__C_CLOSED) return;
  }
  run_ready(h2);
  if (c->state == HR__C_CLOSED) return;
  if (hr__worker_ending(c->w)) hr__h2_notice(c);
  if (send_frames(h2) != 0) return;
  /* Exchanges outlive the read-side section of this step. */
  for (st = h2->streams; st != NULL; st = st->next)
    if (st->ex != NULL) hr__exchange_keep(st->ex);
  /* GOAWAY sent or received and no stream left, or the session ended:
   * what is queued goes out, then FIN.  After the drain's notice alone
   * (2^31-1) the connection waits for the final GOAWAY, which names the
   * last stream processed (RFC 9113 §6.8), at the shutdown. */
  if (!nghttp2_session_want_read(h2->ng) && !nghttp2_session_want_write(h2->ng) &&
      (!h2->notice_sent || h2->goaway_sent || h2->peer_goaway || h2->calm))
    hr__conn_drain(c);
}

int hr__h2_busy(const hr__conn_t *c) {
  return c->h2->nstreams > 0 || nghttp2_session_want_write(c->h2->ng);
}

int hr__h2_wants_kick(const hr__conn_t *c) {
  const hr__h2_t *h2 = c->h2;
  size_t half = c->w->server->opts.write_high_water_bytes / 2;
  const hr__h2s_t *st;
  if (h2 == NULL) return 0;
  if (nghttp2_session_want_write(h2->ng)) return 1;
  for (st = h2->streams; st != NULL; st = st->next)
    if (st->ex != NULL && st->ex->res.want_drain && st->ex->res.drain_cb != NULL &&
        st->queued <= half)
      return 1;
  return 0;
}

/* Whether the stream has body to send that the client's flow-control
 * windows hold back (RFC 9113 §6.9). */
static int window_shut(const hr__h2_t *h2, const hr__h2s_t *st) {
  if (!st->has_data || st->reset || (st->head == NULL && st->fready == st->fpos))
    return 0;
  return nghttp2_session_get_stream_remote_window_size(h2->ng, st->id) <= 0 ||
         nghttp2_session_get_remote_window_size(h2->ng) <= 0;
}

static void earliest(hr__tlist_t *list, uint64_t *due, hr__tlist_t l, uint64_t d) {
  if (*list == HR__TL_NONE || d < *due) {
    *list = l;
    *due = d;
  }
}

/* Whether the stream waits for request body bytes the client owes. */
/* Whether a stream's body is due, and by when (hr__body_due). */
static int body_waits(const hr__h2s_t *st, uint64_t *due) {
  return st->ex != NULL && hr__body_due(st->ex, due);
}

void hr__h2_deadline(const hr__conn_t *c, hr__tlist_t *list, uint64_t *due) {
  const hr__h2_t *h2 = c->h2;
  const hr_server_options_t *o = &c->w->server->opts;
  const hr__h2s_t *st;
  *list = HR__TL_NONE;
  if (h2->nstreams == 0) {
    *list = HR__TL_IDLE;
    *due = h2->idle_since + o->keepalive_timeout_ms;
    if (h2->fb != NULL && !h2->fb_napping && HR__H2_NAP_MS < o->keepalive_timeout_ms) {
      *list = HR__TL_NAP;
      *due = h2->idle_since + HR__H2_NAP_MS;
    }
    return;
  }
  for (st = h2->streams; st != NULL; st = st->next) {
    /* A request whose body is still to come, and no 100 Continue owed:
     * from that stream's last body bytes (or its head), not the
     * connection's, so that PINGs or another stream's bytes keep no
     * stalled body (and its buffer) alive. */
    uint64_t body_due;
    if (body_waits(st, &body_due)) earliest(list, due, HR__TL_BODY, body_due);
    /* A response the client's windows hold back: as output that makes no
     * progress (a zero window, a client that stopped opening it). */
    if (window_shut(h2, st))
      earliest(list, due, HR__TL_WRITE, h2->last_progress + o->write_timeout_ms);
  }
}

void hr__h2_timeout(hr__conn_t *c, hr__tlist_t list) {
  hr__h2_t *h2 = c->h2;
  hr__h2s_t *st, *next;
  uint64_t now;
  if (list == HR__TL_NAP) {
    h2_nap(h2);
    return;
  }
  if (list == HR__TL_IDLE) {
    hr__h2_shutdown(c);
    return;
  }
  if (list != HR__TL_BODY) {
    hr__conn_close(c);
    return;
  }
  now = uv_now(c->w->loop);
  for (st = h2->streams; st != NULL; st = next) {
    next = st->next;
    if (st->ex != NULL && hr__body_expired(st->ex, now))
      hr__h2_fail(st->ex, 408, "body not received in time");
  }
  hr__conn_kick(c);
}

void hr__h2_notice(hr__conn_t *c) {
  hr__h2_t *h2 = c->h2;
  if (h2->notice_sent || h2->goaway_sent) return;
  h2->notice_sent = 1;
  nghttp2_submit_shutdown_notice(h2->ng);
  hr__conn_kick(c);
}

void hr__h2_shutdown(hr__conn_t *c) {
  hr__h2_t *h2 = c->h2;
  if (h2->goaway_sent) return;
  h2->goaway_sent = 1;
  nghttp2_submit_goaway(h2->ng, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(h2->ng), NGHTTP2_NO_ERROR,
                        NULL, 0);
  hr__conn_kick(c);
}

int hr__h2_drains(hr__conn_t *c) {
  hr__h2_t *h2 = c->h2;
  size_t half = c->w->server->opts.write_high_water_bytes / 2;
  hr__h2s_t *st, *next;
  for (st = h2->streams; st != NULL; st = next) {
    hr__exchange_t *ex = st->ex;
    next = st->next;
    if (ex == NULL || !ex->res.want_drain || ex->res.drain_cb == NULL || st->queued > half)
      continue;
    ex->res.want_drain = 0;
    hr__exchange_hold(ex);
    ex->res.drain_cb(&ex->res, 0, ex->res.drain_udata);
    hr__exchange_unhold(ex);
    if (c->state == HR__C_CLOSED) return 1;
  }
  return 0;
}

static void session_free(hr__conn_t *c, hr__h2_t *h2) {
  c->h2 = NULL;
  nghttp2_session_del(h2->ng);
  hr__mem_free(&c->w->mem, h2);
}

void hr__h2_close(hr__conn_t *c) {
  hr__h2_t *h2 = c->h2;
  if (h2 == NULL) return;
  while (h2->streams != NULL) {
    /* nghttp2 forgets the stream: no callback of its finds it again. */
    nghttp2_session_set_stream_user_data(h2->ng, h2->streams->id, NULL);
    if (c->peer_left && h2->streams->ex != NULL) hr__exchange_client_left(h2->streams->ex);
    stream_free(h2, h2->streams);
  }
  h2->ready = h2->ready_tail = NULL;
  /* Not inside nghttp2's own call: hr__h2_step frees it after. */
  if (h2->in_recv)
    h2->dead = 1;
  else
    session_free(c, h2);
}

/* ---- the wire (conn/wire.h) ----------------------------------------------- */

static int h2_step(hr__conn_t *c) {
  hr__h2_step(c);
  return 0; /* every frame read was handed to the session */
}

static int h2_wants_kick(const hr__conn_t *c) {
  return c->state == HR__C_OPEN && hr__h2_wants_kick(c);
}

const hr__wire_t hr__h2_wire = {
    .name = "h2",
    .recognise = hr__h2_preface,
    .start = hr__h2_start,
    .step = h2_step,
    .peer_eof = NULL, /* on_read ends the connection (conn.c) */
    .deadline = hr__h2_deadline,
    .timeout = hr__h2_timeout,
    .shutdown = hr__h2_shutdown,
    .close = hr__h2_close,
    .drains = hr__h2_drains,
    .wants_kick = h2_wants_kick,
};
