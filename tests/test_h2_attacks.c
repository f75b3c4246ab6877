/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 attacks of recent years, each a deterministic test whose bound is
 * asserted on counts -- handler calls, frames, the stream the GOAWAY
 * names, the server's peak memory through the counting allocator -- never
 * on time: Rapid Reset (CVE-2023-44487), the CONTINUATION flood (2024),
 * an HPACK bomb, SETTINGS and PING floods from a client that does not
 * read, a zero window and a slow reader, too many concurrent streams and
 * the end of the stream identifiers, a PRIORITY flood, and MadeYouReset
 * (2025: frames that make the server reset streams itself).  The frames
 * are built by hand (h2raw.h, h2frames.h) and sent over h2c; the
 * transport changes nothing here, and test_h2 covers TLS.
 *
 * ctest-labels: tsan
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2fx.h"

/* ---- what every test shares --------------------------------------------- */

/* The server's allocator: counts bytes in use and their peak. */
static ca_t ca;

/* Starts the h2c server with the counting allocator and the routes the
 * attacks aim at: GET /count (counted, "ok"), POST /upload (a buffered
 * body, counted when it runs), GET /park (the response parked, see
 * below), GET /stream (10 MiB written as fast as the high-water mark lets
 * it). */
static void start(fx_t *fx);
/* After the client's first exchange: the bytes the server holds now, and
 * the peak reset to them. */
static size_t baseline(void);
static void warm_up(h2r_t *r);
/* Asserts the server's peak since baseline() grew by less than `limit`. */
static void expect_peak_below(size_t base, size_t limit, const char *what);

/* Responses parked by /park, completed by the test with park_release. */
#define PARK_MAX 64
static hr_response_t *parked[PARK_MAX];
static atomic_int nparked;

static void on_park_abort(hr_response_t *res, void *udata) {
  (void)udata;
  hr_response_send(res, 500, NULL, 0); /* completes it: the client is gone */
}

static void h_park(hr_request_t *req, hr_response_t *res, void *udata) {
  int i = atomic_load(&nparked);
  (void)req;
  (void)udata;
  ta_count();
  if (i >= PARK_MAX) {
    hr_response_send(res, 503, NULL, 0);
    return;
  }
  hr_response_on_abort(res, on_park_abort, NULL);
  parked[i] = res;
  atomic_store(&nparked, i + 1); /* release: parked[i] is written first */
}

static void post_done(hr_response_t *res, void *udata) {
  (void)udata;
  hr_response_send(res, 200, "done", 4);
}

/* Completes every parked response with 200 "done". */
static void park_release(void) {
  int i, n = atomic_load(&nparked); /* acquire: pairs with h_park's store */
  for (i = 0; i < n; i++) assert_int_equal(hr_response_post(parked[i], post_done, NULL), 0);
  atomic_store(&nparked, 0);
}

/* 10 MiB in 16 KiB writes, each after the drain callback when the queue
 * is over the high-water mark. */
typedef struct pump_s {
  size_t left;
} pump_t;

static char chunk[16384];

static void pump(hr_response_t *res, int status, void *udata) {
  pump_t *p = udata;
  if (status != 0) {
    hr_response_end(res);
    free(p);
    return;
  }
  while (p->left > 0) {
    int rc = hr_response_write(res, chunk, sizeof chunk);
    if (rc == HR_EAGAIN) return; /* pump runs again from the drain callback */
    if (rc != 0) break;
    p->left -= sizeof chunk;
  }
  hr_response_end(res);
  free(p);
}

static void h_stream(hr_request_t *req, hr_response_t *res, void *udata) {
  pump_t *p = malloc(sizeof *p);
  (void)req;
  (void)udata;
  ta_count();
  if (p == NULL || hr_response_start(res, 200, HR_LENGTH_UNKNOWN) != 0 ||
      hr_response_on_drain(res, pump, p) != 0) {
    free(p);
    hr_response_send(res, 500, NULL, 0);
    return;
  }
  p->left = 10u << 20;
  pump(res, 0, p);
}

static void start(fx_t *fx) {
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  atomic_store(&nparked, 0);
  fx_route(fx, "GET", "/count", ta_text, "ok");
  fx_route(fx, "POST", "/upload", ta_echo, NULL);
  fx_route(fx, "GET", "/park", h_park, NULL);
  fx_route(fx, "GET", "/stream", h_stream, NULL);
  h2fx_start(fx, 1);
}

