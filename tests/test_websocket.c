/* SPDX-License-Identifier: MIT */
/*
 * WebSocket (hr_websocket_*) through the server, with frames built and
 * read byte by byte here: the handshake (RFC 6455's sample key and its
 * accept value, subprotocol choice, origin checks, 400/403/405/426
 * refusals, in the router's error_body format when it has one), echo of
 * text,
 * binary and fragmented messages with a ping between the fragments, the
 * close handshake both ways, the connection failed with 1002 (unmasked),
 * 1007 (bad UTF-8) and 1009 (over the route's limit, at the frame's
 * header when it declares more), ping and idle
 * timeouts, pause with messages held across it, a send posted from
 * another thread, backpressure through the drain callback, the owner's
 * argument errors, and the close 1001 of a graceful shutdown.
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "countalloc.h"
#include "fixture.h"
#include "hroute/websocket.h"
#include "wsframe.h"

static struct {
  pthread_mutex_t mu;
  int closed_calls;
  hr_websocket_close_t how;
  char reason[128];
  size_t flood_left;
  int after_close;
  int after_close_rc, after_close_runs;
} st = {PTHREAD_MUTEX_INITIALIZER, 0, {0, 0, NULL, 0}, {0}, 0, 0, 0, 0};
static ev_t closed_ev;

/* ---- the server's side ------------------------------------------------------- */

static char flood_chunk[65536];

/* 32 chunks of 64 KiB, then "done"; each waits for the drain when the
 * queue is full. */
static void flood(hr_websocket_t *ws) {
  while (st.flood_left > 0) {
    int rc = st.flood_left == 1 ? hr_websocket_send(ws, HR_WS_TEXT, "done", 4)
                                : hr_websocket_send(ws, HR_WS_BINARY, flood_chunk, sizeof flood_chunk);
    if (rc == HR_EAGAIN) return; /* the drain callback goes on */
    assert_int_equal(rc, 0);
    st.flood_left--;
  }
}

static void on_drain(hr_websocket_t *ws, void *udata) {
  (void)udata;
  flood(ws);
}

static void resume(hr_websocket_t *ws, void *udata) {
  assert_ptr_equal(udata, &st);
  assert_int_equal(hr_websocket_pause(ws, 0), 0);
}

static void from_thread(hr_websocket_t *ws, void *udata) {
  assert_ptr_equal(udata, &st);
  assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "posted", 6), 0);
}

static void *post_thread(void *arg) {
  assert_int_equal(hr_websocket_post(arg, from_thread, &st), 0);
  return NULL;
}

#define IS(lit) (len == sizeof(lit) - 1 && memcmp(data, lit, len) == 0)

/* Echoes, except for commands. */
static void on_message(hr_websocket_t *ws, int type, const void *data, size_t len,
                       void *udata) {
  int rc;
  (void)udata;
  if (type == HR_WS_TEXT && IS("close")) {
    assert_int_equal(hr_websocket_close(ws, 4001, "bye", 3), 0);
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "late", 4), HR_ESTATE);
    assert_int_equal(hr_websocket_close(ws, 1000, NULL, 0), HR_ESTATE);
    return;
  }
  if (type == HR_WS_TEXT && IS("pauseclose")) {
    /* Paused for good, then closing: the peer's close is still read. */
    assert_int_equal(hr_websocket_pause(ws, 1), 0);
    assert_int_equal(hr_websocket_close(ws, 4002, NULL, 0), 0);
    return;
  }
  if (type == HR_WS_TEXT && IS("errors")) {
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "\xc3\x28", 2), HR_EINVAL);
    assert_int_equal(hr_websocket_send(ws, 9, "x", 1), HR_EINVAL);
    assert_int_equal(hr_websocket_close(ws, 1005, NULL, 0), HR_EINVAL);
    assert_int_equal(hr_websocket_close(ws, 999, NULL, 0), HR_EINVAL);
    assert_int_equal(hr_websocket_close(ws, 0, "why", 3), HR_EINVAL);
    assert_int_equal(hr_websocket_close(ws, 1000, "\xff", 1), HR_EINVAL);
    assert_int_equal(hr_websocket_pause(NULL, 1), HR_EINVAL);
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "checked", 7), 0);
    return;
  }
  if (type == HR_WS_TEXT && IS("pause")) {
    /* The messages behind this one in the same read are held, and come
     * after "paused", once the posted resume ran. */
    assert_int_equal(hr_websocket_pause(ws, 1), 0);
    assert_int_equal(hr_websocket_post(ws, resume, &st), 0);
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "paused", 6), 0);
    return;
  }
  if (type == HR_WS_TEXT && IS("post")) {
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, post_thread, ws), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return;
  }
  if (type == HR_WS_TEXT && IS("flood")) {
    memset(flood_chunk, 'f', sizeof flood_chunk);
    st.flood_left = 33; /* 2 MiB, far above the 64 KiB high-water mark */
    flood(ws);
    return;
  }
  if (type == HR_WS_TEXT && IS("bigflood")) {
    /* 16 MiB: more than the kernel's socket buffers take (tcp_wmem's
     * default maximum is 4 MiB), so some stays in the server's queue. */
    memset(flood_chunk, 'f', sizeof flood_chunk);
    st.flood_left = 257;
    flood(ws);
    return;
  }
  if (type == HR_WS_TEXT && IS("proto")) {
    char sub[32];
    const char *p = hr_websocket_subprotocol(ws);
    snprintf(sub, sizeof sub, "sub=%s", p != NULL ? p : "(none)");
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, sub, strlen(sub)), 0);
    return;
  }
  rc = hr_websocket_send(ws, type, data, len);
  if (rc == HR_ESTATE) { /* after the server's close: delivered, not echoed */
    pthread_mutex_lock(&st.mu);
    st.after_close++;
    pthread_mutex_unlock(&st.mu);
    return;
  }
  assert_int_equal(rc, 0);
}

