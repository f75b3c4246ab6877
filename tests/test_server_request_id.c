/* SPDX-License-Identifier: MIT */
/*
 * Request ids (hr_request_id; hr_server_options_t.request_id_field and
 * request_id_echo): a well-formed incoming X-Request-Id is adopted and
 * echoed; a malformed one (too long, a space, a control byte, a byte from
 * 0x80, repeated) is replaced by a generated one; generated ids have their
 * documented shape, count up per worker and are unique across two workers
 * and across two servers; the echo is on the handler's answers and the
 * server's own (404, 405, 400, 408, 413, 431), and the access log's entry
 * and its Combined and JSON lines carry the same id; a handler's own field
 * wins; the echo and ids can be turned off; a bad field name is refused.
 * The same cases run over HTTP/2, but those about HTTP/1.1's framing.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "server/internal.h"

/* ---- what the access log saw --------------------------------------------- */

#define MAX_LINES 16

static struct {
  pthread_mutex_t mu;
  char lines[MAX_LINES][1024];
  char ids[MAX_LINES][256];
  int status[MAX_LINES];
  int n;
} logs = {PTHREAD_MUTEX_INITIALIZER, {{0}}, {{0}}, {0}, 0};

static void sink(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  (void)ctx;
  pthread_mutex_lock(&logs.mu);
  if (logs.n < MAX_LINES) {
    snprintf(logs.lines[logs.n], sizeof logs.lines[0], "%.*s", (int)len, line);
    snprintf(logs.ids[logs.n], sizeof logs.ids[0], "%.*s", (int)e->request_id.len,
             e->request_id.ptr != NULL ? e->request_id.ptr : "");
    logs.status[logs.n] = e->status;
    logs.n++;
  }
  pthread_mutex_unlock(&logs.mu);
}

static void wait_lines(int n) {
  int i;
  for (i = 0; i < 5000; i++) {
    int got;
    pthread_mutex_lock(&logs.mu);
    got = logs.n;
    pthread_mutex_unlock(&logs.mu);
    if (got >= n) return;
    sleep_ms(1);
  }
  fail_msg("%d access-log lines, want %d", logs.n, n);
}

/* The id of log line i (copied out under the lock). */
static const char *logged_id(int i, char *out, size_t cap) {
  pthread_mutex_lock(&logs.mu);
  snprintf(out, cap, "%s", logs.ids[i]);
  pthread_mutex_unlock(&logs.mu);
  return out;
}

/* Line i from its end of the time field "] " on (CLF), the time cut. */
static const char *logged_tail(int i, char *out, size_t cap) {
  const char *p;
  pthread_mutex_lock(&logs.mu);
  p = strstr(logs.lines[i], "] ");
  snprintf(out, cap, "%s", p != NULL ? p + 2 : logs.lines[i]);
  pthread_mutex_unlock(&logs.mu);
  return out;
}

/* ---- handlers ------------------------------------------------------------ */

/* 200 with the request's id as the body, asked for twice: the same bytes. */
static void h_id(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t a = hr_request_id(req), b = hr_request_id(req);
  (void)udata;
  if (a.len != b.len || a.ptr != b.ptr) {
    hr_response_send(res, 500, "unstable", 8);
    return;
  }
  hr_response_send(res, 200, a.ptr, a.len);
}

/* The same, with an X-Request-Id field of its own. */
static void h_own_field(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t a = hr_request_id(req);
  (void)udata;
  hr_response_add_field(res, HR_SPAN_LIT("x-request-id"), HR_SPAN_LIT("mine"));
  hr_response_send(res, 200, a.ptr, a.len);
}

static void start_as(fx_t *fx, unsigned nthreads, hr_access_format_t format) {
  pthread_mutex_lock(&logs.mu);
  logs.n = 0;
  pthread_mutex_unlock(&logs.mu);
  fx->opts.access_log = sink;
  fx->opts.access_format = format;
  fx_route(fx, "GET", "/id", h_id, NULL);
  fx_route(fx, "GET", "/own", h_own_field, NULL);
  fx_route(fx, "POST", "/post", h_id, NULL);
  fx_start(fx, nthreads);
}

static void start(fx_t *fx, unsigned nthreads) { start_as(fx, nthreads, HR_ACCESS_COMBINED); }

/* Sends `req` on a new connection and reads the answer with `status_line`
 * into *r (freed by the caller). */
static void ask(fx_t *fx, const char *req, const char *status_line, rc_response_t *r) {
  rc_t *c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, status_line, NULL, r);
  fx_drop(fx, c);
}

