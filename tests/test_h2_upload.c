/* SPDX-License-Identifier: MIT */
/*
 * Request bodies over HTTP/2 (h2c): a paused body keeps its stream's
 * flow-control window shut while the connection's stays open (RFC 9113
 * §5.2), so the other streams go on; the resume delivers what was held in
 * order; a body under the pace is answered 408 on its stream; a client
 * that resets its stream in the middle of the body is a client abort
 * (499); and two bodies saved by file sinks (filesink.h) on one
 * connection, one held by a stalled disk with its stream's window shut
 * while the other is saved and answered.  The HTTP/1.1 side is
 * test_server_upload.c and test_server_status.c; every test_file_sink
 * case also runs over HTTP/2 (test_file_sink_h2).
 *
 * ctest-labels: tsan
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include <hroute/filesink.h>

#include "h2fx.h"

static atomic_size_t got_bytes;
static atomic_int got_pieces, got_finals, paused_flag, posts_ran, order_ok;
static hr_response_t *_Atomic steered;

static void body_cb(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  hr_response_t *res = udata;
  char text[32];
  size_t i, at;
  if (status == 0) {
    at = atomic_fetch_add(&got_bytes, chunk.len);
    /* The body is bytes 0, 1, ..., 255, 0, 1, ...: in order or not. */
    for (i = 0; i < chunk.len; i++)
      if ((unsigned char)chunk.ptr[i] != (unsigned char)((at + i) & 0xff)) atomic_store(&order_ok, 0);
    if (atomic_fetch_add(&got_pieces, 1) == 0) {
      assert_int_equal(hr_request_body_pause(req), 0);
      atomic_store(&paused_flag, 1);
    }
    return;
  }
  atomic_fetch_add(&got_finals, 1);
  if (status == 1) {
    int n = snprintf(text, sizeof text, "%zu", atomic_load(&got_bytes));
    hr_response_send(res, 200, text, (size_t)n);
  }
}

static void h_up(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  atomic_store(&steered, res);
  if (hr_request_read_body(req, body_cb, res) != 0) hr_response_send(res, 500, NULL, 0);
}

static void on_post_noop(hr_response_t *res, void *udata) {
  (void)res;
  (void)udata;
  atomic_fetch_add(&posts_ran, 1);
}

static void on_post_resume(hr_response_t *res, void *udata) {
  (void)udata;
  assert_int_equal(hr_request_body_resume(hr_response_request(res)), 0);
  atomic_fetch_add(&posts_ran, 1);
}

static int is_set(void *arg) { return atomic_load((atomic_int *)arg) != 0; }

static int posts_at(void *arg) { return atomic_load(&posts_ran) >= *(int *)arg; }

/* Runs `cb` on the server's loop and runs the client until it ran. */
static void on_loop(h2c_t *c, hr_post_cb cb) {
  int want = atomic_load(&posts_ran) + 1;
  assert_int_equal(hr_response_post(atomic_load(&steered), cb, NULL), 0);
  assert_int_equal(h2c_run(c, posts_at, &want), 1);
}

/* A 256 KiB body whose handler pauses at its first piece: the server holds
 * at most the stream's window (65,535 bytes) and opens it no further, so
 * the client's window for the stream is spent; a second stream is served
 * meanwhile.  Resumed, the rest arrives in order. */