/* Posted by the closed callback: runs after it, on the loop or, when the
 * loop ended first, at the worker's cleanup; either way the connection
 * is over. */
static void after_close(hr_websocket_t *ws, void *udata) {
  int rc = hr_websocket_send(ws, HR_WS_TEXT, "x", 1);
  (void)udata;
  pthread_mutex_lock(&st.mu);
  st.after_close_rc = rc;
  st.after_close_runs++;
  pthread_mutex_unlock(&st.mu);
}

static void on_closed(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata) {
  (void)udata;
  assert_int_equal(hr_websocket_post(ws, after_close, NULL), 0);
  /* No call works after the end. */
  assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "x", 1), HR_ECLOSED);
  pthread_mutex_lock(&st.mu);
  st.closed_calls++;
  st.how = *how;
  if (how->reason_len > 0) memcpy(st.reason, how->reason, how->reason_len);
  st.how.reason = st.reason;
  pthread_mutex_unlock(&st.mu);
  ev_signal(&closed_ev);
}

/* /wsp: an echo that never loses a message: on HR_EAGAIN it keeps the
 * message, pauses, and sends it from the drain callback (as chat.c's). */
static struct {
  char data[2048];
  size_t len;
  int type, pending;
} pe;

static void on_pmsg(hr_websocket_t *ws, int type, const void *data, size_t len, void *udata) {
  int rc = hr_websocket_send(ws, type, data, len);
  (void)udata;
  if (rc == HR_EAGAIN) {
    assert_true(len <= sizeof pe.data);
    memcpy(pe.data, data, len);
    pe.len = len;
    pe.type = type;
    pe.pending = 1;
    assert_int_equal(hr_websocket_pause(ws, 1), 0);
    return;
  }
  if (rc != HR_ESTATE) assert_int_equal(rc, 0);
}

static void on_pdrain(hr_websocket_t *ws, void *udata) {
  (void)udata;
  if (!pe.pending) return;
  if (hr_websocket_send(ws, pe.type, pe.data, pe.len) == HR_EAGAIN) return;
  pe.pending = 0;
  assert_int_equal(hr_websocket_pause(ws, 0), 0);
}

static void on_closed(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata);

static const hr_websocket_callbacks_t pcbs = {
    .message = on_pmsg, .closed = on_closed, .drain = on_pdrain};

static void h_wsp(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  memset(&pe, 0, sizeof pe);
  hr_websocket_accept(req, res, NULL, &pcbs, NULL, NULL);
}

static const hr_websocket_callbacks_t cbs = {
    .message = on_message, .closed = on_closed, .drain = on_drain};

static const char *const protocols[] = {"chat.v2", "chat.v1", NULL};

static hr_websocket_options_t wsopts;

static void h_ws(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_websocket_t *ws;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("X-Handler"), HR_SPAN_LIT("ws"));
  if (hr_websocket_accept(req, res, &wsopts, &cbs, NULL, &ws) != 0) return;
  assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, "welcome", 7), 0);
}