/* Whether `id` is "<16 lowercase hex>-<worker>-<n>", n from 1, no leading
 * zeros; stores the prefix (17 bytes), the worker and n. */
static int generated_shape(const char *id, char *prefix, unsigned *worker,
                           unsigned long long *n) {
  char *end;
  int i;
  for (i = 0; i < 16; i++)
    if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f'))) return 0;
  if (id[16] != '-' || id[17] < '0' || id[17] > '9') return 0;
  memcpy(prefix, id, 16);
  prefix[16] = '\0';
  *worker = (unsigned)strtoul(id + 17, &end, 10);
  if (*end != '-' || end[1] < '1' || end[1] > '9') return 0;
  *n = strtoull(end + 1, &end, 10);
  return *end == '\0' && strlen(id) <= 41;
}

static void expect_generated(const char *id, unsigned worker, unsigned long long n) {
  char prefix[17];
  unsigned w;
  unsigned long long k;
  if (!generated_shape(id, prefix, &w, &k)) fail_msg("not a generated id: \"%s\"", id);
  assert_int_equal(w, worker);
  if (n != 0) assert_int_equal(k, n);
}

/* ---- adoption ------------------------------------------------------------ */

/* A well-formed id is the request's: the handler's, the echo's and the
 * log's, exactly; the longest one too (128 bytes), and every visible
 * ASCII byte. */
static void test_adopted(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char req[512], longest[129], got[256];
  memset(longest, 'a', 128);
  longest[128] = '\0';
  longest[0] = '!';
  longest[127] = '~';
  start(fx, 1);
  ask(fx, "GET /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: req-42_Z.\"q\"\\/\r\n\r\n",
      "HTTP/1.1 200 OK", &r);
  assert_string_equal(r.body, "req-42_Z.\"q\"\\/");
  expect_field(&r, "X-Request-Id", "req-42_Z.\"q\"\\/", 0);
  rc_response_free(&r);
  /* any case of the name */
  snprintf(req, sizeof req, "GET /id HTTP/1.1\r\nHost: a\r\nx-REQUEST-id: %s\r\n\r\n", longest);
  ask(fx, req, "HTTP/1.1 200 OK", &r);
  assert_string_equal(r.body, longest);
  expect_field(&r, "X-Request-Id", longest, 0);
  rc_response_free(&r);
  wait_lines(2);
  assert_string_equal(logged_id(0, got, sizeof got), "req-42_Z.\"q\"\\/");
  assert_string_equal(logged_id(1, got, sizeof got), longest);
  /* Combined: the id last, escaped as the other quoted fields are */
  assert_string_equal(logged_tail(0, got, sizeof got),
                      fx_h2() ? "\"GET /id HTTP/2.0\" 200 14 \"-\" \"-\" "
                                "\"req-42_Z.\\x22q\\x22\\x5C/\""
                              : "\"GET /id HTTP/1.1\" 200 14 \"-\" \"-\" "
                                "\"req-42_Z.\\x22q\\x22\\x5C/\"");
}

/* Values that are not ids are replaced by generated ones, which count up
 * on the one worker from 1: too long, a space inside, a control byte
 * (HTAB: the one a field value may hold), a byte from 0x80, the field
 * twice, and empty. */
static void test_refused(void **state) {
  fx_t *fx = *state;
  static const char *const fields[] = {
      NULL, /* 129 bytes, filled in below */
      "X-Request-Id: a b\r\n",
      "X-Request-Id: ab\tcd\r\n",
      "X-Request-Id: caf\xc3\xa9\r\n",
      "X-Request-Id: one\r\nX-Request-Id: two\r\n",
      "X-Request-Id:\r\n",
  };
  char req[512], toolong[160], got[256], prefix[17] = "";
  size_t i;
  memset(toolong, 0, sizeof toolong);
  memcpy(toolong, "X-Request-Id: ", 14);
  memset(toolong + 14, 'b', 129);
  memcpy(toolong + 14 + 129, "\r\n", 2);
  start(fx, 1);
  for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    rc_response_t r;
    char p[17];
    unsigned w;
    unsigned long long n;
    snprintf(req, sizeof req, "GET /id HTTP/1.1\r\nHost: a\r\n%s\r\n",
             fields[i] != NULL ? fields[i] : toolong);
    ask(fx, req, "HTTP/1.1 200 OK", &r);
    expect_generated(r.body, 0, i + 1);
    expect_field(&r, "X-Request-Id", r.body, 0);
    assert_true(generated_shape(r.body, p, &w, &n));
    if (i > 0) assert_string_equal(p, prefix); /* one server, one prefix */
    memcpy(prefix, p, sizeof p);
    wait_lines((int)i + 1);
    assert_string_equal(logged_id((int)i, got, sizeof got), r.body);
    rc_response_free(&r);
  }
}