static int teardown(void **state) {
  int rc = h2fx_teardown(state);
  ca_destroy(&ca);
  return rc;
}

static h2_stream_t *wait_stream(h2r_t *r, int32_t id);

/* One GET /count on r, answered 200: the connection is set up, SETTINGS
 * exchanged both ways. */
static void warm_up(h2r_t *r) {
  int32_t id = h2r_request(r, "GET", "/count", 1, NULL, 0);
  h2_stream_t *st;
  assert_int_equal(h2r_flush(r), 0);
  st = wait_stream(r, id);
  assert_int_equal(st->status, 200);
  assert_int_equal(r->io.seen.settings_acks, 1);
}

/* The prologue of most attacks: the server started, a hand-driven
 * connection warmed up, the handler count reset, the memory baseline taken
 * (into *base). */
static h2r_t *open_attack(fx_t *fx, size_t *base) {
  h2r_t *r;
  start(fx);
  r = h2fx_raw(fx);
  warm_up(r);
  ta_reset();
  *base = baseline();
  return r;
}

static size_t baseline(void) {
  ca_reset_peak(&ca);
  return ca_bytes(&ca);
}

static void expect_peak_below(size_t base, size_t limit, const char *what) {
  size_t peak = ca_peak(&ca);
  if (peak > base + limit)
    fail_msg("%s: the server's memory peaked %zu bytes above the baseline, limit %zu",
             what, peak - base, limit);
}

/* Asserts the connection ended with GOAWAY(`error`). */
static void expect_goaway_close(h2r_t *r, uint32_t error) {
  assert_int_equal(h2r_wait_closed(r), 1);
  if (!r->io.seen.goaway)
    fail_msg("closed without GOAWAY (errno %d, %zu bytes in)", r->io.seen.err,
             r->io.seen.bytes_in);
  if (r->io.seen.goaway_error != error)
    fail_msg("GOAWAY error %u (%s), want %u", r->io.seen.goaway_error,
             r->io.seen.goaway_debug, error);
}

/* Runs r until stream `id` closes; fails saying what the connection did
 * when it does not. */
static h2_stream_t *wait_stream(h2r_t *r, int32_t id) {
  if (!h2r_wait_stream(r, id))
    fail_msg("stream %d did not close: connection %s, GOAWAY %d (error %u, \"%s\", last "
             "stream %d)",
             id, r->io.seen.closed ? "closed" : "open", r->io.seen.goaway,
             r->io.seen.goaway_error, r->io.seen.goaway_debug, r->io.seen.goaway_last_id);
  return h2_seen_stream(&r->io.seen, id);
}

/* What the server has reset: n streams, or the connection (GOAWAY). */
struct resets_s {
  const h2r_t *r;
  unsigned long n;
};

static int resets_reach(void *arg) {
  const struct resets_s *w = arg;
  return w->r->io.seen.rst_streams >= w->n || w->r->io.seen.goaway;
}

/* Queues one pair of a reset attack: a request and what resets it. */
typedef void (*pair_fn)(h2r_t *r);

/* Sends up to `max` pairs in batches of `batch` until the server's GOAWAY
 * or close; with `await_resets`, each batch once the server's resets for
 * the one before came back.  Returns the pairs sent. */
static unsigned long reset_pairs(h2r_t *r, pair_fn pair, int batch, unsigned long max,
                                 int await_resets) {
  unsigned long pairs = 0;
  while (pairs < max && !r->io.seen.goaway && !r->io.seen.closed) {
    int i;
    for (i = 0; i < batch; i++, pairs++) pair(r);
    if (h2r_flush(r) != 0) break;
    if (await_resets) h2_loop_run(&r->io, resets_reach, &(struct resets_s){r, pairs});
  }
  return pairs;
}

/* ---- Rapid Reset --------------------------------------------------------- */

/* HEADERS + RST_STREAM pairs, 100,000 of them in batches of 500: fewer than
 * 500 reach a handler, the GOAWAY(ENHANCE_YOUR_CALM) names a stream below
 * 1000, and the connection ends long before the last pair. */
static void get_and_cancel(h2r_t *r) {
  h2f_rst_stream(h2r_out(r), h2r_request(r, "GET", "/count", 1, NULL, 0), NGHTTP2_CANCEL);
}