static void start_with(fx_t *fx, void (*tune)(hr_websocket_options_t *)) {
  pthread_mutex_lock(&st.mu);
  st.closed_calls = 0;
  st.after_close = 0;
  st.after_close_runs = 0;
  st.after_close_rc = 0;
  memset(&st.how, 0, sizeof st.how);
  pthread_mutex_unlock(&st.mu);
  ev_init(&closed_ev);
  hr_websocket_options_init(&wsopts);
  wsopts.max_message_bytes = 70000;
  wsopts.subprotocols = protocols;
  if (tune != NULL) tune(&wsopts);
  fx_route(fx, "GET,POST", "/ws", h_ws, NULL);
  fx_route(fx, "GET", "/wsp", h_wsp, NULL);
  fx_start(fx, 1);
}

static void start(fx_t *fx) { start_with(fx, NULL); }

/* ---- the client's side --------------------------------------------------------- */

static const char *const HANDSHAKE =
    "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";

/* A client frame without reserved bits (ws_frame). */
static size_t frame(unsigned char *out, int fin, int opcode, const void *data, size_t len,
                    int unmasked) {
  return ws_frame(out, fin, 0, opcode, data, len, unmasked);
}

/* A server frame: no extension here, so no reserved bit either. */
static void read_frame(rc_t *c, ws_sframe_t *f) {
  ws_read_frame(c, f);
  assert_int_equal(f->rsv, 0);
}

static void send_frame(rc_t *c, int fin, int opcode, const void *data, size_t len) {
  static unsigned char buf[80000];
  assert_int_equal(rc_send(c, buf, frame(buf, fin, opcode, data, len, 0)), 0);
}

static void send_text(rc_t *c, const char *s) { send_frame(c, 1, 1, s, strlen(s)); }

static ws_sframe_t fr;

static void expect_frame(rc_t *c, int opcode, const char *data) {
  read_frame(c, &fr);
  assert_int_equal(fr.fin, 1);
  assert_int_equal(fr.opcode, opcode);
  assert_int_equal(fr.len, strlen(data));
  assert_memory_equal(fr.data, data, fr.len);
}

/* A close frame with `code` and `reason`. */
static void expect_close(rc_t *c, unsigned code, const char *reason) {
  read_frame(c, &fr);
  assert_int_equal(fr.opcode, 8);
  assert_int_equal(fr.len, 2 + strlen(reason));
  assert_int_equal((unsigned)fr.data[0] << 8 | fr.data[1], code);
  assert_memory_equal(fr.data + 2, reason, strlen(reason));
}

static void expect_end(rc_t *c) {
  char b;
  assert_int_equal(c->off, c->len);
  assert_int_equal(recv(c->fd, &b, 1, 0), 0);
}

/* Connects and does the handshake (with `extra` fields); the 101 and the
 * welcome message are checked. */
static rc_t *open_ws(fx_t *fx, const char *extra) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  char req[1024];
  snprintf(req, sizeof req, "%s%s\r\n", HANDSHAKE, extra);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  expect_field(&r, "Upgrade", "websocket", 0);
  expect_field(&r, "Connection", "Upgrade", 0);
  /* RFC 6455 §1.3's example. */
  expect_field(&r, "Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", 0);
  expect_field(&r, "X-Handler", "ws", 0);
  rc_response_free(&r);
  expect_frame(c, 1, "welcome");
  return c;
}

static void expect_closed_with(uint16_t code, uint16_t sent, const char *reason) {
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.closed_calls, 1);
  assert_int_equal(st.how.code, code);
  assert_int_equal(st.how.sent_code, sent);
  assert_int_equal(st.how.reason_len, strlen(reason));
  assert_memory_equal(st.how.reason, reason, st.how.reason_len);
  pthread_mutex_unlock(&st.mu);
}

/* ---- tests ------------------------------------------------------------------- */