static void test_pause_shuts_the_stream_window(void **state) {
  fx_t *fx = *state;
  const size_t body = 256 * 1024;
  unsigned char *data = malloc(body);
  hr_route_options_t ro;
  h2c_request_t r;
  h2_stream_t *st;
  int32_t id;
  size_t i, at_pause;
  h2c_t *c;
  atomic_store(&got_bytes, 0);
  atomic_store(&got_pieces, 0);
  atomic_store(&got_finals, 0);
  atomic_store(&paused_flag, 0);
  atomic_store(&posts_ran, 0);
  atomic_store(&order_ok, 1);
  for (i = 0; i < body; i++) data[i] = (unsigned char)(i & 0xff);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = 1u << 20;
  fx_route_opts(fx, "POST", "/up", h_up, NULL, &ro);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/up";
  r.open = 1;
  id = h2c_submit(c, &r);
  assert_true(id > 0);
  assert_int_equal(h2c_send_body(c, id, data, body, 1), 0);
  assert_int_equal(h2c_run(c, is_set, &paused_flag), 1);
  at_pause = atomic_load(&got_bytes);
  /* Another stream is answered while the first is paused: the
   * connection's window was not held back with it. */
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  on_loop(c, on_post_noop);
  assert_int_equal(atomic_load(&got_bytes), at_pause);
  assert_int_equal(atomic_load(&got_pieces), 1);
  /* What the client may still send on the stream: nothing. */
  assert_int_equal(nghttp2_session_get_stream_remote_window_size(c->session, id), 0);
  on_loop(c, on_post_resume);
  st = h2c_wait1(c, id);
  assert_non_null(st);
  expect_h2(st, 200, "262144");
  assert_int_equal(atomic_load(&order_ok), 1);
  assert_int_equal(atomic_load(&got_finals), 1);
  free(data);
}

static void h_sink(hr_request_t *req, hr_response_t *res, void *udata);

static void sink_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  (void)req;
  (void)chunk;
  if (status == 1) hr_response_send(udata, 200, "done", 4);
}

static void h_sink(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  if (hr_request_read_body(req, sink_body, res) != 0) hr_response_send(res, 500, NULL, 0);
}

/* Serves `path` (POST, streamed to `h`) beside GET /hello, connects, and
 * opens a POST to `path` with ten bytes of its body sent. */
static int32_t open_post(fx_t *fx, const char *path, hr_handler_cb h, h2c_t **out) {
  hr_route_options_t ro;
  h2c_request_t r;
  int32_t id;
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", path, h, NULL, &ro);
  fx_route(fx, "GET", "/hello", ta_text, "hello");
  h2fx_start(fx, 1);
  *out = h2fx_connect(fx, NULL);
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = path;
  r.open = 1;
  id = h2c_submit(*out, &r);
  assert_true(id > 0);
  assert_int_equal(h2c_send_body(*out, id, "0123456789", 10, 0), 0);
  return id;
}

/* A stream whose body stays under the pace (100 KB/s over 200 ms windows:
 * ten bytes and then nothing) is answered 408 on the stream; the
 * connection serves the next request. */
static void test_slow_stream_body_is_408(void **state) {
  fx_t *fx = *state;
  h2_stream_t *st;
  int32_t id;
  h2c_t *c;
  fx->opts.body_min_rate_bytes = 100000;
  fx->opts.body_rate_window_ms = 200;
  id = open_post(fx, "/sink", h_sink, &c);
  st = h2c_wait1(c, id);
  assert_non_null(st);
  assert_int_equal(st->status, 408);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
}

static atomic_int abort_piece, after_calls, after_status;

static void abort_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  (void)req;
  (void)chunk;
  if (status == 0) {
    atomic_store(&abort_piece, 1);
    return;
  }
  /* The client reset the stream: nothing was answered; the completing
   * call returns HR_ECLOSED. */
  if (hr_response_send(udata, 500, NULL, 0) != HR_ECLOSED) atomic_store(&after_status, -1);
}

static void h_abort(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  if (hr_request_read_body(req, abort_body, res) != 0) hr_response_send(res, 500, NULL, 0);
}

static void after_rec(hr_request_t *req, int status, void *udata) {
  (void)req;
  (void)udata;
  if (atomic_load(&after_status) != -1) atomic_store(&after_status, status);
  atomic_fetch_add(&after_calls, 1);
}

/* A client that resets its stream (RST_STREAM CANCEL) in the middle of the
 * body: a client abort (issue 24), HR_STATUS_CLIENT_CLOSED to the
 * after-middleware, counted in client_aborts and not in bad_requests;
 * the connection serves the next request. */
