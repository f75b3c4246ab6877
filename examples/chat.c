/* SPDX-License-Identifier: MIT */
/*
 * chat: a WebSocket broadcast room (include/hroute/websocket.h).  Every
 * text message a member sends on /chat goes to every member, the sender
 * included; each sender's messages arrive in the order it sent them (with
 * --threads > 1, messages of senders on different loops may interleave
 * differently for different members).  With --threads > 1 the
 * members live on several worker loops: a member on the sender's loop is
 * sent to directly, one on another loop through hr_websocket_post with a
 * shared, reference-counted copy of the message.  A member that cannot
 * keep up (its queue passed the server's write high-water mark: the send
 * answered HR_EAGAIN) is closed with 1008 "too slow" rather than buffered
 * without bound.  /echo answers each message with itself (text or binary),
 * pausing delivery while its queue is full, so a fast sender loses
 * nothing; / serves a page that joins the room from a browser.  Shutdown
 * on SIGINT and SIGTERM follows examples/rest.c: members get close 1001.
 *
 *   chat [--host ADDR] [--port N] [--threads N] [--max-message BYTES]
 *        [--high-water BYTES] [--close-timeout MS] [--deflate off|on|takeover]
 *
 * --deflate on accepts permessage-deflate (RFC 7692) without context
 * takeover (nothing kept per connection); takeover keeps each direction's
 * window across messages, with 12-bit windows and memLevel 5 (about 40
 * KiB per connection).
 *   python3 -m websockets ws://127.0.0.1:8082/chat
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "hroute.h"

#define SHUTDOWN_DEADLINE_MS 5000

typedef struct options_s {
  const char *host;
  int port;
  unsigned threads;
  unsigned long long max_message, high_water, close_timeout;
  int deflate; /* 0 off, 1 on, 2 with context takeover */
} options_t;

static int parse_options(int argc, char **argv, options_t *o) {
  int i;
  o->host = "127.0.0.1";
  o->port = 8082;
  o->threads = 1;
  o->max_message = 1 << 20;
  o->high_water = 65536;
  o->close_timeout = 5000;
  o->deflate = 0;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    unsigned long long n = v != NULL ? strtoull(v, &end, 10) : 0;
    int numeric = v != NULL && *v != '\0' && *end == '\0';
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("usage: chat [--host ADDR] [--port N] [--threads N] [--max-message BYTES]\n"
             "            [--high-water BYTES] [--close-timeout MS]\n"
             "            [--deflate off|on|takeover]\n");
      return 1;
    }
    if (strcmp(a, "--host") == 0 && v != NULL)
      o->host = v;
    else if (strcmp(a, "--port") == 0 && numeric && n <= 65535)
      o->port = (int)n;
    else if (strcmp(a, "--threads") == 0 && numeric && n >= 1 && n <= 64)
      o->threads = (unsigned)n;
    else if (strcmp(a, "--max-message") == 0 && numeric && n >= 1)
      o->max_message = n;
    else if (strcmp(a, "--high-water") == 0 && numeric && n >= 1)
      o->high_water = n;
    else if (strcmp(a, "--close-timeout") == 0 && numeric && n <= UINT32_MAX)
      o->close_timeout = n;
    else if (strcmp(a, "--deflate") == 0 && v != NULL && strcmp(v, "off") == 0)
      o->deflate = 0;
    else if (strcmp(a, "--deflate") == 0 && v != NULL && strcmp(v, "on") == 0)
      o->deflate = 1;
    else if (strcmp(a, "--deflate") == 0 && v != NULL && strcmp(v, "takeover") == 0)
      o->deflate = 2;
    else {
      fprintf(stderr, "chat: bad or incomplete option '%s'\n", a);
      return -1;
    }
    i++;
  }
  return 0;
}

/* ---- the room ------------------------------------------------------------ */

/* A message on its way to members on other loops: one copy, shared. */
typedef struct msg_s {
  atomic_uint refs;
  size_t len;
  char data[];
} msg_t;

static void msg_unref(msg_t *m) {
  if (atomic_fetch_sub(&m->refs, 1) == 1) free(m);
}

/* Members, guarded by `mu`: taken by every loop that broadcasts and by
 * the closed callback, so no thread posts to a member after its closed
 * callback returned (hr_websocket_post's rule). */
typedef struct room_s {
  uv_mutex_t mu;
  hr_websocket_t **members;
  size_t n, cap;
  hr_websocket_options_t wsopts;
} room_t;

static int room_join(room_t *r, hr_websocket_t *ws) {
  int rc = 0;
  uv_mutex_lock(&r->mu);
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 64;
    hr_websocket_t **m = realloc(r->members, cap * sizeof(*m));
    if (m == NULL)
      rc = -1;
    else {
      r->members = m;
      r->cap = cap;
    }
  }
  if (rc == 0) r->members[r->n++] = ws;
  uv_mutex_unlock(&r->mu);
  return rc;
}