static void test_handshake(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  start(fx);
  /* The endpoint's first choice among what the client offers. */
  c = open_ws(fx, "Sec-WebSocket-Protocol: chat.v1\r\nSec-WebSocket-Protocol: x, chat.v2\r\n");
  send_text(c, "proto");
  expect_frame(c, 1, "sub=chat.v2");
  fx_drop(fx, c);
  c = open_ws(fx, "Sec-WebSocket-Protocol: other\r\n");
  send_text(c, "proto");
  expect_frame(c, 1, "sub=(none)");
  fx_drop(fx, c);

  /* A browser on the page's own host; one on another site: 403. */
  c = open_ws(fx, "Origin: http://A\r\n");
  fx_drop(fx, c);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Origin: https://evil.example\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 403 Forbidden", "WebSocket handshake: origin not allowed\n", &r);
  rc_response_free(&r);
  /* Not http or https; two origins. */
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Origin: evil://a\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 403 Forbidden", "WebSocket handshake: origin not allowed\n", &r);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Origin: http://a\r\nOrigin: http://evil.example\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 403 Forbidden", "WebSocket handshake: origin not allowed\n", &r);
  rc_response_free(&r);
  fx_drop(fx, c);

  /* Refusals, each with its status. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "WebSocket handshake: bad Sec-WebSocket-Key\n", &r);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 8\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 426 Upgrade Required", "WebSocket handshake: version 13 only\n", &r);
  expect_field(&r, "Sec-WebSocket-Version", "13", 0);
  expect_field(&r, "Upgrade", "websocket", 0);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request",
                  "WebSocket handshake: Upgrade: websocket and Connection: Upgrade needed\n", &r);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "POST /ws HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 405 Method Not Allowed", "WebSocket handshake: GET only\n", &r);
  expect_field(&r, "Allow", "GET", 0);
  rc_response_free(&r);
  /* A key that is not 16 bytes of base64; two keys. */
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "WebSocket handshake: bad Sec-WebSocket-Key\n", &r);
  rc_response_free(&r);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "WebSocket handshake: bad Sec-WebSocket-Key\n", &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  /* Only the accepted connections ended through closed. */
  assert_true(ev_wait(&closed_ev, 3, RC_TIMEOUT_MS));
  ev_destroy(&closed_ev);
}

/* The host's error_body hook: {"status":N} as JSON. */
static size_t json_error(void *udata, int status, char *buf, size_t cap, const char **ctype) {
  (void)udata;
  *ctype = "application/json";
  return (size_t)snprintf(buf, cap, "{\"status\":%d}", status);
}

/* Each handshake refusal (400, 403, 405, 426): with the router's
 * error_body hook set, its body and Content-Type, the refusal's own fields
 * kept; without one, the refusal's text as text/plain. */
static void test_refusals_error_body(void **state) {
  static const struct {
    const char *req, *status, *text;
  } cases[] = {
      {"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
       "Sec-WebSocket-Version: 13\r\n\r\n",
       "HTTP/1.1 400 Bad Request", "WebSocket handshake: bad Sec-WebSocket-Key\n"},
      {"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
       "Origin: https://evil.example\r\n\r\n",
       "HTTP/1.1 403 Forbidden", "WebSocket handshake: origin not allowed\n"},
      {"POST /ws HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
       "HTTP/1.1 405 Method Not Allowed", "WebSocket handshake: GET only\n"},
      {"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
       "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
       "HTTP/1.1 426 Upgrade Required", "WebSocket handshake: version 13 only\n"},
  };
  fx_t *fx = *state;
  hr_answers_t a;
  rc_t *c;
  rc_response_t r;
  char want[32];
  size_t i;
  int hook;
  start(fx);
  for (hook = 0; hook < 2; hook++) {
    hr_answers_init(&a);
    a.error_body = json_error;
    assert_int_equal(hr_router_set_answers(fx->router, NULL, hook ? &a : NULL), 0);
    c = fx_connect(fx);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      assert_int_equal(rc_send_str(c, cases[i].req), 0);
      snprintf(want, sizeof want, "{\"status\":%.3s}", cases[i].status + 9);
      expect_response(c, cases[i].status, hook ? want : cases[i].text, &r);
      expect_field(&r, "Content-Type", hook ? "application/json" : "text/plain; charset=utf-8", 0);
      if (i == 2) expect_field(&r, "Allow", "GET", 0);
      if (i == 3) expect_field(&r, "Sec-WebSocket-Version", "13", 0);
      rc_response_free(&r);
    }
    fx_drop(fx, c);
  }
  ev_destroy(&closed_ev);
}

static const char *const allowed_origins[] = {"https://app.example", NULL};
static void listed_origins(hr_websocket_options_t *o) { o->origins = allowed_origins; }

/* An origin list: exactly those (case aside); no Origin at all passes. */
static void test_origin_list(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  start_with(fx, listed_origins);
  c = open_ws(fx, "Origin: https://APP.example\r\n");
  fx_drop(fx, c);
  c = open_ws(fx, "");
  fx_drop(fx, c);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /ws HTTP/1.1\r\nHost: app.example\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                  "Origin: http://app.example\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 403 Forbidden", "WebSocket handshake: origin not allowed\n", &r);
  rc_response_free(&r);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 2, RC_TIMEOUT_MS));
  ev_destroy(&closed_ev);
}