static void test_stream_reset_mid_body_is_499(void **state) {
  fx_t *fx = *state;
  hr_server_stats_t s;
  int32_t id;
  h2c_t *c;
  atomic_store(&abort_piece, 0);
  atomic_store(&after_calls, 0);
  atomic_store(&after_status, 0);
  assert_int_equal(hr_router_use(fx->router, NULL, "/up", NULL, after_rec, NULL), 0);
  id = open_post(fx, "/up", h_abort, &c);
  assert_int_equal(h2c_run(c, is_set, &abort_piece), 1);
  assert_int_equal(nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL),
                   0);
  assert_int_equal(h2c_run(c, is_set, &after_calls), 1);
  assert_int_equal(atomic_load(&after_status), HR_STATUS_CLIENT_CLOSED);
  expect_h2(h2fx_request(c, "GET", "/hello"), 200, "hello");
  fx_stats(fx, &s);
  assert_int_equal(s.client_aborts, 1);
  assert_int_equal(s.bad_requests, 0);
}

/* ---- file sinks on two streams ----------------------------------------------- */

/* Where a route's sink writes: a descriptor (a pipe; closed when the sink
 * is done, so that its reader sees the end) or a file. */
typedef struct target_s {
  int fd;
  char path[128];
  atomic_int paused; /* the sink's queue passed its mark */
} target_t;

typedef struct saving_s {
  hr_file_sink_t *sink;
  hr_response_t *res;
  target_t *t;
} saving_t;

static void saved(hr_file_sink_t *sink, int status, uint64_t bytes, void *udata) {
  saving_t *sv = udata;
  char text[32];
  int n = snprintf(text, sizeof text, "%llu", (unsigned long long)bytes);
  (void)sink;
  sv->sink = NULL;
  if (sv->t->fd >= 0) close(sv->t->fd);
  hr_response_send(sv->res, hr_file_sink_http_status(status), text, (size_t)n);
}

static void saving_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  saving_t *sv = udata;
  (void)req;
  if (status < 0) {
    hr_file_sink_abort(sv->sink);
    hr_response_send(sv->res, 500, NULL, 0);
  } else if (status == 1) {
    hr_file_sink_finish(sv->sink);
  } else if (hr_file_sink_write(sv->sink, chunk) == 0 &&
             hr_file_sink_queued(sv->sink) > 16384) {
    atomic_store(&sv->t->paused, 1);
  }
}

