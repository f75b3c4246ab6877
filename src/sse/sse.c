/* SPDX-License-Identifier: MIT */
/*
 * Server-sent events (include/hroute/sse.h) on the public streaming
 * response.  Each event is framed into one buffer and queued with one
 * hr_response_write, so that it goes out whole or, over the high-water
 * mark, not at all.  The heartbeat is a timer on the request's loop,
 * restarted by every send; it is closed as soon as the response is cut
 * or ended, so that it never keeps a stopping loop alive, and the stream
 * is freed once it is closed and hr_sse_end() was called.
 */
#include <stdio.h>
#include <string.h>

#include "hroute/sse.h"
#include "hroute/upgrade.h" /* hr_response_allocator */

struct hr_sse_s {
  hr_response_t *res;
  const hr_allocator_t *a;
  uv_timer_t timer;
  uint32_t heartbeat_ms;
  hr_sse_close_cb on_close;
  hr_sse_drain_cb on_drain;
  void *udata;
  unsigned timer_open : 1;   /* the timer handle is not closed yet */
  unsigned timer_closing : 1;
  unsigned ended : 1;        /* hr_sse_end was called */
};

void hr_sse_options_init(hr_sse_options_t *o) {
  if (o == NULL) return;
  memset(o, 0, sizeof(*o));
  o->heartbeat_ms = 15000;
}

int hr_sse_last_event_id(const hr_request_t *req, hr_span_t *out) {
  if (req == NULL || out == NULL) return HR_EINVAL;
  return hr_request_field(req, HR_SPAN_LIT("Last-Event-ID"), NULL, out);
}

hr_response_t *hr_sse_response(const hr_sse_t *sse) { return sse != NULL ? sse->res : NULL; }

/* ---- lifetime --------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *h) {
  hr_sse_t *s = h->data;
  s->timer_open = 0;
  if (s->ended) s->a->free(s->a->ctx, s);
}

static void close_timer(hr_sse_t *s) {
  if (!s->timer_open || s->timer_closing) return;
  s->timer_closing = 1;
  uv_close((uv_handle_t *)&s->timer, on_timer_closed);
}

static void on_abort(hr_response_t *res, void *udata) {
  hr_sse_t *s = udata;
  (void)res;
  close_timer(s);
  if (s->on_close != NULL) s->on_close(s, s->udata);
}

static void on_response_drain(hr_response_t *res, int status, void *udata) {
  hr_sse_t *s = udata;
  (void)res;
  if (s->on_drain != NULL) s->on_drain(s, status, s->udata);
}

int hr_sse_end(hr_sse_t *s) {
  int rc;
  if (s == NULL) return HR_EINVAL;
  rc = hr_response_end(s->res);
  if (rc == HR_ETHREAD) return rc;
  s->ended = 1;
  if (s->timer_open) close_timer(s); /* frees it once closed */
  else s->a->free(s->a->ctx, s);
  return rc;
}

int hr_sse_on_drain(hr_sse_t *s, hr_sse_drain_cb cb) {
  int rc;
  if (s == NULL) return HR_EINVAL;
  if ((rc = hr_response_on_drain(s->res, cb != NULL ? on_response_drain : NULL, s)) == 0)
    s->on_drain = cb;
  return rc;
}

/* ---- writing ----------------------------------------------------------------- */

/* Queues `len` bytes as one write; after a write on the loop thread the
 * heartbeat starts over. */
static int put(hr_sse_t *s, const char *p, size_t len) {
  /* After a cut it answers HR_ECLOSED; on another thread HR_ETHREAD,
   * before anything of the stream is touched. */
  int rc = hr_response_write(s->res, p, len);
  if (rc == 0 && s->timer_open && !s->timer_closing && s->heartbeat_ms) uv_timer_again(&s->timer);
  return rc;
}

static void on_heartbeat(uv_timer_t *t) {
  hr_sse_t *s = t->data;
  /* Behind or gone: the heartbeat is not needed, the next one will do. */
  (void)hr_response_write(s->res, ":\n\n", 3);
}

static int line_ok(const char *s) { return strpbrk(s, "\r\n") == NULL; }

/* Bytes of the framed event: each line break of the data (LF, CR LF or a
 * lone CR, consumed) becomes LF "data: " (7 bytes). */
static size_t event_size(const char *event, const char *id, const char *data, size_t len) {
  size_t n = 6 + 2, i; /* "data: " and the two LFs that end the event */
  if (event) n += 7 + strlen(event) + 1;
  if (id) n += 4 + strlen(id) + 1;
  for (i = 0; i < len; i++) {
    if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') i++;
    else if (data[i] != '\r' && data[i] != '\n') {
      n++;
      continue;
    }
    n += 7;
  }
  return n;
}