static void test_echo_fragments_and_close(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  static unsigned char big[65600];
  start(fx);
  c = open_ws(fx, "");
  send_text(c, "h\xc3\xa9llo");
  expect_frame(c, 1, "h\xc3\xa9llo");
  send_frame(c, 1, 2, "\x00\x01\x02", 3);
  read_frame(c, &fr);
  assert_int_equal(fr.opcode, 2);
  assert_int_equal(fr.len, 3);
  assert_memory_equal(fr.data, "\x00\x01\x02", 3);
  /* 64 KiB + a bit: the 8-byte length form. */
  memset(big, 'z', sizeof big);
  send_frame(c, 1, 2, big, sizeof big);
  read_frame(c, &fr);
  assert_int_equal(fr.len, sizeof big);
  assert_memory_equal(fr.data, big, sizeof big);
  /* Fragments, a ping between them (answered first), an empty message. */
  send_frame(c, 0, 1, "frag", 4);
  send_frame(c, 1, 9, "p!", 2);
  send_frame(c, 0, 0, "men", 3);
  send_frame(c, 1, 0, "ted", 3);
  expect_frame(c, 10, "p!");
  expect_frame(c, 1, "fragmented");
  send_text(c, "");
  expect_frame(c, 1, "");
  send_text(c, "errors");
  expect_frame(c, 1, "checked");
  /* The peer closes: the same code comes back, then the server's FIN. */
  send_frame(c, 1, 8, "\x03\xe8" "done", 6);
  expect_close(c, 1000, "done");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1000, 1000, "done");
  ev_destroy(&closed_ev);
}

/* 1012-1014 are registered codes: a peer may close with them. */
static void test_registered_close_code(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start(fx);
  c = open_ws(fx, "");
  send_frame(c, 1, 8, "\x03\xf4restart", 9); /* 1012 */
  expect_close(c, 1012, "restart");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1012, 1012, "restart");
  ev_destroy(&closed_ev);
}

/* Messages and a close in one read: every echo goes out before the
 * answer to the close (frames leave in the order they were made). */
static void test_echoes_before_close(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  static unsigned char buf[4096];
  size_t n = 0;
  int i;
  char m[8];
  start(fx);
  c = open_ws(fx, "");
  for (i = 0; i < 50; i++) {
    snprintf(m, sizeof m, "m%d", i);
    n += frame(buf + n, 1, 1, m, strlen(m), 0);
  }
  n += frame(buf + n, 1, 8, "\x03\xe8", 2, 0);
  assert_int_equal(rc_send(c, buf, n), 0);
  for (i = 0; i < 50; i++) {
    snprintf(m, sizeof m, "m%d", i);
    expect_frame(c, 1, m);
  }
  expect_close(c, 1000, "");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1000, 1000, "");
  ev_destroy(&closed_ev);
}

/* 20,000 fragments of one byte: one message of 20,000 bytes, and the
 * server's memory follows the payload, not the number of fragments. */
static void test_many_fragments(void **state) {
  fx_t *fx = *state;
  ca_t ca;
  rc_t *c;
  static unsigned char buf[20000 * 7 + 16];
  static char want[20001];
  size_t n = 0, peak;
  int i;
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  start(fx);
  c = open_ws(fx, "");
  ca_reset_peak(&ca);
  for (i = 0; i < 20000; i++) n += frame(buf + n, i == 19999, i == 0 ? 2 : 0, "q", 1, 0);
  assert_int_equal(rc_send(c, buf, n), 0);
  read_frame(c, &fr);
  assert_int_equal(fr.opcode, 2);
  assert_int_equal(fr.len, 20000);
  memset(want, 'q', 20000);
  assert_memory_equal(fr.data, want, 20000);
  peak = ca_peak(&ca);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  fx_stop(fx, 1000);
  hr_server_free(fx->server);
  fx->server = NULL;
  /* The message's buffer (32 KiB at most) and what the server keeps. */
  if (peak > (256u << 10)) fail_msg("the server held %zu bytes for a 20,000-byte message", peak);
  ca_destroy(&ca);
  ev_destroy(&closed_ev);
}

/* A paused owner that closes: what the peer sends before its close is
 * dropped, its close is read, and the connection ends at once. */
static void test_close_while_paused(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start(fx);
  c = open_ws(fx, "");
  send_text(c, "pauseclose");
  expect_close(c, 4002, "");
  send_text(c, "dropped");
  send_frame(c, 1, 8, "\x0f\xa2", 2);
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(4002, 4002, "");
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.after_close, 0); /* "dropped" never reached the handler */
  pthread_mutex_unlock(&st.mu);
  ev_destroy(&closed_ev);
}