static void test_rapid_reset(void **state) {
  fx_t *fx = *state;
  size_t base;
  h2r_t *r = open_attack(fx, &base);
  unsigned long pairs = reset_pairs(r, get_and_cancel, 500, 100000, 0);
  expect_goaway_close(r, NGHTTP2_ENHANCE_YOUR_CALM);
  if (ta_calls() >= 500) fail_msg("%lu handlers ran for %lu reset streams", ta_calls(), pairs);
  if (r->io.seen.goaway_last_id >= 1000) fail_msg("GOAWAY names stream %d", r->io.seen.goaway_last_id);
  assert_true(pairs < 100000);
  expect_peak_below(base, 512 * 1024, "rapid reset");
}

/* ---- CONTINUATION flood --------------------------------------------------- */

/* HEADERS without END_HEADERS, then CONTINUATION frames of new 1000-byte
 * fields without end (up to 20 MB): the connection ends with GOAWAY, the
 * server's memory stays bounded, no handler runs. */
static void test_continuation_flood(void **state) {
  fx_t *fx = *state;
  h2r_t *r;
  h2_bytes_t blk = {0};
  char value[1001];
  unsigned long frames = 0;
  size_t base;
  r = open_attack(fx, &base);
  memset(value, 'v', sizeof value - 1);
  value[sizeof value - 1] = '\0';
  h2f_encode_request(r->enc, &blk, "GET", "http", "/count", r->authority, NULL, 0);
  h2f_frame(h2r_out(r), NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, r->next_stream, blk.p, blk.len);
  while (frames < 20000 && !r->io.seen.closed && !r->io.seen.goaway) {
    char name[32];
    h2f_field_t f;
    snprintf(name, sizeof name, "x-flood-%lu", frames);
    f.name = name;
    f.value = value;
    blk.off = blk.len = 0;
    h2f_encode(r->enc, &blk, &f, 1);
    h2f_frame(h2r_out(r), NGHTTP2_CONTINUATION, 0, r->next_stream, blk.p, blk.len);
    if (++frames % 64 == 0 && h2r_flush(r) != 0) break;
  }
  h2_bytes_free(&blk);
  expect_goaway_close(r, NGHTTP2_PROTOCOL_ERROR);
  assert_true(frames < 20000);
  assert_int_equal(ta_calls(), 0);
  expect_peak_below(base, 512 * 1024, "CONTINUATION flood");
}

/* ---- HPACK bomb ------------------------------------------------------------ */

/* One 4000-byte field put in the dynamic table, then referenced by its
 * one-byte index 10,000 times: a block of about 14 KB that decodes to
 * 40 MB.  The stream is answered 431 (the decoded list is over
 * max_header_bytes), no handler runs, memory stays bounded, and the
 * connection still serves. */
static void test_hpack_bomb(void **state) {
  fx_t *fx = *state;
  h2r_t *r;
  h2_bytes_t blk = {0};
  char value[4001];
  h2f_field_t f[4];
  h2_stream_t *st;
  int32_t id;
  size_t base, i;
  r = open_attack(fx, &base);
  memset(value, 'b', sizeof value - 1);
  value[sizeof value - 1] = '\0';
  f[0] = (h2f_field_t){":method", "GET"};
  f[1] = (h2f_field_t){":scheme", "http"};
  f[2] = (h2f_field_t){":path", "/count"};
  f[3] = (h2f_field_t){":authority", r->authority};
  h2f_encode(r->enc, &blk, f, 4);
  /* x-bomb (4038 bytes as an entry) fills the 4096-byte dynamic table
   * alone: it is index 62, the first dynamic one (RFC 7541 §2.3.3). */
  h2f_hpack_literal(&blk, "x-bomb", value);
  for (i = 0; i < 10000; i++) h2f_hpack_indexed(&blk, 62);
  id = r->next_stream;
  r->next_stream += 2;
  h2f_headers(h2r_out(r), id, NGHTTP2_FLAG_END_STREAM, blk.p, blk.len, 16384);
  h2_bytes_free(&blk);
  assert_int_equal(h2r_flush(r), 0);
  assert_int_equal(h2r_wait_stream(r, id), 1);
  st = h2_seen_stream(&r->io.seen, id);
  if (st->status != 431)
    fail_msg("stream %d: status %d, reset %d (error %u), want 431", id, st->status,
             st->reset, st->rst_error);
  assert_int_equal(ta_calls(), 0);
  expect_peak_below(base, 256 * 1024, "HPACK bomb");
  /* Our encoder's table no longer matches the server's decoder: a new
   * connection shows the server still serves. */
  r = h2fx_raw(fx);
  warm_up(r);
}