static void room_leave(room_t *r, hr_websocket_t *ws) {
  size_t i;
  uv_mutex_lock(&r->mu);
  for (i = 0; i < r->n; i++)
    if (r->members[i] == ws) {
      r->members[i] = r->members[--r->n];
      break;
    }
  uv_mutex_unlock(&r->mu);
}

/* Sends, or closes a member that cannot keep up. */
static void send_or_drop(hr_websocket_t *ws, const void *data, size_t len) {
  if (hr_websocket_send(ws, HR_WS_TEXT, data, len) == HR_EAGAIN)
    hr_websocket_close(ws, 1008, "too slow", 8);
}

/* On the member's own loop. */
static void deliver(hr_websocket_t *ws, void *udata) {
  msg_t *m = udata;
  send_or_drop(ws, m->data, m->len); /* HR_ECLOSED when it left meanwhile */
  msg_unref(m);
}

static void broadcast(room_t *r, const void *data, size_t len) {
  msg_t *m = NULL;
  size_t i;
  uv_mutex_lock(&r->mu);
  for (i = 0; i < r->n; i++) {
    hr_websocket_t *ws = r->members[i];
    int rc = hr_websocket_send(ws, HR_WS_TEXT, data, len);
    if (rc == HR_EAGAIN) {
      hr_websocket_close(ws, 1008, "too slow", 8);
    } else if (rc == HR_ETHREAD) { /* on another loop */
      if (m == NULL) {
        if ((m = malloc(sizeof(*m) + len)) == NULL) continue;
        atomic_init(&m->refs, 1); /* this loop's, dropped below */
        m->len = len;
        memcpy(m->data, data, len);
      }
      atomic_fetch_add(&m->refs, 1);
      if (hr_websocket_post(ws, deliver, m) != 0) msg_unref(m);
    }
  }
  uv_mutex_unlock(&r->mu);
  if (m != NULL) msg_unref(m);
}

static void on_chat_message(hr_websocket_t *ws, int type, const void *data, size_t len,
                            void *udata) {
  (void)ws;
  if (type == HR_WS_TEXT) broadcast(udata, data, len);
}

static void on_chat_closed(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata) {
  (void)how;
  room_leave(udata, ws);
}

static void h_chat(hr_request_t *req, hr_response_t *res, void *udata) {
  static const hr_websocket_callbacks_t cbs = {.message = on_chat_message,
                                               .closed = on_chat_closed};
  room_t *r = udata;
  hr_websocket_t *ws;
  /* On failure the handshake's answer was sent (400, 426, ...). */
  if (hr_websocket_accept(req, res, &r->wsopts, &cbs, r, &ws) != 0) return;
  if (room_join(r, ws) != 0) hr_websocket_close(ws, 1011, "out of memory", 13);
}

/* ---- echo ---------------------------------------------------------------- */

static void on_echo_message(hr_websocket_t *ws, int type, const void *data, size_t len,
                            void *udata) {
  if (hr_websocket_send(ws, type, data, len) == HR_EAGAIN) {
    /* Full: this message waits for the drain, the peer's next ones in the
     * kernel. */
    void *copy = malloc(len + sizeof(size_t) + sizeof(int));
    hr_websocket_pause(ws, 1);
    if (copy == NULL) {
      hr_websocket_close(ws, 1011, "out of memory", 13);
      return;
    }
    memcpy(copy, &len, sizeof len);
    memcpy((char *)copy + sizeof len, &type, sizeof type);
    memcpy((char *)copy + sizeof len + sizeof type, data, len);
    *(void **)udata = copy;
  }
}

static void on_echo_drain(hr_websocket_t *ws, void *udata) {
  void **pending = udata;
  size_t len;
  int type;
  if (*pending == NULL) return;
  memcpy(&len, *pending, sizeof len);
  memcpy(&type, (char *)*pending + sizeof len, sizeof type);
  if (hr_websocket_send(ws, type, (char *)*pending + sizeof len + sizeof type, len) ==
      HR_EAGAIN)
    return; /* still full: the next drain */
  free(*pending);
  *pending = NULL;
  hr_websocket_pause(ws, 0);
}

static void on_echo_closed(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata) {
  void **pending = udata;
  (void)ws;
  (void)how;
  free(*pending);
  free(pending);
}

static void h_echo(hr_request_t *req, hr_response_t *res, void *udata) {
  static const hr_websocket_callbacks_t cbs = {
      .message = on_echo_message, .closed = on_echo_closed, .drain = on_echo_drain};
  room_t *r = udata;
  void **pending = calloc(1, sizeof(void *)); /* the message the drain sends */
  if (pending == NULL) {
    hr_response_send(res, 503, "out of memory\n", 14);
    return;
  }
  if (hr_websocket_accept(req, res, &r->wsopts, &cbs, pending, NULL) != 0) free(pending);
}

/* ---- a page to try it from a browser -------------------------------------- */