static char *put_str(char *w, const char *a, const char *b) {
  size_t n = strlen(a);
  memcpy(w, a, n);
  w += n;
  n = strlen(b);
  memcpy(w, b, n);
  w += n;
  *w++ = '\n';
  return w;
}

static void frame(char *w, const char *event, const char *id, const char *data, size_t len) {
  size_t i = 0;
  if (event) w = put_str(w, "event: ", event);
  if (id) w = put_str(w, "id: ", id);
  memcpy(w, "data: ", 6);
  w += 6;
  while (i < len) {
    if (data[i] == '\r' || data[i] == '\n') {
      if (data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') i++;
      memcpy(w, "\ndata: ", 7);
      w += 7;
    } else {
      *w++ = data[i];
    }
    i++;
  }
  *w++ = '\n';
  *w = '\n';
}

int hr_sse_send(hr_sse_t *s, const char *event, const char *id, const void *data, size_t len) {
  char small[512], *buf = small;
  size_t n;
  int rc;
  if (s == NULL || (data == NULL && len > 0) || (event != NULL && !line_ok(event)) ||
      (id != NULL && !line_ok(id)))
    return HR_EINVAL;
  n = event_size(event, id, data, len);
  if (n > sizeof small && (buf = s->a->malloc(s->a->ctx, n)) == NULL) return HR_ENOMEM;
  frame(buf, event, id, data, len);
  rc = put(s, buf, n);
  if (buf != small) s->a->free(s->a->ctx, buf);
  return rc;
}

int hr_sse_comment(hr_sse_t *s, const char *text) {
  char small[256], *buf = small;
  size_t n, tl;
  int rc;
  if (s == NULL || (text != NULL && !line_ok(text))) return HR_EINVAL;
  if (text == NULL) return put(s, ":\n\n", 3);
  tl = strlen(text);
  n = 2 + tl + 2; /* ": " text LF LF */
  if (n > sizeof small && (buf = s->a->malloc(s->a->ctx, n)) == NULL) return HR_ENOMEM;
  memcpy(buf, ": ", 2);
  memcpy(buf + 2, text, tl);
  memcpy(buf + 2 + tl, "\n\n", 2);
  rc = put(s, buf, n);
  if (buf != small) s->a->free(s->a->ctx, buf);
  return rc;
}

int hr_sse_retry(hr_sse_t *s, uint32_t ms) {
  char line[32];
  int n;
  if (s == NULL) return HR_EINVAL;
  n = snprintf(line, sizeof line, "retry: %u\n\n", (unsigned)ms);
  return put(s, line, (size_t)n);
}

/* ---- starting -------------------------------------------------------------------- */

int hr_sse_start(hr_request_t *req, hr_response_t *res, const hr_sse_options_t *o,
                 hr_sse_t **out) {
  static const struct {
    hr_span_t name, value;
  } head[] = {
      {HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/event-stream")},
      {HR_SPAN_LIT("Cache-Control"), HR_SPAN_LIT("no-cache")},
      {HR_SPAN_LIT("X-Accel-Buffering"), HR_SPAN_LIT("no")},
  };
  hr_sse_options_t defaults;
  const hr_allocator_t *a;
  hr_sse_t *s;
  size_t i;
  int rc;
  if (req == NULL || res == NULL || out == NULL) return HR_EINVAL;
  *out = NULL;
  if (o == NULL) {
    hr_sse_options_init(&defaults);
    o = &defaults;
  }
  a = hr_response_allocator(res); /* never NULL */
  if ((s = a->malloc(a->ctx, sizeof(*s))) == NULL) return HR_ENOMEM;
  memset(s, 0, sizeof(*s));
  s->res = res;
  s->a = a;
  s->heartbeat_ms = o->heartbeat_ms;
  s->on_close = o->on_close;
  s->udata = o->udata;
  for (i = 0; i < sizeof head / sizeof head[0]; i++)
    if ((rc = hr_response_add_field(res, head[i].name, head[i].value)) != 0) goto fail;
  if ((rc = hr_response_start(res, 200, HR_LENGTH_UNKNOWN)) != 0) goto fail;
  /* Started: from here the response is the stream's to end. */
  (void)hr_response_on_abort(res, on_abort, s);
  if (uv_timer_init(hr_request_loop(req), &s->timer) == 0) {
    s->timer.data = s;
    s->timer_open = 1;
    /* The heartbeat never keeps a loop running by itself. */
    uv_unref((uv_handle_t *)&s->timer);
    if (s->heartbeat_ms) uv_timer_start(&s->timer, on_heartbeat, s->heartbeat_ms, s->heartbeat_ms);
  }
  /* Something to send, so that the head goes out now.  Whatever this
   * returns, the stream is the caller's: a lost connection comes as the
   * close callback. */
  (void)(o->retry_ms ? hr_sse_retry(s, o->retry_ms) : put(s, ":\n\n", 3));
  *out = s;
  return 0;
fail:
  a->free(a->ctx, s);
  return rc;
}
