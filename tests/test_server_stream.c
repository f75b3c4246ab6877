/* SPDX-License-Identifier: MIT */
/*
 * The calls a protocol of the application's own makes on an upgraded
 * stream (include/hroute/upgrade.h), each with exact values, on a server
 * attached to a loop of the test's (so that hr_stream_loop has a known
 * answer) with a counting allocator (so that hr_response_allocator and a
 * post's one node can be checked): hr_response_upgrade_check before and
 * after the upgrade, from another thread, once the response started and
 * while a body is still to come; hr_stream_queued and hr_stream_high_water
 * counting the 101 head and each write; hr_stream_write_past_mark over the
 * mark while hr_stream_write is refused; hr_stream_want_drain (one drain per
 * ask, none without a drain callback or after close); hr_stream_abort from
 * a read callback and from the deadline (a reset, no queued byte sent,
 * closed with HR_ECLOSED), and after hr_stream_close; hr_stream_check_thread
 * and hr_stream_loop from both threads; hr_stream_post_fn carrying a
 * function (or none), in order, and after the stream ended;
 * hr_stream_loop_local made once for the loop's streams, a failed make
 * stored nothing, its argument errors, and the release at the end.  Callbacks
 * write what they saw to the peer (or note it, once writing is over) and
 * the test thread compares the text.
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

#define HIGH_WATER 1000
#define BIG 1500 /* one write over the mark */

static ca_t ca;
static ev_t closed_ev, after_ev;
static struct {
  pthread_mutex_t mu;
  int closed_status;
  char note[256];  /* what a callback saw once the stream could not say it */
  char after[128]; /* what a post run after the closed callback saw */
} st = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}};

static void note(const char *text) {
  pthread_mutex_lock(&st.mu);
  snprintf(st.note, sizeof st.note, "%s", text);
  pthread_mutex_unlock(&st.mu);
}

/* Writes printf-style text to the stream, past the mark (a report must not
 * be refused). */
static void say(hr_stream_t *s, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  hr_stream_write_past_mark(s, buf, (size_t)n);
}

/* ---- calls from another thread --------------------------------------------- */

typedef struct {
  hr_stream_t *s;
  hr_response_t *res;
  int check, write, drain, abort_rc, post, post_nofn;
  size_t queued, high_water;
  uv_loop_t *loop;
  uint64_t calls;
} other_t;

static void run_on_thread(void *(*fn)(void *), other_t *o) {
  pthread_t t;
  if (pthread_create(&t, NULL, fn, o) != 0 || pthread_join(t, NULL) != 0) abort();
}

static void *res_from_thread(void *arg) {
  other_t *o = arg;
  o->check = hr_response_upgrade_check(o->res);
  return NULL;
}

static void *stream_from_thread(void *arg) {
  other_t *o = arg;
  o->check = hr_stream_check_thread(o->s);
  o->loop = hr_stream_loop(o->s);
  o->queued = hr_stream_queued(o->s);
  o->high_water = hr_stream_high_water(o->s);
  o->write = hr_stream_write_past_mark(o->s, "no", 2);
  o->drain = hr_stream_want_drain(o->s);
  o->abort_rc = hr_stream_abort(o->s);
  return NULL;
}

/* ---- posts ----------------------------------------------------------------- */

typedef void (*say_fn)(hr_stream_t *s, const char *what);

static void said(hr_stream_t *s, const char *what) { say(s, "said:%s\n", what); }

/* hr_stream_post_fn's runner: the function carried, cast back. */
static void runner(hr_stream_t *s, hr_stream_fn fn, void *udata) {
  if (hr_stream_check_thread(s) != 0) abort();
  if (fn != NULL)
    ((say_fn)fn)(s, udata);
  else
    say(s, "nofn:%s\n", (const char *)udata);
}

static void *post_from_thread(void *arg) {
  other_t *o = arg;
  uint64_t before = ca_calls(&ca);
  o->post = hr_stream_post_fn(o->s, runner, (hr_stream_fn)said, "fn");
  o->post_nofn = hr_stream_post_fn(o->s, runner, NULL, "none");
  o->calls = ca_calls(&ca) - before; /* the loop thread waits in its callback */
  return NULL;
}