static const char PAGE[] =
    "<!doctype html><meta charset=utf-8><title>hroute chat</title>\n"
    "<pre id=log></pre><input id=say autofocus placeholder='say something'>\n"
    "<script>\n"
    "const ws = new WebSocket(`ws://${location.host}/chat`);\n"
    "const log = (t) => { document.getElementById('log').textContent += t + '\\n'; };\n"
    "ws.onmessage = (e) => log(e.data);\n"
    "ws.onclose = (e) => log(`closed ${e.code} ${e.reason}`);\n"
    "document.getElementById('say').onkeydown = (e) => {\n"
    "  if (e.key === 'Enter') { ws.send(e.target.value); e.target.value = ''; }\n"
    "};\n"
    "</script>\n";

static void h_page(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/html; charset=utf-8"));
  hr_response_send(res, 200, PAGE, sizeof PAGE - 1);
}

/* ---- signals and main ------------------------------------------------------ */

typedef struct app_s {
  hr_server_t *server;
  unsigned threads;
  uv_signal_t sigint, sigterm;
  int shutting_down;
} app_t;

static void on_signal(uv_signal_t *h, int signum) {
  app_t *app = h->data;
  (void)signum;
  if (app->shutting_down) return;
  app->shutting_down = 1;
  fprintf(stderr, "chat: shutting down\n");
  if (app->threads == 1)
    hr_server_close(app->server, SHUTDOWN_DEADLINE_MS, NULL, NULL);
  else
    hr_server_stop(app->server, SHUTDOWN_DEADLINE_MS);
  uv_close((uv_handle_t *)&app->sigint, NULL);
  uv_close((uv_handle_t *)&app->sigterm, NULL);
}

static int fail(const char *what, int err) {
  fprintf(stderr, "chat: %s: %s\n", what, hr_strerror(err));
  return 1;
}

int main(int argc, char **argv) {
  options_t o;
  app_t app;
  room_t room;
  hr_router_t *router = NULL;
  hr_server_t *server = NULL;
  hr_server_options_t so;
  uv_loop_t *loop = uv_default_loop();
  int err, status = 1;

  switch (parse_options(argc, argv, &o)) {
  case 0:
    break;
  case 1:
    return 0;
  default:
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  memset(&app, 0, sizeof app);
  memset(&room, 0, sizeof room);
  if (uv_mutex_init(&room.mu) != 0) return 1;
  hr_websocket_options_init(&room.wsopts);
  room.wsopts.max_message_bytes = o.max_message;
  room.wsopts.close_timeout_ms = (uint32_t)o.close_timeout;
  room.wsopts.deflate.enabled = o.deflate != 0;
  if (o.deflate == 2) {
    room.wsopts.deflate.context_takeover = 1;
    room.wsopts.deflate.server_window_bits = 12;
    room.wsopts.deflate.client_window_bits = 12;
    room.wsopts.deflate.mem_level = 5;
  }

  if ((err = hr_router_new(&router, NULL)) != 0) {
    status = fail("hr_router_new", err);
    goto out;
  }
  if ((err = hr_router_add(router, "GET", "/chat", h_chat, &room, NULL)) != 0 ||
      (err = hr_router_add(router, "GET", "/echo", h_echo, &room, NULL)) != 0 ||
      (err = hr_router_add(router, "GET", "/", h_page, NULL, NULL)) != 0) {
    status = fail("hr_router_add", err);
    goto out;
  }
  hr_server_options_init(&so);
  so.write_high_water_bytes = (size_t)o.high_water;
  so.max_connections = 20000;
  if ((err = hr_server_new(&server, router, &so)) != 0) {
    status = fail("hr_server_new", err);
    goto out;
  }
  if ((err = hr_server_listen(server, o.host, o.port)) != 0) {
    status = fail("hr_server_listen", err);
    goto out;
  }
  app.server = server;
  app.threads = o.threads;
  uv_signal_init(loop, &app.sigint);
  uv_signal_init(loop, &app.sigterm);
  app.sigint.data = app.sigterm.data = &app;
  uv_signal_start(&app.sigint, on_signal, SIGINT);
  uv_signal_start(&app.sigterm, on_signal, SIGTERM);
  err = o.threads == 1 ? hr_server_attach(server, loop) : hr_server_start(server, o.threads);
  if (err != 0) {
    status = fail("start", err);
    uv_close((uv_handle_t *)&app.sigint, NULL);
    uv_close((uv_handle_t *)&app.sigterm, NULL);
    goto out;
  }
  fprintf(stderr, "chat: listening on %s:%d with %u thread(s)\n", o.host,
          hr_server_port(server, 0), o.threads);
  uv_run(loop, UV_RUN_DEFAULT);
  status = 0;
out:
  uv_run(loop, UV_RUN_NOWAIT);
  hr_server_free(server);
  hr_router_free(router);
  free(room.members);
  uv_mutex_destroy(&room.mu);
  if (uv_loop_close(loop) != 0) status = 1;
  return status;
}