/* ---- the server's own answers -------------------------------------------- */

/* 404, 405 and 413 carry the request's id, adopted or generated, and the
 * log names the same. */
static void test_server_answers(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char got[256], gen[64];
  fx->opts.max_body_bytes = 10;
  start(fx, 1);
  ask(fx, "GET /nowhere HTTP/1.1\r\nHost: a\r\nX-Request-Id: nf-1\r\n\r\n",
      "HTTP/1.1 404 Not Found", &r);
  expect_field(&r, "X-Request-Id", "nf-1", 0);
  rc_response_free(&r);
  ask(fx, "GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", &r);
  expect_generated(rc_header(&r, "X-Request-Id"), 0, 1);
  snprintf(gen, sizeof gen, "%s", rc_header(&r, "X-Request-Id"));
  rc_response_free(&r);
  ask(fx, "POST /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: na-2\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 405 Method Not Allowed", &r);
  expect_field(&r, "X-Request-Id", "na-2", 0);
  rc_response_free(&r);
  ask(fx, "POST /post HTTP/1.1\r\nHost: a\r\nX-Request-Id: big-3\r\nContent-Length: 11\r\n\r\n"
          "0123456789a", "HTTP/1.1 413 Content Too Large", &r);
  expect_field(&r, "X-Request-Id", "big-3", 0);
  rc_response_free(&r);
  wait_lines(4);
  assert_string_equal(logged_id(0, got, sizeof got), "nf-1");
  assert_string_equal(logged_id(1, got, sizeof got), gen);
  assert_string_equal(logged_id(2, got, sizeof got), "na-2");
  assert_string_equal(logged_id(3, got, sizeof got), "big-3");
}

/* HTTP/1.1's errors that end the connection: a header section that did
 * not parse gets a generated id (its fields are not trusted, a
 * well-formed X-Request-Id among them included), one that parsed but is
 * refused keeps the id it brought; 431 and 408 too.  (Other control bytes
 * than HTAB in a field value are refused with the section: 400.) */
static void test_h1_errors(void **state) {
  fx_t *fx = *state;
  static const struct {
    const char *request;
    const char *status_line;
    const char *id; /* NULL: generated */
  } cases[] = {
      {"GET /a b c\r\n\r\n", "HTTP/1.1 400 Bad Request", NULL},
      {"GET /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: ab\x7f" "cd\r\n\r\n",
       "HTTP/1.1 400 Bad Request", NULL},
      {"GET /b HTTP/1.1\r\nHost: a\r\nX-Request-Id: kept-not\r\nNo-Colon\r\n\r\n",
       "HTTP/1.1 400 Bad Request", NULL},
      /* parsed whole, refused for its Host: adopted */
      {"GET /id HTTP/1.1\r\nX-Request-Id: no-host\r\n\r\n", "HTTP/1.1 400 Bad Request",
       "no-host"},
      {"GET /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: many\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
       "HTTP/1.1 431 Request Header Fields Too Large", NULL},
  };
  size_t i;
  unsigned long long n = 0;
  char got[256];
  rc_t *c;
  rc_response_t r;
  fx_h1_only("HTTP/1.1's own framing errors");
  fx->opts.max_header_fields = 3;
  fx->opts.header_timeout_ms = 200;
  start(fx, 1);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ask(fx, cases[i].request, cases[i].status_line, &r);
    if (cases[i].id != NULL) {
      expect_field(&r, "X-Request-Id", cases[i].id, 0);
    } else {
      expect_generated(rc_header(&r, "X-Request-Id"), 0, ++n);
      expect_field(&r, "X-Request-Id", rc_header(&r, "X-Request-Id"), 0);
    }
    wait_lines((int)i + 1);
    assert_string_equal(logged_id((int)i, got, sizeof got), rc_header(&r, "X-Request-Id"));
    rc_response_free(&r);
  }
  /* 408: half a header section, then nothing */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: slow\r\n"), 0);
  expect_response(c, "HTTP/1.1 408 Request Timeout", NULL, &r);
  expect_generated(rc_header(&r, "X-Request-Id"), 0, ++n);
  wait_lines((int)i + 1);
  assert_string_equal(logged_id((int)i, got, sizeof got), rc_header(&r, "X-Request-Id"));
  rc_response_free(&r);
  fx_drop(fx, c);
}