/* Posted by the closed callback: runs after it, the stream still allocated. */
static void after_closed(hr_stream_t *s, hr_stream_fn fn, void *udata) {
  (void)fn;
  (void)udata;
  pthread_mutex_lock(&st.mu);
  snprintf(st.after, sizeof st.after, "thread=%s write=%s queued=%zu drain=%s abort=%s",
           hr_err_name(hr_stream_check_thread(s)),
           hr_err_name(hr_stream_write_past_mark(s, "x", 1)), hr_stream_queued(s),
           hr_err_name(hr_stream_want_drain(s)), hr_err_name(hr_stream_abort(s)));
  pthread_mutex_unlock(&st.mu);
  ev_signal(&after_ev);
}

/* ---- the stream's callbacks ------------------------------------------------------ */

static char big[BIG + 1];
static char queue_answer[BIG + 256]; /* what "queue" answers */

#define IS(lit) (len == sizeof(lit) - 1 && memcmp(data, lit, len) == 0)

/* hr_stream_loop_local's object, how often it was made and released. */
static int local_key, fail_key, local_obj, local_made, local_released;

static void *local_make(void *arg) {
  (*(int *)arg)++;
  return &local_obj;
}
static void *local_fail(void *arg) {
  (void)arg;
  return NULL;
}
static void local_release(void *obj) {
  assert_ptr_equal(obj, &local_obj);
  local_released++;
}

static void on_read(hr_stream_t *s, const char *data, size_t len, void *udata) {
  fx_t *fx = udata;
  other_t o;
  memset(&o, 0, sizeof o);
  o.s = s;
  if (IS("queue")) { /* over the mark: refused, then written past it */
    size_t q0 = hr_stream_queued(s), q1, q2;
    int w1 = hr_stream_write(s, big, BIG), w2, p1, p0;
    q1 = hr_stream_queued(s);
    w2 = hr_stream_write(s, "x", 1);
    p1 = hr_stream_write_past_mark(s, "+past", 5);
    q2 = hr_stream_queued(s);
    p0 = hr_stream_write_past_mark(s, NULL, 0);
    say(s, "\nq0=%zu write=%s q1=%zu write=%s past=%s q2=%zu empty=%s\n", q0,
        hr_err_name(w1), q1, hr_err_name(w2), hr_err_name(p1), q2, hr_err_name(p0));
  } else if (IS("want")) { /* asked twice: one drain */
    int a = hr_stream_want_drain(s), b = hr_stream_want_drain(s);
    say(s, "want=%s,%s\n", hr_err_name(a), hr_err_name(b));
  } else if (IS("thread")) {
    run_on_thread(stream_from_thread, &o);
    say(s,
        "here: thread=%s loop=%d\nthere: thread=%s loop=%d queued=%zu high_water=%zu "
        "write=%s drain=%s abort=%s\n"
        "null: thread=%s loop=%d queued=%zu high_water=%zu write=%s drain=%s abort=%s "
        "post=%s run=%s\n",
        hr_err_name(hr_stream_check_thread(s)), hr_stream_loop(s) == &fx->loop,
        hr_err_name(o.check), o.loop == &fx->loop, o.queued, o.high_water,
        hr_err_name(o.write), hr_err_name(o.drain), hr_err_name(o.abort_rc),
        hr_err_name(hr_stream_check_thread(NULL)), hr_stream_loop(NULL) == NULL,
        hr_stream_queued(NULL), hr_stream_high_water(NULL),
        hr_err_name(hr_stream_write_past_mark(NULL, "x", 1)),
        hr_err_name(hr_stream_want_drain(NULL)), hr_err_name(hr_stream_abort(NULL)),
        hr_err_name(hr_stream_post_fn(NULL, runner, NULL, NULL)),
        hr_err_name(hr_stream_post_fn(s, NULL, NULL, NULL)));
  } else if (IS("local")) {
    void *a = hr_stream_loop_local(s, &local_key, local_make, &local_made, local_release);
    void *b = hr_stream_loop_local(s, &local_key, local_make, &local_made, local_release);
    void *f = hr_stream_loop_local(s, &fail_key, local_fail, NULL, local_release);
    say(s, "local=%d same=%d made=%d failed=%d null=%d,%d,%d,%d\n", a == &local_obj, a == b,
        local_made, f == NULL,
        hr_stream_loop_local(NULL, &local_key, local_make, &local_made, local_release) == NULL,
        hr_stream_loop_local(s, NULL, local_make, &local_made, local_release) == NULL,
        hr_stream_loop_local(s, &local_key, NULL, &local_made, local_release) == NULL,
        hr_stream_loop_local(s, &local_key, local_make, &local_made, NULL) == NULL);
  } else if (IS("post")) {
    run_on_thread(post_from_thread, &o);
    say(s, "asked=%s,%s allocations=%llu\n", hr_err_name(o.post), hr_err_name(o.post_nofn),
        (unsigned long long)o.calls);
  } else if (IS("abort")) { /* what is queued is dropped: a reset */
    int w = hr_stream_write(s, "lost", 4), a1 = hr_stream_abort(s), a2, w2;
    size_t q = hr_stream_queued(s);
    char text[128];
    a2 = hr_stream_abort(s);
    w2 = hr_stream_write(s, "x", 1);
    snprintf(text, sizeof text, "write=%s abort=%s queued=%zu again=%s write=%s",
             hr_err_name(w), hr_err_name(a1), q, hr_err_name(a2), hr_err_name(w2));
    note(text);
  } else if (IS("later")) { /* aborted from the deadline */
    hr_stream_set_timeout(s, 1);
  } else if (IS("close")) { /* closed, then aborted: FIN never comes */
    int w = hr_stream_write(s, "lost", 4), c = hr_stream_close(s);
    int p = hr_stream_write_past_mark(s, "x", 1), d = hr_stream_want_drain(s);
    int a = hr_stream_abort(s);
    char text[128];
    snprintf(text, sizeof text, "write=%s close=%s past=%s drain=%s abort=%s", hr_err_name(w),
             hr_err_name(c), hr_err_name(p), hr_err_name(d), hr_err_name(a));
    note(text);
  } else if (IS("flood")) { /* a reader that takes nothing: aborted later */
    static char flood[4 << 20];
    memset(flood, 'f', sizeof flood);
    hr_stream_write_past_mark(s, flood, sizeof flood);
    hr_stream_close(s);
    hr_stream_set_timeout(s, 1);
  } else if (IS("bye")) {
    hr_stream_close(s);
  } else {
    say(s, "%.*s", (int)len, data);
  }
}