static void short_close_long_write(hr_websocket_options_t *o) { o->close_timeout_ms = 20; }

/* A 20 ms close timeout, a 60 s write timeout, and a connection whose
 * receive window is 4 KiB (its reader reads nothing for now). */
static rc_t *open_slow_reader(fx_t *fx) {
  rc_t *c;
  rc_response_t r;
  char req[1024];
  fx->opts.write_timeout_ms = 60000;
  start_with(fx, short_close_long_write);
  c = rc_connect_ex("127.0.0.1", fx->port, 4096);
  assert_non_null(c);
  snprintf(req, sizeof req, "%s\r\n", HANDSHAKE);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  rc_response_free(&r);
  return c;
}

/* The server closes while a peer that reads nothing has 16 MiB coming: at
 * close_timeout_ms the connection is dropped, long before the write
 * timeout (60 s here) would have ended it. */
static void test_close_timeout_drops_nonreader(void **state) {
  fx_t *fx = *state;
  rc_t *c = open_slow_reader(fx);
  send_text(c, "bigflood");
  send_text(c, "close");
  /* Nothing is read until the server has given up. */
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  expect_closed_with(1006, 4001, "");
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
  ev_destroy(&closed_ev);
}

/* Sends 2000 messages of 1000 bytes, each numbered. */
static void *send_many(void *arg) {
  rc_t *c = arg;
  static unsigned char buf[1100];
  char m[1000];
  int i;
  for (i = 0; i < 2000; i++) {
    memset(m, 'a' + i % 26, sizeof m);
    snprintf(m, 12, "%010d", i);
    if (rc_send(c, buf, frame(buf, 1, 2, m, sizeof m, 0)) != 0) return (void *)1;
  }
  return NULL;
}

/* A 4 KiB high-water mark and a peer that sends far more than it reads at
 * first: the echo pauses and resumes many times (sending past the mark
 * from a resume, with reading held back by held bytes) and every message
 * comes back, in order. */
static void test_pausing_echo_never_stalls(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  rc_response_t r;
  pthread_t t;
  void *ret;
  char want[16];
  int i;
  fx->opts.write_high_water_bytes = 4096;
  start(fx);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /wsp HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
                   0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  rc_response_free(&r);
  assert_int_equal(pthread_create(&t, NULL, send_many, c), 0);
  for (i = 0; i < 2000; i++) {
    read_frame(c, &fr);
    assert_int_equal(fr.opcode, 2);
    assert_int_equal(fr.len, 1000);
    snprintf(want, sizeof want, "%010d", i);
    assert_memory_equal(fr.data, want, 10);
  }
  assert_int_equal(pthread_join(t, &ret), 0);
  assert_null(ret);
  send_frame(c, 1, 8, "\x03\xe8", 2);
  expect_close(c, 1000, "");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1000, 1000, "");
  ev_destroy(&closed_ev);
}

/* The peer closes (the server answers and ends the connection) while a
 * 16 MiB flood it does not read is queued: dropped at close_timeout_ms, not
 * at the write timeout (60 s here).  The request for the flood and the
 * close go in one write, so the server has read the close before its
 * queue passes the high-water mark (from then on it reads nothing until
 * the queue drains, and a close sent later would wait behind it). */
static void test_close_timeout_after_peer_close(void **state) {
  fx_t *fx = *state;
  rc_t *c = open_slow_reader(fx);
  unsigned char both[64];
  size_t n = frame(both, 1, 1, "bigflood", 8, 0);
  n += frame(both + n, 1, 8, "\x03\xe8", 2, 0);
  assert_int_equal(rc_send(c, both, n), 0);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  expect_closed_with(1000, 1000, "");
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c);
  ev_destroy(&closed_ev);
}

static void test_server_closes(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start(fx);
  c = open_ws(fx, "");
  send_text(c, "close");
  expect_close(c, 4001, "bye");
  /* A message on its way is still delivered (no data may follow the
   * server's close, so it is not echoed); then the peer's answer. */
  send_text(c, "still");
  send_frame(c, 1, 8, "\x0f\xa1", 2);
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(4001, 4001, "");
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.after_close, 1);
  pthread_mutex_unlock(&st.mu);
  ev_destroy(&closed_ev);
}

