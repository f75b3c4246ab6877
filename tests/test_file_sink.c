/* SPDX-License-Identifier: MIT */
/*
 * The file sink (include/hroute/filesink.h) behind a streaming route: a
 * large body arrives byte-exact in a file; a slow "disk" (a pipe the test
 * drains when it chooses) makes the server stop taking the body while the
 * sink's queue stays under its high-water mark plus one piece; a full
 * disk (/dev/full) and a file size limit (RLIMIT_FSIZE) give the handler
 * the error and the client 507, never a 2xx, and leave no partial file;
 * a client that goes away while a write is blocked on the pool leaves
 * nothing behind (the sink frees itself when the write ends, never
 * touching the request).  Over HTTP/1.1 and, as <name>_h2, HTTP/2.
 *
 * ctest-labels: tsan
 * ctest-protocols: h1 h2
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hroute/filesink.h>

#include "fixture.h"

/* ---- a handler that saves its body through a sink ------------------------ */

/* What the handler does: set before the server starts (its thread's
 * creation publishes it), never changed while it runs. */
static struct {
  int fd;             /* >= 0: hr_file_sink_open_fd on it; else `path` */
  char path[512];
  size_t high;        /* the sink's high-water mark (0: the default) */
  int close_fd;       /* close `fd` in the sink's callback */
  int reader;         /* the pipe's read end while the test holds it, else -1 */
  int abort_at_end;   /* at the body's end: finish, abort at once, answer 200 */
} cfg;

static ca_t sink_mem; /* the sinks' allocator */

/* What it saw, for the test thread. */
static atomic_size_t got_bytes, max_piece, max_queued;
static atomic_int paused_seen, saved_calls, saved_status, write_err, aborted_seen;
static atomic_ullong saved_bytes;
static hr_response_t *_Atomic steered;

typedef struct job_s {
  hr_file_sink_t *sink; /* NULL once it called back or was aborted */
  hr_response_t *res;
} job_t;

static void reset(void) {
  memset(&cfg, 0, sizeof cfg);
  cfg.fd = -1;
  cfg.reader = -1;
  atomic_store(&got_bytes, 0);
  atomic_store(&max_piece, 0);
  atomic_store(&max_queued, 0);
  atomic_store(&paused_seen, 0);
  atomic_store(&saved_calls, 0);
  atomic_store(&saved_status, 1);
  atomic_store(&write_err, 0);
  atomic_store(&aborted_seen, 0);
  atomic_store(&saved_bytes, 0);
  atomic_store(&steered, NULL);
}

static void store_max(atomic_size_t *m, size_t v) {
  size_t old = atomic_load(m);
  while (v > old && !atomic_compare_exchange_weak(m, &old, v)) {
  }
}

static void on_saved(hr_file_sink_t *sink, int status, uint64_t bytes, void *udata) {
  job_t *job = udata;
  char text[32];
  int n;
  (void)sink;
  job->sink = NULL;
  atomic_store(&saved_status, status);
  atomic_store(&saved_bytes, bytes);
  atomic_fetch_add(&saved_calls, 1);
  if (cfg.close_fd) close(cfg.fd);
  n = snprintf(text, sizeof text, "%llu", (unsigned long long)bytes);
  hr_response_send(job->res, hr_file_sink_http_status(status), text, (size_t)n);
}