/* ---- floods while not reading ---------------------------------------------- */

/* Sends `count` copies of the frame f[0..n) without reading, as far as the
 * server takes them; returns how many went out whole. */
static unsigned long flood(h2r_t *r, const uint8_t *f, size_t n, unsigned long count) {
  unsigned long sent = 0;
  r->io.reading = 0;
  while (sent < count) {
    unsigned long i, batch = count - sent < 1000 ? count - sent : 1000;
    for (i = 0; i < batch; i++) h2_bytes_add(h2r_out(r), f, n);
    if (h2r_flush(r) != 0) break;
    sent += batch;
  }
  return sent;
}

/* SETTINGS frames the server must acknowledge, 200,000 of them, from a
 * client that reads nothing: the server does not queue acknowledgements
 * without bound; it ends the connection with GOAWAY(ENHANCE_YOUR_CALM). */
static void test_settings_flood(void **state) {
  fx_t *fx = *state;
  static const nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  h2_bytes_t f = {0};
  h2r_t *r;
  size_t base;
  fx->opts.write_timeout_ms = 1000;
  r = open_attack(fx, &base);
  h2f_settings(&f, iv, 1);
  flood(r, f.p, f.len, 200000);
  h2_bytes_free(&f);
  expect_goaway_close(r, NGHTTP2_ENHANCE_YOUR_CALM);
  assert_true(r->io.seen.settings_acks < 200000);
  expect_peak_below(base, 512 * 1024, "SETTINGS flood");
}

/* The same with PING. */
static void test_ping_flood(void **state) {
  fx_t *fx = *state;
  h2_bytes_t f = {0};
  h2r_t *r;
  size_t base;
  fx->opts.write_timeout_ms = 1000;
  r = open_attack(fx, &base);
  h2f_ping(&f, 0, (const uint8_t *)"attack!!");
  flood(r, f.p, f.len, 200000);
  h2_bytes_free(&f);
  expect_goaway_close(r, NGHTTP2_ENHANCE_YOUR_CALM);
  assert_true(r->io.seen.ping_acks < 200000);
  expect_peak_below(base, 512 * 1024, "PING flood");
}

/* ---- zero window, slow reader ---------------------------------------------- */

/* A zero stream window: the server may send no DATA, the handler's writes
 * stop at the high-water mark, and the write timeout ends the connection.
 * Memory stays within the mark plus a frame's worth. */
static void test_zero_window(void **state) {
  fx_t *fx = *state;
  h2c_options_t o;
  h2c_t *c;
  h2_stream_t *st;
  size_t base;
  int32_t id;
  fx->opts.write_timeout_ms = 500;
  start(fx);
  h2c_options_init(&o);
  o.initial_window = 0;
  o.manual_window = 1;
  c = h2fx_connect(fx, &o);
  expect_h2(h2fx_request(c, "HEAD", "/count"), 200, "");
  base = baseline();
  id = h2c_get(c, "GET", "/stream");
  h2c_wait_closed(c);
  st = h2_seen_stream(&c->io.seen, id);
  assert_int_equal(st->status, 200);
  assert_int_equal(st->body_len, 0);
  assert_int_equal(st->ended, 0);
  expect_peak_below(base, fx->opts.write_high_water_bytes + 128 * 1024, "zero window");
  if (!c->io.seen.closed)
    fail_msg("the connection was still open %d ms after the stream stalled on its "
             "zero window (write_timeout_ms %llu)", RC_TIMEOUT_MS,
             (unsigned long long)fx->opts.write_timeout_ms);
}

/* A client that stops reading, with a small receive buffer and windows
 * wide open (so TCP, not flow control, holds the server back): the
 * server's queue stops at the high-water mark and the write timeout ends
 * the connection. */