static void test_failures(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  unsigned char buf[64];
  size_t n;
  static char over[70001];
  start(fx);
  /* Unmasked: 1002. */
  c = open_ws(fx, "");
  n = frame(buf, 1, 1, "hi", 2, 1);
  assert_int_equal(rc_send(c, buf, n), 0);
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1006, 1002, "");
  /* Invalid UTF-8, across fragments: 1007. */
  pthread_mutex_lock(&st.mu);
  st.closed_calls = 0;
  pthread_mutex_unlock(&st.mu);
  c = open_ws(fx, "");
  send_frame(c, 0, 1, "ok \xe2\x82", 5);
  send_frame(c, 1, 0, "\x28", 1);
  expect_close(c, 1007, "");
  expect_end(c);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 2, RC_TIMEOUT_MS));
  /* One byte over the limit, in two fragments: 1009. */
  c = open_ws(fx, "");
  memset(over, 'o', sizeof over);
  send_frame(c, 0, 2, over, 35000);
  send_frame(c, 1, 0, over, sizeof over - 35000);
  expect_close(c, 1009, "");
  expect_end(c);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 3, RC_TIMEOUT_MS));
  /* A reserved opcode, a control frame over 125 bytes (wslay's frame layer
   * refuses its header), a continuation outside a message, a text frame
   * inside one, a close frame of one byte, a close code not allowed on
   * the wire: 1002.  A close reason that is not UTF-8: 1007. */
  c = open_ws(fx, "");
  send_frame(c, 1, 3, "x", 1);
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  c = open_ws(fx, "");
  send_frame(c, 1, 9, over, 126);
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  c = open_ws(fx, "");
  send_frame(c, 1, 0, "x", 1);
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  c = open_ws(fx, "");
  send_frame(c, 0, 1, "a", 1);
  send_frame(c, 1, 1, "b", 1);
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  c = open_ws(fx, "");
  send_frame(c, 1, 8, "\x03", 1);
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  c = open_ws(fx, "");
  send_frame(c, 1, 8, "\x03\xed", 2); /* 1005 */
  expect_close(c, 1002, "");
  expect_end(c);
  fx_drop(fx, c);
  c = open_ws(fx, "");
  send_frame(c, 1, 8, "\x03\xe8\x62\x55\x90", 5);
  expect_close(c, 1007, "");
  expect_end(c);
  fx_drop(fx, c);
  /* A length not in its shortest form (16 and 64 bits), a 64-bit length
   * with its top bit set, a fragmented ping: 1002. */
  {
    static const char *const bad[] = {
        "\x81\xfe\x00\x05" "abcd" "hello",
        "\x82\xff\x00\x00\x00\x00\x00\x00\x00\x05" "abcd" "hello",
        "\x82\xff\x80\x00\x00\x00\x00\x00\x00\x05" "abcd",
        "\x09\x81" "abcd" "p",
    };
    static const size_t bad_len[] = {13, 19, 14, 7};
    size_t k;
    for (k = 0; k < 4; k++) {
      c = open_ws(fx, "");
      assert_int_equal(rc_send(c, bad[k], bad_len[k]), 0);
      expect_close(c, 1002, "");
      expect_end(c);
      fx_drop(fx, c);
    }
  }
  assert_true(ev_wait(&closed_ev, 14, RC_TIMEOUT_MS));
  ev_destroy(&closed_ev);
}

/* A frame header that declares 4 GiB is refused with 1009 as soon as its
 * length is in: the 10 bytes up to it (no mask key, no payload byte), or
 * all 14 of a header, or those bytes one at a time (issue 24; wslay hands
 * a header over only with a payload byte).  A header that fits waits for
 * its payload and is served. */
static void test_huge_frame_refused_at_header(void **state) {
  static const unsigned char huge[14] = {0x82, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4};
  fx_t *fx = *state;
  size_t k, sizes[3] = {10, 14, 10};
  rc_t *c;
  start(fx);
  for (k = 0; k < 3; k++) {
    c = open_ws(fx, "");
    if (k < 2)
      assert_int_equal(rc_send(c, huge, sizes[k]), 0);
    else
      assert_int_equal(rc_send_bytewise(c, huge, sizes[k], 1000), 0);
    expect_close(c, 1009, "");
    expect_end(c);
    fx_drop(fx, c);
    assert_true(ev_wait(&closed_ev, k + 1, RC_TIMEOUT_MS));
  }
  /* 70000 bytes declared, the route's limit: the header alone is no
   * refusal, and its payload is echoed. */
  c = open_ws(fx, "");
  {
    static char full[70000];
    memset(full, 'f', sizeof full);
    send_frame(c, 1, 2, full, sizeof full);
    read_frame(c, &fr);
    assert_int_equal(fr.opcode, 2);
    assert_int_equal(fr.len, sizeof full);
  }
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 4, RC_TIMEOUT_MS));
  ev_destroy(&closed_ev);
}