/* ---- options -------------------------------------------------------------- */

/* A handler's own field wins: one field, the handler's value; the
 * request's id is still its own. */
static void test_own_field(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  start(fx, 1);
  ask(fx, "GET /own HTTP/1.1\r\nHost: a\r\nX-Request-Id: theirs\r\n\r\n", "HTTP/1.1 200 OK", &r);
  assert_string_equal(r.body, "theirs");
  assert_int_equal(rc_header_count(&r, "X-Request-Id"), 1);
  expect_field(&r, "X-Request-Id", "mine", 0);
  rc_response_free(&r);
}

/* request_id_echo 0: no field on any answer; the handler and the log
 * still have the id. */
static void test_echo_off(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char got[256];
  fx->opts.request_id_echo = 0;
  start(fx, 1);
  ask(fx, "GET /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: quiet\r\n\r\n", "HTTP/1.1 200 OK", &r);
  assert_string_equal(r.body, "quiet");
  expect_no_field(&r, "X-Request-Id");
  rc_response_free(&r);
  ask(fx, "GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 404 Not Found", &r);
  expect_no_field(&r, "X-Request-Id");
  rc_response_free(&r);
  wait_lines(2);
  assert_string_equal(logged_id(0, got, sizeof got), "quiet");
  expect_generated(logged_id(1, got, sizeof got), 0, 1);
}

/* request_id_field NULL: no id anywhere, and the classic Combined and
 * JSON lines. */
static void test_ids_off(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char got[1024];
  fx->opts.request_id_field = NULL;
  start(fx, 1);
  ask(fx, "GET /id HTTP/1.1\r\nHost: a\r\nX-Request-Id: ignored\r\n\r\n", "HTTP/1.1 200 OK", &r);
  assert_int_equal(r.body_len, 0);
  expect_no_field(&r, "X-Request-Id");
  rc_response_free(&r);
  wait_lines(1);
  assert_string_equal(logged_id(0, got, sizeof got), "");
  assert_string_equal(logged_tail(0, got, sizeof got),
                      fx_h2() ? "\"GET /id HTTP/2.0\" 200 0 \"-\" \"-\""
                              : "\"GET /id HTTP/1.1\" 200 0 \"-\" \"-\"");
}

/* JSON lines end with "request_id"; another field name (any case on the
 * wire) is read and echoed under its own name. */
static void test_json_and_name(void **state) {
  fx_t *fx = *state;
  rc_response_t r;
  char got[1024];
  const char *tail;
  fx->opts.request_id_field = "Trace-Id";
  start_as(fx, 1, HR_ACCESS_JSON);
  ask(fx, "GET /id HTTP/1.1\r\nHost: a\r\ntrace-id: t\\\"1\r\nX-Request-Id: other\r\n\r\n",
      "HTTP/1.1 200 OK", &r);
  assert_string_equal(r.body, "t\\\"1");
  expect_field(&r, "Trace-Id", "t\\\"1", 0);
  expect_no_field(&r, "X-Request-Id");
  rc_response_free(&r);
  wait_lines(1);
  pthread_mutex_lock(&logs.mu);
  snprintf(got, sizeof got, "%s", logs.lines[0]);
  pthread_mutex_unlock(&logs.mu);
  tail = strstr(got, ",\"user_agent\"");
  assert_non_null(tail);
  assert_string_equal(tail, ",\"user_agent\":\"\",\"request_id\":\"t\\\\\\\"1\"}");
}

/* A name that is no token, one the server writes, one too long: refused. */
static void test_bad_names(void **state) {
  fx_t *fx = *state;
  static const char *const bad[] = {
      "", "X Request", "X-Request-Id:", "Content-Length", "connection",
      "a234567890123456789012345678901234567890123456789012345678901234x", /* 65 */
  };
  hr_server_options_t o;
  hr_server_t *s = NULL;
  size_t i;
  char name[65];
  hr_server_options_init(&o);
  assert_string_equal(o.request_id_field, "X-Request-Id");
  assert_int_equal(o.request_id_echo, 0);
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o.request_id_field = bad[i];
    assert_int_equal(hr_server_new(&s, fx->router, &o), HR_EINVAL);
    assert_null(s);
  }
  /* 64 bytes, copied: the caller's string may go */
  memset(name, 'n', 64);
  name[64] = '\0';
  o.request_id_field = name;
  assert_int_equal(hr_server_new(&s, fx->router, &o), 0);
  name[0] = '\0';
  assert_int_equal(strlen(s->opts.request_id_field), 64);
  hr_server_free(s);
}