static void on_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  job_t *job = udata;
  size_t high = cfg.high ? cfg.high : HR_FILE_SINK_HIGH_WATER;
  int rc;
  (void)req;
  if (status < 0) { /* the client went away: let go, then complete */
    hr_file_sink_abort(job->sink);
    job->sink = NULL;
    atomic_store(&aborted_seen, 1);
    hr_response_send(job->res, 500, NULL, 0);
    return;
  }
  if (status == 1) {
    if (job->sink != NULL) hr_file_sink_finish(job->sink);
    if (cfg.abort_at_end) {
      hr_file_sink_abort(job->sink); /* its result is on the way */
      job->sink = NULL;
      hr_response_send(job->res, 200, "aborted", 7);
    }
    return;
  }
  atomic_fetch_add(&got_bytes, chunk.len);
  store_max(&max_piece, chunk.len);
  if (job->sink == NULL) return;
  rc = hr_file_sink_write(job->sink, chunk);
  if (rc != 0) {
    /* The sink failed: its callback answers; nothing more is written. */
    atomic_store(&write_err, rc);
    return;
  }
  store_max(&max_queued, hr_file_sink_queued(job->sink));
  if (hr_file_sink_queued(job->sink) > high) atomic_store(&paused_seen, 1);
}

static void h_save(hr_request_t *req, hr_response_t *res, void *udata) {
  job_t *job = hr_request_alloc(req, sizeof *job);
  hr_file_sink_options_t o;
  int rc;
  (void)udata;
  if (job == NULL) {
    hr_response_send(res, 503, NULL, 0);
    return;
  }
  job->res = res;
  atomic_store(&steered, res);
  hr_file_sink_options_init(&o);
  o.high_water_bytes = cfg.high;
  o.low_water_bytes = cfg.high / 4;
  o.allocator = &sink_mem.hook;
  rc = cfg.fd >= 0 ? hr_file_sink_open_fd(&job->sink, req, cfg.fd, &o, on_saved, job)
                   : hr_file_sink_open(&job->sink, req, cfg.path, &o, on_saved, job);
  if (rc != 0) {
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  if (hr_request_read_body(req, on_body, job) != 0) {
    hr_file_sink_abort(job->sink);
    hr_response_send(res, 500, NULL, 0);
  }
}

static void route_save(fx_t *fx, uint64_t limit) {
  hr_route_options_t ro;
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = limit;
  fx_route_opts(fx, "POST", "/save", h_save, NULL, &ro);
}

/* ---- helpers ------------------------------------------------------------------ */

/* Byte i of every body: not periodic in any block or piece size. */
static unsigned char pattern(size_t i) { return (unsigned char)((i * 7) ^ (i >> 9) ^ (i >> 17)); }

static char *make_body(size_t n) {
  char *b = malloc(n);
  size_t i;
  assert_non_null(b);
  for (i = 0; i < n; i++) b[i] = (char)pattern(i);
  return b;
}

static void send_head(rc_t *c, size_t len) {
  char head[128];
  snprintf(head, sizeof head, "POST /save HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n",
           len);
  assert_int_equal(rc_send_str(c, head), 0);
}

typedef struct sender_s {
  rc_t *c;
  const char *p;
  size_t n;
  int rc;
} sender_t;

static void *send_all(void *arg) {
  sender_t *s = arg;
  s->rc = rc_send(s->c, s->p, s->n);
  return NULL;
}


/* Reads the pipe until `want` bytes came (checked against the pattern) or,
 * with want 0, until EOF; returns the count. */
static size_t drain(int fd, size_t want) {
  static char buf[65536];
  size_t got = 0, i;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t n;
    if (want != 0 && got >= want) break;
    assert_true(poll(&p, 1, RC_TIMEOUT_MS) == 1);
    n = read(fd, buf, sizeof buf);
    assert_true(n >= 0);
    if (n == 0) break;
    for (i = 0; i < (size_t)n; i++)
      if ((unsigned char)buf[i] != pattern(got + i)) fail_msg("byte %zu differs", got + i);
    got += (size_t)n;
  }
  return got;
}

static char tmpdir[64];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hr_sink_XXXXXX");
  assert_non_null(mkdtemp(tmpdir));
}

static int setup(void **state) {
  reset();
  ca_init(&sink_mem);
  tmpdir[0] = '\0';
  return fx_setup(state);
}