static void fast_ping(hr_websocket_options_t *o) {
  o->ping_interval_ms = 20;
  o->ping_timeout_ms = 20;
}

static void fast_idle(hr_websocket_options_t *o) {
  o->ping_interval_ms = 0;
  o->idle_timeout_ms = 30;
}

static void test_ping_timeout(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start_with(fx, fast_ping);
  c = open_ws(fx, "");
  /* Silence: a ping; answered with a pong: another ping later. */
  expect_frame(c, 9, "");
  send_frame(c, 1, 10, "", 0);
  expect_frame(c, 9, "");
  /* Not answered: dropped. */
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1006, 0, "");
  ev_destroy(&closed_ev);
}

static void test_idle_timeout(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start_with(fx, fast_idle);
  c = open_ws(fx, "");
  expect_close(c, 1001, "idle");
  send_frame(c, 1, 8, "\x03\xe9", 2);
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1001, 1001, "");
  ev_destroy(&closed_ev);
}

static void test_pause_post_and_backpressure(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  unsigned char buf[256];
  size_t n = 0, got = 0;
  start(fx);
  c = open_ws(fx, "");
  /* One write: the two messages behind "pause" arrive with it. */
  n += frame(buf + n, 1, 1, "pause", 5, 0);
  n += frame(buf + n, 1, 1, "m1", 2, 0);
  n += frame(buf + n, 1, 1, "m2", 2, 0);
  n += frame(buf + n, 1, 8, "\x03\xe8" "end", 5, 0);
  assert_int_equal(rc_send(c, buf, n), 0);
  /* The close behind them waited for the resume too. */
  expect_frame(c, 1, "paused");
  expect_frame(c, 1, "m1");
  expect_frame(c, 1, "m2");
  expect_close(c, 1000, "end");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1000, 1000, "end");
  pthread_mutex_lock(&st.mu);
  st.closed_calls = 0;
  pthread_mutex_unlock(&st.mu);
  c = open_ws(fx, "");
  send_text(c, "post");
  expect_frame(c, 1, "posted");
  /* 2 MiB through a 64 KiB high-water mark, every byte. */
  send_text(c, "flood");
  for (;;) {
    read_frame(c, &fr);
    if (fr.opcode == 1) break;
    assert_int_equal(fr.opcode, 2);
    assert_int_equal(fr.len, 65536);
    assert_int_equal(fr.data[0], 'f');
    assert_int_equal(fr.data[65535], 'f');
    got++;
  }
  assert_int_equal(got, 32);
  assert_int_equal(fr.len, 4);
  assert_memory_equal(fr.data, "done", 4);
  send_frame(c, 1, 8, "", 0); /* a close without a code */
  read_frame(c, &fr);
  assert_int_equal(fr.opcode, 8);
  assert_int_equal(fr.len, 0);
  expect_end(c);
  fx_drop(fx, c);
  assert_true(ev_wait(&closed_ev, 2, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.how.code, 1005);
  assert_int_equal(st.how.sent_code, 1005);
  pthread_mutex_unlock(&st.mu);
  ev_destroy(&closed_ev);
}

static void short_close(hr_websocket_options_t *o) { o->close_timeout_ms = 10; }

static void test_shutdown(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  /* The server says 1001 and, with no answer (this thread is in fx_stop),
   * closes after close_timeout_ms. */
  start_with(fx, short_close);
  c = open_ws(fx, "");
  fx_stop(fx, 5000);
  expect_close(c, 1001, "server shutting down");
  expect_end(c);
  fx_drop(fx, c);
  expect_closed_with(1006, 1001, "");
  pthread_mutex_lock(&st.mu);
  assert_int_equal(st.after_close_runs, 1);
  assert_int_equal(st.after_close_rc, HR_ECLOSED);
  pthread_mutex_unlock(&st.mu);
  ev_destroy(&closed_ev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_handshake, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_origin_list, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_refusals_error_body, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_echo_fragments_and_close, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_server_closes, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_registered_close_code, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_close_while_paused, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_close_timeout_drops_nonreader, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_pausing_echo_never_stalls, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_close_timeout_after_peer_close, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_echoes_before_close, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_many_fragments, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_failures, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_huge_frame_refused_at_header, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_ping_timeout, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_idle_timeout, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_pause_post_and_backpressure, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_shutdown, fx_setup, fx_teardown),
  };
  watchdog(120);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