static void test_slow_reader(void **state) {
  fx_t *fx = *state;
  h2c_options_t o;
  h2c_t *c;
  size_t base;
  fx->opts.write_timeout_ms = 500;
  start(fx);
  h2c_options_init(&o);
  o.sock.rcvbuf = 4096;
  o.initial_window = 0x7fffffff;
  o.connection_window = 0x7fffffff;
  c = h2fx_connect(fx, &o);
  expect_h2(h2fx_request(c, "HEAD", "/count"), 200, "");
  base = baseline();
  c->io.reading = 0;
  assert_true(h2c_get(c, "GET", "/stream") > 0);
  assert_int_equal(h2_loop_flush(&c->io), 0);
  if (!fx_wait_stat(fx, FX_ACTIVE, 0, RC_TIMEOUT_MS, NULL)) {
    hr_server_stats_t st;
    fx_stats(fx, &st);
    fail_msg("the connection was still open %d ms after the client stopped reading "
             "(write_timeout_ms %llu): %llu bytes sent, %llu output queues in use",
             RC_TIMEOUT_MS, (unsigned long long)fx->opts.write_timeout_ms,
             (unsigned long long)st.bytes_sent, (unsigned long long)st.output_queues_in_use);
  }
  assert_int_equal(h2c_wait_closed(c), 1);
  expect_peak_below(base, fx->opts.write_high_water_bytes + 128 * 1024, "slow reader");
}

/* ---- streams --------------------------------------------------------------- */

/* With h2_max_concurrent_streams 10 (announced in SETTINGS), an eleventh
 * open stream from a client that has not acknowledged the SETTINGS yet is
 * refused with RST_STREAM(REFUSED_STREAM) and never reaches a handler; the
 * connection goes on: the ten are answered, and once they complete a new
 * stream is served. */