static void on_timeout(hr_stream_t *s, void *udata) {
  int w = hr_stream_write(s, "lost", 4), a = hr_stream_abort(s);
  char text[64];
  (void)udata;
  snprintf(text, sizeof text, "timeout: write=%s abort=%s", hr_err_name(w), hr_err_name(a));
  note(text);
}

static void on_drain(hr_stream_t *s, void *udata) {
  (void)udata;
  say(s, "drained\n");
}

static void on_closed(hr_stream_t *s, int status, void *udata) {
  int rc = hr_stream_post_fn(s, after_closed, NULL, NULL);
  (void)udata;
  pthread_mutex_lock(&st.mu);
  st.closed_status = rc == 0 ? status : rc;
  pthread_mutex_unlock(&st.mu);
  ev_signal(&closed_ev);
}

static const hr_stream_callbacks_t cbs = {
    .read = on_read, .closed = on_closed, .drain = on_drain, .timeout = on_timeout};

/* No drain callback: hr_stream_want_drain refuses. */
static void bare_read(hr_stream_t *s, const char *data, size_t len, void *udata) {
  (void)data;
  (void)len;
  (void)udata;
  say(s, "drain=%s\n", hr_err_name(hr_stream_want_drain(s)));
}

static void bare_closed(hr_stream_t *s, int status, void *udata) {
  (void)s;
  (void)status;
  (void)udata;
  ev_signal(&closed_ev);
}

static const hr_stream_callbacks_t bare_cbs = {.read = bare_read, .closed = bare_closed};

/* ---- handlers ---------------------------------------------------------------- */

/* What the handler saw, as the stream's first bytes. */
static void h_up(hr_request_t *req, hr_response_t *res, void *udata) {
  other_t o;
  hr_stream_t *s;
  int before = hr_response_upgrade_check(res), after, rc;
  const hr_allocator_t *a = hr_response_allocator(res);
  (void)req;
  memset(&o, 0, sizeof o);
  o.res = res;
  run_on_thread(res_from_thread, &o);
  rc = hr_response_upgrade(res, "proto", &cbs, udata, &s);
  if (rc != 0) {
    hr_response_send(res, 500, hr_err_name(rc), strlen(hr_err_name(rc)));
    return;
  }
  after = hr_response_upgrade_check(res);
  say(s, "check=%s there=%s after=%s allocator=%d queued=%zu high_water=%zu\n",
      hr_err_name(before), hr_err_name(o.check), hr_err_name(after), a == &ca.hook,
      hr_stream_queued(s), hr_stream_high_water(s));
}