static void h_save_to(hr_request_t *req, hr_response_t *res, void *udata) {
  saving_t *sv = hr_request_alloc(req, sizeof *sv);
  target_t *t = udata;
  hr_file_sink_options_t o;
  int rc;
  if (sv == NULL) {
    hr_response_send(res, 503, NULL, 0);
    return;
  }
  sv->res = res;
  sv->t = t;
  hr_file_sink_options_init(&o);
  o.high_water_bytes = 16384;
  rc = t->fd >= 0 ? hr_file_sink_open_fd(&sv->sink, req, t->fd, &o, saved, sv)
                  : hr_file_sink_open(&sv->sink, req, t->path, &o, saved, sv);
  if (rc != 0) {
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  rc = hr_request_read_body(req, saving_body, sv);
  if (rc != 0) {
    hr_file_sink_abort(sv->sink);
    hr_response_send(res, 500, NULL, 0);
  }
}

typedef struct drainer_s {
  int fd;
  size_t got;
  int bad;
} drainer_t;

static void *drain_pipe(void *arg) {
  static unsigned char buf[65536];
  drainer_t *d = arg;
  for (;;) {
    struct pollfd p = {d->fd, POLLIN, 0};
    ssize_t n, i;
    if (poll(&p, 1, 5000) != 1 || (n = read(d->fd, buf, sizeof buf)) < 0) {
      d->bad = 1;
      return NULL;
    }
    if (n == 0) return NULL;
    for (i = 0; i < n; i++)
      if (buf[i] != (unsigned char)((d->got + (size_t)i) & 0xff)) d->bad = 1;
    d->got += (size_t)n;
  }
}

static int is_set_int(void *arg) { return atomic_load((atomic_int *)arg) != 0; }

/* The stalled pipe's read end and the file's folder while the test holds
 * them: after a failed assertion the teardown closes the one (a write
 * blocked on the pipe fails, so the server can stop) and removes the
 * other. */
static int sink_reader = -1;
static char sink_dir[32], sink_file[128];

static int teardown_sinks(void **state) {
  int rc;
  if (sink_reader >= 0) close(sink_reader);
  sink_reader = -1;
  rc = h2fx_teardown(state);
  if (sink_file[0] != '\0') unlink(sink_file);
  if (sink_dir[0] != '\0') rmdir(sink_dir);
  sink_file[0] = sink_dir[0] = '\0';
  return rc;
}

/* Two uploads on one connection, each saved by a file sink: the first
 * to a pipe nobody reads yet (a stalled disk), whose sink pauses its
 * body, so that stream's window stays shut at 0; the second to a file,
 * saved whole and answered 201 meanwhile.  Drained, the first is saved
 * too, in order. */
static void test_file_sinks_on_two_streams(void **state) {
  fx_t *fx = *state;
  const size_t body = 256 * 1024;
  unsigned char *data = malloc(body), *back = malloc(body + 1);
  static target_t to_pipe, to_file;
  hr_route_options_t ro;
  h2c_request_t r;
  h2_stream_t *st;
  drainer_t d = {-1, 0, 0};
  pthread_t th;
  int32_t id1, id2;
  int fds[2], fd;
  size_t i;
  h2c_t *c;
  for (i = 0; i < body; i++) data[i] = (unsigned char)(i & 0xff);
  snprintf(sink_dir, sizeof sink_dir, "/tmp/hr_h2sink_XXXXXX");
  assert_non_null(mkdtemp(sink_dir));
  assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
  sink_reader = fds[0];
  (void)fcntl(fds[1], F_SETPIPE_SZ, 4096);
  to_pipe.fd = fds[1];
  atomic_store(&to_pipe.paused, 0);
  to_file.fd = -1;
  snprintf(to_file.path, sizeof to_file.path, "%s/up.bin", sink_dir);
  snprintf(sink_file, sizeof sink_file, "%s", to_file.path);
  atomic_store(&to_file.paused, 0);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = 1u << 20;
  fx_route_opts(fx, "POST", "/pipe", h_save_to, &to_pipe, &ro);
  fx_route_opts(fx, "POST", "/file", h_save_to, &to_file, &ro);
  h2fx_start(fx, 1);
  c = h2fx_connect(fx, NULL);
  memset(&r, 0, sizeof r);
  r.method = "POST";
  r.path = "/pipe";
  r.open = 1;
  id1 = h2c_submit(c, &r);
  assert_true(id1 > 0);
  assert_int_equal(h2c_send_body(c, id1, data, body, 1), 0);
  assert_int_equal(h2c_run(c, is_set_int, &to_pipe.paused), 1);
  r.path = "/file";
  id2 = h2c_submit(c, &r);
  assert_true(id2 > 0);
  assert_int_equal(h2c_send_body(c, id2, data, body, 1), 0);
  st = h2c_wait1(c, id2);
  assert_non_null(st);
  expect_h2(st, 201, "262144");
  fd = open(to_file.path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(read(fd, back, body + 1), body);
  close(fd);
  assert_memory_equal(back, data, body);
  /* The stalled stream: its window shut, nothing more taken. */
  assert_int_equal(nghttp2_session_get_stream_remote_window_size(c->session, id1), 0);
  d.fd = fds[0];
  assert_int_equal(pthread_create(&th, NULL, drain_pipe, &d), 0);
  st = h2c_wait1(c, id1);
  pthread_join(th, NULL);
  close(fds[0]);
  sink_reader = -1;
  assert_non_null(st);
  expect_h2(st, 201, "262144");
  assert_int_equal(d.bad, 0);
  assert_int_equal(d.got, body);
  free(data);
  free(back);
}

#define H2C(t) {#t, t, h2fx_setup_h2c, h2fx_teardown, NULL}

int main(void) {
  const struct CMUnitTest tests[] = {
      H2C(test_pause_shuts_the_stream_window),
      H2C(test_slow_stream_body_is_408),
      H2C(test_stream_reset_mid_body_is_499),
      {"test_file_sinks_on_two_streams", test_file_sinks_on_two_streams, h2fx_setup_h2c,
       teardown_sinks, NULL},
  };
  signal(SIGPIPE, SIG_IGN); /* a pipe closed under a sink's write: EPIPE */
  return cmocka_run_group_tests_name("h2_upload", tests, NULL, NULL);
}