/* ---- uniqueness ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

#define UNIQUE_N 64

/* Two worker threads, UNIQUE_N connections of one request each: every id
 * is generated (none sent), of one prefix, names worker 0 or 1, and no
 * two are the same. */
static void test_unique_two_workers(void **state) {
  fx_t *fx = *state;
  char *ids[UNIQUE_N], prefix[17] = "";
  size_t i;
  start(fx, 2);
  for (i = 0; i < UNIQUE_N; i++) {
    rc_response_t r;
    char p[17];
    unsigned w;
    unsigned long long n;
    ask(fx, "GET /id HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 200 OK", &r);
    if (!generated_shape(r.body, p, &w, &n)) fail_msg("not a generated id: \"%s\"", r.body);
    assert_true(w == 0 || w == 1);
    if (i > 0) assert_string_equal(p, prefix);
    memcpy(prefix, p, sizeof p);
    ids[i] = strdup(r.body);
    rc_response_free(&r);
  }
  qsort(ids, UNIQUE_N, sizeof ids[0], cmp_str);
  for (i = 1; i < UNIQUE_N; i++)
    if (strcmp(ids[i - 1], ids[i]) == 0) fail_msg("id %s twice", ids[i]);
  for (i = 0; i < UNIQUE_N; i++) free(ids[i]);
}

/* Without sockets: two workers of one server make 1000 ids each, a
 * second server (a restart) 1000 more on its worker 0; all 3000 differ,
 * and each is "<the server's prefix>-<worker>-<n>" exactly. */
static void test_unique_generation(void **state) {
  enum { N = 1000 };
  static hr_server_t srv[2];
  static hr__worker_t w[3];
  hr__exchange_t *ex = calloc(1, sizeof(*ex));
  char **ids = calloc(3 * N, sizeof(char *));
  size_t i, k;
  (void)state;
  assert_non_null(ex);
  assert_non_null(ids);
  for (k = 0; k < 2; k++) {
    assert_int_equal(hr__request_id_setup(&srv[k], "X-Request-Id"), 0);
    srv[k].opts.request_id_echo = 1;
    hr__request_id_draw(&srv[k]);
  }
  assert_memory_not_equal(srv[0].rid_prefix, srv[1].rid_prefix, HR__RID_PREFIX_LEN);
  w[0].server = &srv[0], w[0].index = 0;
  w[1].server = &srv[0], w[1].index = 1;
  w[2].server = &srv[1], w[2].index = 0;
  for (k = 0; k < 3; k++) {
    for (i = 0; i < N; i++) {
      char want[64];
      hr_span_t id;
      memset(ex, 0, sizeof(*ex));
      ex->w = &w[k];
      ex->fields_whole = 1; /* and no field: generated */
      id = hr__request_id(ex);
      snprintf(want, sizeof want, "%.16s-%u-%zu", w[k].server->rid_prefix,
               (unsigned)w[k].index, i + 1);
      assert_int_equal(id.len, strlen(want));
      assert_memory_equal(id.ptr, want, id.len);
      ids[k * N + i] = strndup(id.ptr, id.len);
    }
  }
  qsort(ids, 3 * N, sizeof ids[0], cmp_str);
  for (i = 1; i < 3 * N; i++)
    if (strcmp(ids[i - 1], ids[i]) == 0) fail_msg("id %s twice", ids[i]);
  for (i = 0; i < 3 * N; i++) free(ids[i]);
  free(ids);
  free(ex);
}

/* The echo is off by default (nginx's and Envoy's): the tests of what it
 * sends turn it on. */
static int setup_echo(void **state) {
  int rc = fx_setup(state);
  if (rc == 0) ((fx_t *)*state)->opts.request_id_echo = 1;
  return rc;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_adopted, setup_echo, fx_teardown),
      cmocka_unit_test_setup_teardown(test_refused, setup_echo, fx_teardown),
      cmocka_unit_test_setup_teardown(test_server_answers, setup_echo, fx_teardown),
      cmocka_unit_test_setup_teardown(test_h1_errors, setup_echo, fx_teardown),
      cmocka_unit_test_setup_teardown(test_own_field, setup_echo, fx_teardown),
      cmocka_unit_test_setup_teardown(test_echo_off, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_ids_off, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_json_and_name, setup_echo, fx_teardown),
      cmocka_unit_test_setup_teardown(test_bad_names, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_unique_two_workers, setup_echo, fx_teardown),
      cmocka_unit_test(test_unique_generation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