static void test_too_many_streams(void **state) {
  fx_t *fx = *state;
  int32_t ids[11], id;
  h2r_t *r;
  h2_stream_t *st;
  int i;
  fx->opts.h2_max_concurrent_streams = 10;
  start(fx);
  r = h2fx_raw_unacked(fx);
  ta_reset();
  for (i = 0; i < 11; i++) ids[i] = h2r_request(r, "GET", "/park", 1, NULL, 0);
  assert_int_equal(h2r_flush(r), 0);
  st = wait_stream(r, ids[10]);
  if (!st->reset)
    fail_msg("stream %d (the 11th): status %d, not refused; handlers %lu", ids[10],
             st->status, ta_calls());
  assert_int_equal(st->rst_error, NGHTTP2_REFUSED_STREAM);
  assert_true(ta_wait_calls(10, RC_TIMEOUT_MS));
  assert_int_equal(ta_calls(), 10);
  assert_true(r->io.seen.settings_present & (1u << NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
  assert_int_equal(r->io.seen.settings_value[NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS], 10);
  park_release();
  for (i = 0; i < 10; i++) assert_int_equal(wait_stream(r, ids[i])->status, 200);
  h2f_settings_ack(h2r_out(r));
  id = h2r_request(r, "GET", "/count", 1, NULL, 0);
  assert_int_equal(h2r_flush(r), 0);
  assert_int_equal(wait_stream(r, id)->status, 200);
  assert_int_equal(ta_calls(), 11);
  assert_int_equal(r->io.seen.goaway, 0);
}

/* Once the client has acknowledged the limit, nghttp2 1.52 treats an
 * eleventh open stream as a protocol error of the connection:
 * GOAWAY(PROTOCOL_ERROR) naming the last stream it took, 21 (the warm-up's
 * stream 1, then 3..21), and no handler runs for stream 23. */
static void test_too_many_streams_acknowledged(void **state) {
  fx_t *fx = *state;
  int32_t ids[11];
  h2r_t *r;
  int i;
  fx->opts.h2_max_concurrent_streams = 10;
  start(fx);
  r = h2fx_raw(fx);
  warm_up(r); /* the SETTINGS acknowledged both ways */
  ta_reset();
  for (i = 0; i < 11; i++) ids[i] = h2r_request(r, "GET", "/park", 1, NULL, 0);
  assert_int_equal(ids[10], 23);
  assert_int_equal(h2r_flush(r), 0);
  expect_goaway_close(r, NGHTTP2_PROTOCOL_ERROR);
  assert_int_equal(r->io.seen.goaway_last_id, 21);
  assert_true(ta_wait_calls(10, RC_TIMEOUT_MS));
  assert_int_equal(ta_calls(), 10);
  park_release();
}

/* The last stream identifier there is (2^31-1) is served; a HEADERS frame
 * after it can only name a lower stream: GOAWAY(PROTOCOL_ERROR)
 * (RFC 9113 §5.1.1), and no handler runs for it. */
static void test_stream_ids_exhausted(void **state) {
  fx_t *fx = *state;
  h2r_t *r;
  int32_t id;
  start(fx);
  r = h2fx_raw(fx);
  warm_up(r);
  ta_reset();
  r->next_stream = 0x7fffffff;
  id = h2r_request(r, "GET", "/count", 1, NULL, 0);
  assert_int_equal(h2r_flush(r), 0);
  assert_int_equal(h2r_wait_stream(r, id), 1);
  assert_int_equal(h2_seen_stream(&r->io.seen, id)->status, 200);
  r->next_stream = 3;
  h2r_request(r, "GET", "/count", 1, NULL, 0);
  assert_int_equal(h2r_flush(r), 0);
  expect_goaway_close(r, NGHTTP2_PROTOCOL_ERROR);
  assert_int_equal(r->io.seen.goaway_last_id, 0x7fffffff);
  assert_int_equal(ta_calls(), 1);
}

/* 100,000 PRIORITY frames for idle streams: the server keeps a bounded
 * priority state and still answers. */
static void test_priority_flood(void **state) {
  fx_t *fx = *state;
  h2r_t *r;
  int32_t id;
  size_t base;
  int i, j;
  r = open_attack(fx, &base);
  for (i = 0; i < 100 && !r->io.seen.closed; i++) {
    for (j = 0; j < 1000; j++) {
      int32_t s = 101 + 2 * (i * 1000 + j);
      h2f_priority(h2r_out(r), s, s - 2, 1 + j % 256, j % 2);
    }
    if (h2r_flush(r) != 0) break;
  }
  assert_int_equal(r->io.seen.closed, 0);
  assert_int_equal(r->io.seen.goaway, 0);
  r->next_stream = 101 + 2 * 100000; /* above every stream named */
  id = h2r_request(r, "GET", "/count", 1, NULL, 0);
  assert_int_equal(h2r_flush(r), 0);
  assert_int_equal(h2r_wait_stream(r, id), 1);
  assert_int_equal(h2_seen_stream(&r->io.seen, id)->status, 200);
  expect_peak_below(base, 512 * 1024, "PRIORITY flood");
}

/* ---- MadeYouReset ----------------------------------------------------------- */

/* Streams the server must reset itself: POST /upload opened (HEADERS
 * without END_STREAM, so no handler runs yet), then a WINDOW_UPDATE of
 * 2^31-1 on it, which overflows its window: a stream error (RFC 9113
 * §6.9.1) the server answers with RST_STREAM(FLOW_CONTROL_ERROR).  (A
 * zero increment would do as well by the RFC, but nghttp2 makes that a
 * connection error.)  10,000 such pairs: those resets count
 * against the reset budget, so the connection ends with
 * GOAWAY(ENHANCE_YOUR_CALM) after fewer than 500 of them, and no handler
 * runs. */
static void post_and_overflow(h2r_t *r) {
  h2f_window_update(h2r_out(r), h2r_request(r, "POST", "/upload", 0, NULL, 0), 0x7fffffff);
}

static void test_made_you_reset(void **state) {
  fx_t *fx = *state;
  size_t base;
  h2r_t *r = open_attack(fx, &base);
  /* In batches of 50, each after the last one's resets came back: the
   * streams the server is resetting count as open until its RST_STREAM
   * goes out, and 100 open ones would be another attack. */
  unsigned long pairs = reset_pairs(r, post_and_overflow, 50, 10000, 1);
  expect_goaway_close(r, NGHTTP2_ENHANCE_YOUR_CALM);
  if (r->io.seen.rst_streams >= 500)
    fail_msg("the server reset %lu streams before its GOAWAY", r->io.seen.rst_streams);
  assert_true(r->io.seen.rst_streams > 0);
  assert_int_equal(h2_seen_stream(&r->io.seen, 3)->rst_error, NGHTTP2_FLOW_CONTROL_ERROR);
  assert_true(pairs < 10000);
  assert_int_equal(ta_calls(), 0);
  expect_peak_below(base, 512 * 1024, "MadeYouReset");
}

#define ATTACK(t) cmocka_unit_test_setup_teardown(t, h2fx_setup_h2c, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      ATTACK(test_rapid_reset),      ATTACK(test_continuation_flood),
      ATTACK(test_hpack_bomb),       ATTACK(test_settings_flood),
      ATTACK(test_ping_flood),       ATTACK(test_zero_window),
      ATTACK(test_slow_reader),      ATTACK(test_too_many_streams),
      ATTACK(test_too_many_streams_acknowledged),
      ATTACK(test_stream_ids_exhausted), ATTACK(test_priority_flood),
      ATTACK(test_made_you_reset),
  };
  return cmocka_run_group_tests_name("h2_attacks", tests, NULL, NULL);
}