static void h_bare(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  hr_response_upgrade(res, "proto", &bare_cbs, udata, NULL);
}

/* A response that started: no upgrade any more. */
static void h_started(hr_request_t *req, hr_response_t *res, void *udata) {
  const char *name;
  (void)req;
  (void)udata;
  hr_response_start(res, 200, HR_LENGTH_UNKNOWN);
  name = hr_err_name(hr_response_upgrade_check(res));
  hr_response_write(res, name, strlen(name));
  hr_response_end(res);
}

/* A streaming route whose body is still to come. */
static void h_body(hr_request_t *req, hr_response_t *res, void *udata) {
  const char *name = hr_err_name(hr_response_upgrade_check(res));
  (void)req;
  (void)udata;
  hr_response_send(res, 400, name, strlen(name));
}

/* ---- the test's side ----------------------------------------------------------- */

static const char HEAD_101[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: proto\r\n"
                               "Connection: Upgrade\r\n\r\n";

static void start(fx_t *fx) {
  hr_route_options_t ro;
  ca_init(&ca);
  ev_init(&closed_ev);
  ev_init(&after_ev);
  memset(big, 'x', BIG);
  snprintf(queue_answer, sizeof queue_answer,
           "%s+past\nq0=0 write=OK q1=%d write=HR_EAGAIN past=OK q2=%d empty=OK\ndrained\n",
           big, BIG, BIG + 5);
  st.closed_status = 1;
  st.note[0] = st.after[0] = '\0';
  fx->opts.allocator = &ca.hook;
  fx->opts.write_high_water_bytes = HIGH_WATER;
  fx->opts.write_timeout_ms = 60000; /* never what ends a stream here */
  fx_route(fx, "GET", "/up", h_up, fx);
  fx_route(fx, "GET", "/bare", h_bare, fx);
  fx_route(fx, "GET", "/started", h_started, NULL);
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  fx_route_opts(fx, "POST", "/body", h_body, NULL, &ro);
  fx_attach(fx);
}

static void finish(fx_t *fx) {
  fx_close_attached(fx, 1000);
  ev_destroy(&closed_ev);
  ev_destroy(&after_ev);
  ca_destroy(&ca);
}

/* Upgrades on `path`; the 101 head read, what follows is the stream's. */
static rc_t *open_stream(fx_t *fx, const char *path) {
  char req[256];
  rc_t *c = fx_connect(fx);
  snprintf(req, sizeof req,
           "GET %s HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: proto\r\n\r\n", path);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_bytes(c, HEAD_101);
  return c;
}

/* The handler's greeting: its checks, and the 101 head counted as queued. */
static rc_t *open_up(fx_t *fx) {
  char want[256];
  rc_t *c = open_stream(fx, "/up");
  snprintf(want, sizeof want,
           "check=OK there=HR_ETHREAD after=HR_ESTATE allocator=1 queued=%zu high_water=%d\n",
           sizeof HEAD_101 - 1, HIGH_WATER);
  expect_bytes(c, want);
  return c;
}

static void expect_note(const char *want) {
  pthread_mutex_lock(&st.mu);
  assert_string_equal(st.note, want);
  pthread_mutex_unlock(&st.mu);
}

/* The n-th stream ended with `status`; a post from its closed callback ran
 * after it and found every call answering HR_ECLOSED. */
static void expect_end(unsigned long n, int status) {
  if (!ev_wait(&closed_ev, n, RC_TIMEOUT_MS)) {
    char seen[sizeof st.note];
    pthread_mutex_lock(&st.mu);
    memcpy(seen, st.note, sizeof seen);
    pthread_mutex_unlock(&st.mu);
    fail_msg("the stream did not end (noted: \"%s\")", seen);
  }
  assert_true(ev_wait(&after_ev, n, RC_TIMEOUT_MS));
  pthread_mutex_lock(&st.mu);
  assert_string_equal(hr_err_name(st.closed_status), hr_err_name(status));
  assert_string_equal(st.after, "thread=OK write=HR_ECLOSED queued=0 drain=HR_ECLOSED "
                                "abort=HR_ECLOSED");
  pthread_mutex_unlock(&st.mu);
}

static void test_upgrade_check(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  start(fx);
  c = open_up(fx); /* before and after the upgrade, and from another thread */
  assert_int_equal(rc_send_str(c, "bye"), 0);
  assert_int_equal(rc_drain_until_closed(c, NULL), 1);
  fx_drop(fx, c); /* the server lingers until the peer closes too */
  expect_end(1, 0);
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /started HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: proto\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 200 OK", "HR_ESTATE", NULL);
  assert_int_equal(rc_send_str(c, "POST /body HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: proto\r\nExpect: 100-continue\r\n"
                                  "Content-Length: 5\r\n\r\n"),
                   0);
  expect_response(c, "HTTP/1.1 400 Bad Request", "HR_ESTATE", NULL);
  fx_drop(fx, c);
  finish(fx);
}

/* Sends `command` on the stream; its answer is `answer`. */
static void ask(rc_t *c, const char *command, const char *answer) {
  assert_int_equal(rc_send_str(c, command), 0);
  expect_bytes(c, answer);
}

/* Each command on a stream of its own, and what the stream answers; the
 * echo after it shows the stream goes on. */
static void test_calls(void **state) {
  static const struct {
    const char *command, *answer;
  } cases[] = {
      /* hr_stream_write refuses over the mark, hr_stream_write_past_mark
       * does not; the refusal asked for the drain. */
      {"queue", queue_answer},
      /* Two asks, one drain. */
      {"want", "want=OK,OK\ndrained\n"},
      /* The thread check and the loop from both threads; every call's
       * answer to another thread and to NULL. */
      {"thread", "here: thread=OK loop=1\n"
                 "there: thread=HR_ETHREAD loop=1 queued=0 high_water=1000 "
                 "write=HR_ETHREAD drain=HR_ETHREAD abort=HR_ETHREAD\n"
                 "null: thread=HR_EINVAL loop=1 queued=0 high_water=0 write=HR_EINVAL "
                 "drain=HR_EINVAL abort=HR_EINVAL post=HR_EINVAL run=HR_EINVAL\n"},
      /* Two posts from another thread, one node each, run in order on the
       * loop thread with the function carried (or none). */
      {"post", "asked=OK,OK allocations=2\nsaid:fn\nnofn:none\n"},
      /* One object for the loop: made at the first stream's call only. */
      {"local", "local=1 same=1 made=1 failed=1 null=1,1,1,1\n"},
      {"local", "local=1 same=1 made=1 failed=1 null=1,1,1,1\n"},
  };
  fx_t *fx = *state;
  rc_t *c;
  size_t i;
  start(fx);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    c = open_up(fx);
    ask(c, cases[i].command, cases[i].answer);
    ask(c, "echo", "echo");
    fx_drop(fx, c);
  }
  /* No drain callback: hr_stream_want_drain refuses. */
  c = open_stream(fx, "/bare");
  ask(c, "want", "drain=HR_EINVAL\n");
  fx_drop(fx, c);
  assert_int_equal(local_released, 0);
  finish(fx);
  assert_int_equal(local_released, 1); /* with the loop's worker */
}