static int teardown(void **state) {
  struct rlimit rl;
  int rc;
  /* After a failed assertion a write may still block on the pipe: its
   * reader's end goes first, so the write fails (EPIPE) and the server's
   * loop can end. */
  if (cfg.reader >= 0) close(cfg.reader);
  rc = fx_teardown(state);
  /* After a failed assertion too: the next test writes files. */
  getrlimit(RLIMIT_FSIZE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_FSIZE, &rl);
  if (cfg.path[0] != '\0') unlink(cfg.path);
  if (tmpdir[0] != '\0') rmdir(tmpdir);
  ca_destroy(&sink_mem);
  return rc;
}

/* ---- (a) a large body, byte-exact ---------------------------------------------- */

/* 8 MiB through a 64 KiB high-water mark (the body pauses and resumes
 * many times): the file holds exactly the body, the answer says so. */
static void test_large_body_arrives_byte_exact(void **state) {
  fx_t *fx = *state;
  const size_t len = 8u << 20;
  char *body = make_body(len), want[32];
  struct stat st;
  sender_t s;
  pthread_t th;
  rc_t *c;
  int fd;
  make_tmpdir();
  snprintf(cfg.path, sizeof cfg.path, "%s/big.bin", tmpdir);
  cfg.high = 65536;
  route_save(fx, 16u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_head(c, len);
  s.c = c, s.p = body, s.n = len, s.rc = -1;
  assert_int_equal(pthread_create(&th, NULL, send_all, &s), 0);
  pthread_join(th, NULL);
  assert_int_equal(s.rc, 0);
  snprintf(want, sizeof want, "%zu", len);
  expect_response(c, "HTTP/1.1 201 Created", want, NULL);
  assert_int_equal(atomic_load(&saved_status), 0);
  assert_int_equal(atomic_load(&saved_bytes), len);
  assert_int_equal(stat(cfg.path, &st), 0);
  assert_int_equal(st.st_size, len);
  fd = open(cfg.path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  assert_int_equal(drain(fd, 0), len);
  close(fd);
  /* The queue stayed under the mark plus a piece; the sink is gone. */
  assert_true(atomic_load(&max_queued) <= 65536 + atomic_load(&max_piece));
  assert_int_equal(ca_live(&sink_mem), 0);
  free(body);
}

/* ---- (b) a slow disk pauses the body -------------------------------------------- */

typedef struct reader_s {
  int fd;
  size_t got;
  int bad; /* a byte differed from the pattern, or a read failed */
} reader_t;

/* Reads the pipe to its end, checking every byte: the slow disk's drain,
 * on a thread while the test thread runs the client. */
static void *read_all(void *arg) {
  static char buf[65536];
  reader_t *r = arg;
  size_t i;
  for (;;) {
    struct pollfd p = {r->fd, POLLIN, 0};
    ssize_t n;
    if (poll(&p, 1, RC_TIMEOUT_MS) != 1 || (n = read(r->fd, buf, sizeof buf)) < 0) {
      r->bad = 1;
      return NULL;
    }
    if (n == 0) return NULL;
    for (i = 0; i < (size_t)n; i++)
      if ((unsigned char)buf[i] != pattern(r->got + i)) r->bad = 1;
    r->got += (size_t)n;
  }
}

/* The "disk" is a pipe of one page that nobody reads yet: the pool's
 * write blocks, the queue fills past the mark (16 KiB: under HTTP/2's
 * first stream window) and the body is paused, so the server stops
 * taking it (a few loop turns later it has taken no more).  Drained, the
 * pipe gets the whole body in order and the answer is 201.  The queue
 * never passed the mark by more than one piece, and the sink's memory
 * stayed within the mark, a piece and its two partly filled blocks. */
static void test_slow_disk_pauses_the_body(void **state) {
  fx_t *fx = *state;
  const size_t len = 2u << 20, high = 16384;
  char *body = make_body(len), want[32];
  hr_server_stats_t st;
  size_t at_pause;
  sender_t s;
  reader_t r;
  pthread_t th, rd;
  int fds[2];
  rc_t *c;
  assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
  (void)fcntl(fds[1], F_SETPIPE_SZ, 4096);
  cfg.fd = fds[1];
  cfg.reader = fds[0];
  cfg.close_fd = 1; /* the reader sees EOF after the last byte */
  cfg.high = high;
  route_save(fx, 4u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_head(c, len);
  s.c = c, s.p = body, s.n = len, s.rc = -1;
  assert_int_equal(pthread_create(&th, NULL, send_all, &s), 0);
  if (!fx_flag_set(&paused_seen))
    fail_msg("not paused: %zu bytes in, queue at most %zu", atomic_load(&got_bytes),
             atomic_load(&max_queued));
  at_pause = atomic_load(&got_bytes);
  fx_on_loop(atomic_load(&steered), NULL);
  fx_on_loop(atomic_load(&steered), NULL);
  fx_on_loop(atomic_load(&steered), NULL);
  assert_int_equal(atomic_load(&got_bytes), at_pause);
  fx_stats(fx, &st);
  assert_true(st.bytes_received < len / 4);
  r.fd = fds[0], r.got = 0, r.bad = 0;
  assert_int_equal(pthread_create(&rd, NULL, read_all, &r), 0);
  pthread_join(th, NULL);
  assert_int_equal(s.rc, 0);
  snprintf(want, sizeof want, "%zu", len);
  expect_response(c, "HTTP/1.1 201 Created", want, NULL);
  pthread_join(rd, NULL);
  close(fds[0]);
  cfg.reader = -1;
  assert_int_equal(r.bad, 0);
  assert_int_equal(r.got, len);
  assert_true(atomic_load(&max_queued) <= high + atomic_load(&max_piece));
  assert_true(ca_peak(&sink_mem) <= high + atomic_load(&max_piece) + 2 * 16384 + 4096);
  assert_int_equal(ca_live(&sink_mem), 0);
  free(body);
}

/* ---- (c) a disk that fails ---------------------------------------------------------- */

/* Sends a body the server will refuse partway: from a thread (the server
 * may stop reading it), joined before the response is read. */
static void send_refused(rc_t *c, const char *body, size_t len) {
  sender_t s;
  pthread_t th;
  send_head(c, len);
  s.c = c, s.p = body, s.n = len, s.rc = -1;
  assert_int_equal(pthread_create(&th, NULL, send_all, &s), 0);
  pthread_join(th, NULL);
}

/* /dev/full: every write fails with ENOSPC.  The handler hears it (the
 * callback's status, the refused writes) and the client gets 507. */
static void test_disk_full_is_507(void **state) {
  fx_t *fx = *state;
  const size_t len = 512 * 1024;
  char *body = make_body(len);
  rc_t *c;
  cfg.fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (cfg.fd < 0) skip();
  cfg.close_fd = 1;
  route_save(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_refused(c, body, len);
  expect_response(c, "HTTP/1.1 507 Insufficient Storage", "0", NULL);
  assert_int_equal(atomic_load(&saved_calls), 1);
  assert_int_equal(atomic_load(&saved_status), UV_ENOSPC);
  assert_int_equal(atomic_load(&saved_bytes), 0);
  assert_int_equal(ca_live(&sink_mem), 0);
  free(body);
}

/* A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) a little over 1 MiB:
 * the write that reaches it is short, the next fails with EFBIG.  507,
 * never 2xx; the callback came after the partial file was removed. */
static void test_file_size_limit_is_507(void **state) {
  fx_t *fx = *state;
  const size_t len = 2u << 20, limit = (1u << 20) + 1000;
  char *body = make_body(len);
  struct rlimit rl;
  struct stat st;
  rc_t *c;
  make_tmpdir();
  snprintf(cfg.path, sizeof cfg.path, "%s/limited.bin", tmpdir);
  cfg.high = 65536;
  signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
  rl.rlim_cur = limit;
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
  route_save(fx, 4u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_refused(c, body, len);
  expect_response(c, "HTTP/1.1 507 Insufficient Storage", NULL, NULL);
  assert_int_equal(atomic_load(&saved_calls), 1);
  assert_int_equal(atomic_load(&saved_status), UV_EFBIG);
  assert_int_equal(atomic_load(&saved_bytes), limit);
  assert_int_equal(stat(cfg.path, &st), -1);
  assert_int_equal(errno, ENOENT);
  assert_int_equal(ca_live(&sink_mem), 0);
  free(body);
}

/* ---- (d) the client goes away with a write in flight ------------------------------ */

/* The pool's write is blocked on a full pipe when the client goes: the
 * handler aborts the sink and completes the response at once.  The write
 * ends only when the test drains the pipe; the sink then frees itself
 * (its memory comes back) without calling back or touching the request,
 * which is long gone (ASan would see it).  The client sends less than the
 * high-water mark, so the body is never paused and the server sees it go
 * (a paused HTTP/1.1 body is not read, so its end would wait for the
 * resume). */
static void test_client_gone_with_write_in_flight(void **state) {
  fx_t *fx = *state;
  const size_t len = 1u << 20, part = 40000;
  char *body = make_body(len);
  int fds[2], i;
  rc_t *c;
  assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
  (void)fcntl(fds[1], F_SETPIPE_SZ, 4096);
  cfg.fd = fds[1];
  cfg.reader = fds[0];
  cfg.high = 65536;
  route_save(fx, 4u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_head(c, len);
  assert_int_equal(rc_send(c, body, part), 0);
  for (i = 0; i < RC_TIMEOUT_MS && atomic_load(&got_bytes) < part; i++) usleep(1000);
  assert_int_equal(atomic_load(&got_bytes), part);
  assert_int_equal(atomic_load(&paused_seen), 0);
  fx_drop(fx, c);
  assert_true(fx_flag_set(&aborted_seen));
  expect_stat(fx, FX_EXCHANGES, 0);
  assert_true(ca_live(&sink_mem) > 0); /* the blocked write still holds it */
  /* Drain until the sink is gone: what it had taken, at most. */
  for (i = 0; i < RC_TIMEOUT_MS && ca_live(&sink_mem) > 0; i++) {
    char buf[65536];
    struct pollfd p = {fds[0], POLLIN, 0};
    if (poll(&p, 1, 1) == 1) assert_true(read(fds[0], buf, sizeof buf) > 0);
  }
  assert_int_equal(ca_live(&sink_mem), 0);
  assert_int_equal(atomic_load(&saved_calls), 0);
  close(fds[0]);
  cfg.reader = -1;
  close(fds[1]);
  free(body);
}

/* The same with a file the sink opened: after the abort it is closed
 * and removed, nothing is left in the directory. */
static void test_client_gone_removes_the_file(void **state) {
  fx_t *fx = *state;
  const size_t len = 4u << 20, part = 1u << 20;
  char *body = make_body(len);
  struct stat st;
  rc_t *c;
  int i;
  make_tmpdir();
  snprintf(cfg.path, sizeof cfg.path, "%s/partial.bin", tmpdir);
  route_save(fx, 8u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_head(c, len);
  assert_int_equal(rc_send(c, body, part), 0);
  for (i = 0; i < RC_TIMEOUT_MS && atomic_load(&got_bytes) == 0; i++) usleep(1000);
  assert_true(atomic_load(&got_bytes) > 0);
  fx_drop(fx, c);
  assert_true(fx_flag_set(&aborted_seen));
  for (i = 0; i < RC_TIMEOUT_MS && ca_live(&sink_mem) > 0; i++) usleep(1000);
  assert_int_equal(ca_live(&sink_mem), 0);
  assert_int_equal(stat(cfg.path, &st), -1);
  assert_int_equal(atomic_load(&saved_calls), 0);
  free(body);
}

/* Aborted right after its finish, with its result on the way (a
 * descriptor sink with nothing to write, an empty body, has queued its
 * callback at the finish): the callback never runs, the memory comes
 * back. */
static void test_abort_after_finish(void **state) {
  fx_t *fx = *state;
  rc_t *c;
  int i;
  cfg.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  assert_true(cfg.fd >= 0);
  cfg.abort_at_end = 1;
  route_save(fx, 1u << 20);
  fx_start(fx, 1);
  c = fx_connect(fx);
  send_head(c, 0);
  expect_response(c, "HTTP/1.1 200 OK", "aborted", NULL);
  for (i = 0; i < RC_TIMEOUT_MS && ca_live(&sink_mem) > 0; i++) usleep(1000);
  assert_int_equal(ca_live(&sink_mem), 0);
  assert_int_equal(atomic_load(&saved_calls), 0);
  close(cfg.fd);
}

/* ---- out of memory ------------------------------------------------------------ */

/* One upload of `len` bytes to cfg.path on a new connection: returns the
 * status; a 201 must carry the whole size and the file the whole body. */
static int upload_once(fx_t *fx, const char *body, size_t len) {
  rc_response_t r;
  char want[32];
  struct stat st;
  sender_t s;
  pthread_t th;
  int status, i;
  rc_t *c = fx_connect(fx);
  send_head(c, len);
  s.c = c, s.p = body, s.n = len, s.rc = -1;
  assert_int_equal(pthread_create(&th, NULL, send_all, &s), 0);
  pthread_join(th, NULL);
  assert_int_equal(rc_read_response(c, &r, 0), RC_OK);
  status = r.status;
  if (status == 201) {
    snprintf(want, sizeof want, "%zu", len);
    assert_string_equal(r.body, want);
    assert_int_equal(stat(cfg.path, &st), 0);
    assert_int_equal(st.st_size, len);
  } else if (status != 500 && status != 503) {
    fail_msg("status %d", status);
  }
  rc_response_free(&r);
  fx_drop(fx, c);
  /* The sink frees itself just after its callback answered. */
  for (i = 0; i < RC_TIMEOUT_MS && ca_live(&sink_mem) > 0; i++) usleep(1000);
  assert_int_equal(ca_live(&sink_mem), 0);
  unlink(cfg.path);
  return status;
}

/* Each allocation the sink makes (its record, the path, every block)
 * fails in turn: the upload is refused, 500 (the open failed) or 503 (a
 * write could not be queued), or saved whole with 201 -- never a 2xx for
 * less -- and every byte the sink took comes back. */
static void test_out_of_memory_sweep(void **state) {
  fx_t *fx = *state;
  const size_t len = 200000;
  char *body = make_body(len);
  uint64_t n, clean, base;
  int refused = 0;
  make_tmpdir();
  snprintf(cfg.path, sizeof cfg.path, "%s/oom.bin", tmpdir);
  cfg.high = 32768;
  route_save(fx, 1u << 20);
  fx_start(fx, 1);
  base = ca_calls(&sink_mem);
  assert_int_equal(upload_once(fx, body, len), 201);
  clean = ca_calls(&sink_mem) - base;
  assert_true(clean >= 3); /* the record, the path, a block at least */
  for (n = 1; n <= clean; n++) {
    ca_fail_at(&sink_mem, ca_calls(&sink_mem) + n, 0);
    if (upload_once(fx, body, len) != 201) refused++;
  }
  ca_fail_at(&sink_mem, 0, 0);
  assert_true(refused >= 3);
  free(body);
}

#define CASE(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      CASE(test_large_body_arrives_byte_exact),
      CASE(test_slow_disk_pauses_the_body),
      CASE(test_disk_full_is_507),
      CASE(test_file_size_limit_is_507),
      CASE(test_client_gone_with_write_in_flight),
      CASE(test_client_gone_removes_the_file),
      CASE(test_abort_after_finish),
      CASE(test_out_of_memory_sweep),
  };
  signal(SIGPIPE, SIG_IGN); /* a pipe closed under a write: EPIPE */
  return cmocka_run_group_tests(tests, NULL, NULL);
}