/* From a read callback, from the deadline, and after hr_stream_close: the
 * queued bytes never go out, the peer sees a reset. */
static void test_abort(void **state) {
  static const struct {
    const char *command, *noted;
  } cases[] = {
      {"abort", "write=OK abort=OK queued=4 again=HR_ECLOSED write=HR_ECLOSED"},
      {"later", "timeout: write=OK abort=OK"},
      {"close", "write=OK close=OK past=HR_ESTATE drain=HR_ESTATE abort=OK"},
  };
  fx_t *fx = *state;
  rc_t *c;
  size_t i;
  start(fx);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    c = open_up(fx);
    assert_int_equal(rc_send_str(c, cases[i].command), 0);
    assert_int_equal(rc_expect_closed(c), 2);
    expect_end(i + 1, HR_ECLOSED);
    expect_note(cases[i].noted);
    fx_drop(fx, c);
  }

  /* Closed with 4 MiB queued for a peer that reads nothing, then aborted
   * on a later turn (the deadline): dropped at once, not at the write
   * timeout. */
  c = rc_connect_ex("127.0.0.1", fx->port, 8192);
  assert_non_null(c);
  assert_int_equal(rc_send_str(c, "GET /up HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                                  "Upgrade: proto\r\n\r\nflood"),
                   0);
  expect_end(i + 1, HR_ECLOSED);
  expect_note("timeout: write=HR_ESTATE abort=OK");
  rc_close(c);
  finish(fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_upgrade_check, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_calls, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_abort, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
