/* SPDX-License-Identifier: MIT */
/*
 * permessage-deflate (RFC 7692) through the server, with frames built,
 * compressed and inflated here (tests/support/wsframe.c, zlib): the answer
 * to every kind of offer (§7.1: parameters, values, repeats, unknown ones,
 * several offers and lines, a window zlib cannot write), compressed echo
 * both ways with and without context takeover, messages that stay
 * uncompressed (short, incompressible, flagged), fragments, a final block
 * (BFINAL) mid-conversation, the refusals (RSV1 on a continuation or a
 * control frame, RSV2, RSV1 without the extension: 1002; bad or truncated
 * DEFLATE: 1007; a small message inflating past the limit: 1009), and the
 * memory a connection holds in each mode, measured with a counting
 * allocator.
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "countalloc.h"
#include "fixture.h"
#include "hroute/websocket.h"
#include "wsframe.h"

#ifdef HR_HAVE_ZLIB
#include <zlib.h>
#endif

static hr_websocket_options_t wsopts;
static ev_t closed_ev;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint16_t closed_code, closed_sent;

/* ---- the server's side ------------------------------------------------------- */

static char repeat_text[1000];
static unsigned char noise_big[600000]; /* does not shrink */

static void on_message(hr_websocket_t *ws, int type, const void *data, size_t len,
                       void *udata) {
  (void)udata;
  if (type == HR_WS_TEXT && len == 3 && memcmp(data, "raw", 3) == 0) {
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT | HR_WS_UNCOMPRESSED, repeat_text,
                                       sizeof repeat_text),
                     0);
    return;
  }
  if (type == HR_WS_TEXT && len == 5 && memcmp(data, "noise", 5) == 0) {
    assert_int_equal(hr_websocket_send(ws, HR_WS_BINARY, noise_big, sizeof noise_big), 0);
    return;
  }
  if (type == HR_WS_TEXT && len == 5 && memcmp(data, "agree", 5) == 0) {
    char yes = hr_websocket_deflated(ws) ? 'y' : 'n';
    assert_int_equal(hr_websocket_send(ws, HR_WS_TEXT, &yes, 1), 0);
    return;
  }
  assert_int_equal(hr_websocket_send(ws, type, data, len), 0);
}

static void on_closed(hr_websocket_t *ws, const hr_websocket_close_t *how, void *udata) {
  (void)ws, (void)udata;
  pthread_mutex_lock(&mu);
  closed_code = how->code;
  closed_sent = how->sent_code;
  pthread_mutex_unlock(&mu);
  ev_signal(&closed_ev);
}

static const hr_websocket_callbacks_t cbs = {.message = on_message, .closed = on_closed};

static void h_ws(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)udata;
  hr_websocket_accept(req, res, &wsopts, &cbs, NULL, NULL);
}

static void start_with(fx_t *fx, void (*tune)(hr_websocket_options_t *)) {
  ev_init(&closed_ev);
  memset(repeat_text, 'r', sizeof repeat_text);
  hr_websocket_options_init(&wsopts);
  wsopts.max_message_bytes = 70000;
  wsopts.deflate.enabled = 1;
  if (tune != NULL) tune(&wsopts);
  fx_route(fx, "GET", "/ws", h_ws, NULL);
  fx_start(fx, 1);
}

/* ---- the client's side --------------------------------------------------------- */

/* Connects with `ext` (field lines, may be "") and reads the 101: returns
 * the connection and copies the Sec-WebSocket-Extensions answer into
 * `answer` ("" when none). */
static rc_t *open_ext(fx_t *fx, const char *ext, char *answer, size_t cap) {
  rc_t *c = fx_connect(fx);
  rc_response_t r;
  const char *v;
  char req[1024];
  snprintf(req, sizeof req,
           "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
           ext);
  assert_int_equal(rc_send_str(c, req), 0);
  expect_head_response(c, "HTTP/1.1 101 Switching Protocols", &r);
  assert_true(rc_header_count(&r, "Sec-WebSocket-Extensions") <= 1);
  v = rc_header(&r, "Sec-WebSocket-Extensions");
  snprintf(answer, cap, "%s", v != NULL ? v : "");
  rc_response_free(&r);
  return c;
}

static ws_sframe_t fr;
static unsigned char buf[140000], zbuf[140000], plain[140000];

/* Sends one message: compressed (RSV1) when `z`, with `keep` for the
 * client's compressor. */
static void send_msg(rc_t *c, int opcode, const void *data, size_t len, int z, int keep) {
  size_t n;
  if (z) {
    n = ws_deflate(data, len, zbuf, sizeof zbuf, keep);
    assert_true(n > 0);
    n = ws_frame(buf, 1, 4, opcode, zbuf, n, 0);
  } else {
    n = ws_frame(buf, 1, 0, opcode, data, len, 0);
  }
  assert_int_equal(rc_send(c, buf, n), 0);
}

/* Reads one data message: expects RSV1 as `z` says; returns its bytes
 * (inflated with `keep`) at plain. */
static size_t read_msg(rc_t *c, int opcode, int z, int keep) {
  size_t n;
  ws_read_frame(c, &fr);
  assert_int_equal(fr.fin, 1);
  if (fr.opcode == 8 && fr.len >= 2) fail_msg("closed %u", (unsigned)fr.data[0] << 8 | fr.data[1]);
  assert_int_equal(fr.opcode, opcode);
  assert_int_equal(fr.rsv, z ? 4 : 0);
  if (!z) {
    memcpy(plain, fr.data, fr.len);
    return fr.len;
  }
  n = ws_inflate(fr.data, fr.len, plain, sizeof plain, keep);
  assert_true(n != (size_t)-1);
  return n;
}

static void expect_echo(rc_t *c, int opcode, const void *data, size_t len, int z_in, int z_out,
                        int keep) {
  send_msg(c, opcode, data, len, z_in, keep);
  assert_int_equal(read_msg(c, opcode, z_out, keep), len);
  assert_memory_equal(plain, data, len);
}

/* The server's close frame with `code`, then the end. */
static void expect_failed(fx_t *fx, rc_t *c, unsigned code) {
  char b;
  ws_read_frame(c, &fr);
  assert_int_equal(fr.opcode, 8);
  assert_true(fr.len >= 2);
  assert_int_equal((unsigned)fr.data[0] << 8 | fr.data[1], code);
  assert_int_equal(recv(c->fd, &b, 1, 0), 0);
  assert_true(ev_wait(&closed_ev, 1, RC_TIMEOUT_MS));
  pthread_mutex_lock(&mu);
  assert_int_equal(closed_sent, code);
  assert_int_equal(closed_code, 1006);
  pthread_mutex_unlock(&mu);
  fx_drop(fx, c);
}

/* ---- tests ------------------------------------------------------------------- */

#ifdef HR_HAVE_ZLIB

static const char NT[] = "permessage-deflate; server_no_context_takeover; "
                         "client_no_context_takeover";

static void expect_answer(fx_t *fx, const char *ext, const char *want) {
  char answer[256];
  rc_t *c = open_ext(fx, ext, answer, sizeof answer);
  if (strcmp(answer, want) != 0)
    fail_msg("offer \"%s\": answer \"%s\", want \"%s\"", ext, answer, want);
  fx_drop(fx, c);
}

static void test_answers(void **state) {
  fx_t *fx = *state;
  start_with(fx, NULL);
  expect_answer(fx, "", "");
  expect_answer(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", NT);
  expect_answer(fx, "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n", "");
  /* The client's window: offered without a value, 15 goes unsaid. */
  expect_answer(fx, "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n", NT);
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=12\r\n",
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "client_max_window_bits=12");
  /* The server's window: lowered to what the client asks. */
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate;server_max_window_bits=10\r\n",
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "server_max_window_bits=10");
  /* §7.1.2.1: an offer of 15 is accepted by naming it too. */
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=15\r\n",
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "server_max_window_bits=15");
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=\"12\"\r\n",
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "server_max_window_bits=12");
  /* Declined: 8 bits (zlib), no value, a leading zero, out of range, a
   * value where none belongs, a repeat, an unknown parameter. */
  {
    static const char *const declined[] = {
        "server_max_window_bits=8", "server_max_window_bits", "server_max_window_bits=09",
        "client_max_window_bits=16", "client_no_context_takeover=1",
        /* "=" and nothing (undefined behaviour once, caught by UBSan) */
        "client_max_window_bits=", "server_max_window_bits="};
    size_t i;
    char ext[256];
    for (i = 0; i < sizeof declined / sizeof declined[0]; i++) {
      snprintf(ext, sizeof ext, "Sec-WebSocket-Extensions: permessage-deflate; %s\r\n",
               declined[i]);
      expect_answer(fx, ext, "");
    }
  }
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                "server_no_context_takeover\r\n",
                "");
  expect_answer(fx, "Sec-WebSocket-Extensions: permessage-deflate; mystery\r\n", "");
  /* The first acceptable offer, over several elements and lines. */
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=8, "
                "permessage-deflate; server_max_window_bits=11\r\n",
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "server_max_window_bits=11");
  expect_answer(fx,
                "Sec-WebSocket-Extensions: foo\r\nSec-WebSocket-Extensions: permessage-deflate\r\n",
                NT);
  /* A name inside another extension's quoted value is no offer. */
  expect_answer(fx, "Sec-WebSocket-Extensions: foo; a=\"x, permessage-deflate\"\r\n", "");
}

static void takeover_10_4(hr_websocket_options_t *o) {
  o->deflate.context_takeover = 1;
  o->deflate.server_window_bits = 10;
  o->deflate.client_window_bits = 10;
  o->deflate.mem_level = 4;
}

static void test_answers_takeover(void **state) {
  fx_t *fx = *state;
  start_with(fx, takeover_10_4);
  expect_answer(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n",
                "permessage-deflate; server_max_window_bits=10");
  expect_answer(fx, "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n",
                "permessage-deflate; server_max_window_bits=10; client_max_window_bits=10");
  expect_answer(fx,
                "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=9; "
                "server_no_context_takeover\r\n",
                "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; "
                "client_max_window_bits=9");
}

static void off(hr_websocket_options_t *o) { o->deflate.enabled = 0; }

static void test_off_by_default(void **state) {
  fx_t *fx = *state;
  char answer[256];
  rc_t *c;
  hr_websocket_options_t d;
  hr_websocket_options_init(&d);
  assert_int_equal(d.deflate.enabled, 0);
  start_with(fx, off);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  assert_string_equal(answer, "");
  send_msg(c, 1, "agree", 5, 0, 0);
  assert_int_equal(read_msg(c, 1, 0, 0), 1);
  assert_int_equal(plain[0], 'n');
  /* RSV1 without the extension: 1002. */
  send_msg(c, 1, repeat_text, 200, 1, 0);
  expect_failed(fx, c, 1002);
}

static void test_echo_without_takeover(void **state) {
  fx_t *fx = *state;
  char answer[256], text[3000];
  unsigned char noise[1000];
  size_t i;
  uint32_t x = 12345;
  rc_t *c;
  start_with(fx, NULL);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  assert_string_equal(answer, NT);
  send_msg(c, 1, "agree", 5, 1, 0);
  assert_int_equal(read_msg(c, 1, 0, 0), 1); /* under min_length: sent as it is */
  assert_int_equal(plain[0], 'y');
  for (i = 0; i < sizeof text; i++) text[i] = "abcdefgh "[i % 9];
  expect_echo(c, 1, text, sizeof text, 1, 1, 0);
  expect_echo(c, 1, text, sizeof text, 0, 1, 0); /* uncompressed in, compressed out */
  expect_echo(c, 1, text, 100, 1, 1, 0);
  /* Incompressible: goes out uncompressed. */
  for (i = 0; i < sizeof noise; i++) {
    x = x * 1103515245u + 12345u;
    noise[i] = (unsigned char)(x >> 16);
  }
  expect_echo(c, 2, noise, sizeof noise, 1, 0, 0);
  /* Flagged by the handler: uncompressed. */
  send_msg(c, 1, "raw", 3, 0, 0);
  assert_int_equal(read_msg(c, 1, 0, 0), sizeof repeat_text);
  assert_memory_equal(plain, repeat_text, sizeof repeat_text);
  /* A compressed message in three fragments, RSV1 on the first only. */
  {
    size_t n = ws_deflate(text, sizeof text, zbuf, sizeof zbuf, 0), k = n / 3, m;
    assert_true(n > 3);
    m = ws_frame(buf, 0, 4, 1, zbuf, k, 0);
    m += ws_frame(buf + m, 0, 0, 0, zbuf + k, k, 0);
    m += ws_frame(buf + m, 1, 0, 0, zbuf + 2 * k, n - 2 * k, 0);
    assert_int_equal(rc_send(c, buf, m), 0);
    assert_int_equal(read_msg(c, 1, 1, 0), sizeof text);
    assert_memory_equal(plain, text, sizeof text);
  }
  /* A message that ends with a final block (BFINAL, §7.2.3.4), then one
   * as usual. */
  {
    z_stream z;
    size_t n, m;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)text;
    z.avail_in = sizeof text;
    z.next_out = zbuf;
    z.avail_out = sizeof zbuf;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    n = sizeof zbuf - z.avail_out;
    deflateEnd(&z);
    m = ws_frame(buf, 1, 4, 1, zbuf, n, 0);
    assert_int_equal(rc_send(c, buf, m), 0);
    assert_int_equal(read_msg(c, 1, 1, 0), sizeof text);
    assert_memory_equal(plain, text, sizeof text);
    expect_echo(c, 1, text, 500, 1, 1, 0);
  }
  fx_drop(fx, c);
}

static void test_echo_with_takeover(void **state) {
  fx_t *fx = *state;
  char answer[256], text[800];
  size_t first, second, i;
  rc_t *c;
  start_with(fx, takeover_10_4);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n",
               answer, sizeof answer);
  assert_string_equal(answer,
                      "permessage-deflate; server_max_window_bits=10; client_max_window_bits=10");
  ws_deflate_window(10); /* client_max_window_bits=10 */
  for (i = 0; i < sizeof text; i++) text[i] = "the quick brown fox "[i % 20];
  text[0] = '1';
  /* Both sides keep their windows: the same text again costs less. */
  expect_echo(c, 1, text, sizeof text, 1, 1, 1);
  first = fr.len;
  text[0] = '2';
  expect_echo(c, 1, text, sizeof text, 1, 1, 1);
  second = fr.len;
  assert_true(second < first);
  /* An uncompressed message in between leaves both windows alone. */
  expect_echo(c, 1, "short", 5, 0, 0, 1);
  text[0] = '3';
  expect_echo(c, 1, text, sizeof text, 1, 1, 1);
  ws_deflate_end();
  ws_deflate_window(15);
  fx_drop(fx, c);
}

/* A connection with the extension agreed is sent buf[0..m) and fails with
 * `code`. */
static void refused(fx_t *fx, size_t m, unsigned code) {
  char answer[256];
  rc_t *c;
  ev_init(&closed_ev);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  assert_string_equal(answer, NT);
  assert_int_equal(rc_send(c, buf, m), 0);
  expect_failed(fx, c, code);
}

static void test_refusals(void **state) {
  fx_t *fx = *state;
  static char zeros[200000];
  size_t n, m;
  start_with(fx, NULL);
  /* RSV1 on a continuation. */
  n = ws_deflate(repeat_text, 500, zbuf, sizeof zbuf, 0);
  m = ws_frame(buf, 0, 4, 1, zbuf, 2, 0);
  m += ws_frame(buf + m, 1, 4, 0, zbuf + 2, n - 2, 0);
  refused(fx, m, 1002);
  /* RSV1 on a ping; RSV2. */
  refused(fx, ws_frame(buf, 1, 4, 9, "p", 1, 0), 1002);
  refused(fx, ws_frame(buf, 1, 2, 1, "x", 1, 0), 1002);
  /* Not DEFLATE (BTYPE 11 is reserved). */
  refused(fx, ws_frame(buf, 1, 4, 2, "\xff\xff\xff", 3, 0), 1007);
  /* Cut short: a stored block of 10 bytes with 3 of them. */
  refused(fx, ws_frame(buf, 1, 4, 2, "\x00\x0a\x00\xf5\xff" "abc", 8, 0), 1007);
  /* 200,000 zeros in a few hundred bytes: over the 70,000-byte limit once
   * inflated. */
  n = ws_deflate(zeros, sizeof zeros, zbuf, sizeof zbuf, 0);
  assert_true(n > 0 && n < 1000);
  refused(fx, ws_frame(buf, 1, 4, 2, zbuf, n, 0), 1009);
  ws_deflate_end();
}

/* RFC 7692 §7.2.3's own payloads for "Hello": one block (§7.2.3.1), two
 * fragments (§7.2.3.2), a final block followed by the first octet of an
 * empty stored block (§7.2.3.4), two blocks (§7.2.3.5). */
static void test_rfc_examples(void **state) {
  fx_t *fx = *state;
  char answer[256];
  rc_t *c;
  size_t m;
  start_with(fx, NULL);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  assert_int_equal(rc_send(c, buf, ws_frame(buf, 1, 4, 1, "\xf2\x48\xcd\xc9\xc9\x07\x00", 7, 0)),
                   0);
  assert_int_equal(read_msg(c, 1, 0, 0), 5);
  assert_memory_equal(plain, "Hello", 5);
  m = ws_frame(buf, 0, 4, 1, "\xf2\x48\xcd", 3, 0);
  m += ws_frame(buf + m, 1, 0, 0, "\xc9\xc9\x07\x00", 4, 0);
  assert_int_equal(rc_send(c, buf, m), 0);
  assert_int_equal(read_msg(c, 1, 0, 0), 5);
  assert_memory_equal(plain, "Hello", 5);
  assert_int_equal(
      rc_send(c, buf, ws_frame(buf, 1, 4, 1, "\xf3\x48\xcd\xc9\xc9\x07\x00\x00", 8, 0)), 0);
  assert_int_equal(read_msg(c, 1, 0, 0), 5);
  assert_memory_equal(plain, "Hello", 5);
  assert_int_equal(rc_send(c, buf, ws_frame(buf, 1, 4, 1,
                                            "\xf2\x48\x05\x00\x00\x00\xff\xff\xca\xc9\xc9\x07\x00",
                                            13, 0)),
                   0);
  assert_int_equal(read_msg(c, 1, 0, 0), 5);
  assert_memory_equal(plain, "Hello", 5);
  fx_drop(fx, c);
}

static void takeover_min0(hr_websocket_options_t *o) {
  o->deflate.context_takeover = 1;
  o->deflate.min_length = 0;
}

/* With takeover and min_length 0, an empty message after a compressed
 * one goes out (uncompressed: a sync flush of nothing writes nothing). */
static void test_empty_with_takeover(void **state) {
  fx_t *fx = *state;
  char answer[256];
  rc_t *c;
  start_with(fx, takeover_min0);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  assert_string_equal(answer, "permessage-deflate");
  expect_echo(c, 1, "compressed first", 16, 1, 1, 1);
  expect_echo(c, 1, "", 0, 0, 0, 1);
  expect_echo(c, 1, "compressed again", 16, 1, 1, 1);
  ws_deflate_end();
  fx_drop(fx, c);
}

/* Clients that agreed on different server windows, served in turn by the
 * loop's shared compressors. */
static void test_mixed_windows(void **state) {
  fx_t *fx = *state;
  char answer[256], text[2000];
  rc_t *a, *b;
  size_t i;
  int k;
  start_with(fx, NULL);
  for (i = 0; i < sizeof text; i++) text[i] = "windows apart "[i % 14];
  a = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=9\r\n",
               answer, sizeof answer);
  b = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  for (k = 0; k < 6; k++) {
    text[0] = (char)('0' + k);
    expect_echo(k & 1 ? b : a, 1, text, sizeof text, 1, 1, 0);
  }
  fx_drop(fx, a);
  fx_drop(fx, b);
}

/* ---- memory per connection ------------------------------------------------------ */

static ca_t ca;

/* Bytes the server holds once `c` has exchanged one message each way
 * (compressed when `z`). */
static size_t settled_bytes(rc_t *c, int z, int keep) {
  char text[200]; /* its buffer as large compressed or not: 256 bytes kept */
  size_t i;
  for (i = 0; i < sizeof text; i++) text[i] = "memory "[i % 7];
  expect_echo(c, 2, text, sizeof text, z, z, keep);
  return ca_bytes(&ca);
}

/* Bytes per connection held by 8 more connections with `ext`, each having
 * exchanged a message each way; *before is the count to start from (the
 * count after them on return). */
static size_t held_by(fx_t *fx, const char *ext, int z, int keep, size_t *before) {
  char answer[256];
  size_t b = *before, after = b;
  int i;
  for (i = 0; i < 8; i++) {
    rc_t *c = open_ext(fx, ext, answer, sizeof answer); /* stays open: measured */
    assert_int_equal(answer[0] != '\0', z);
    after = settled_bytes(c, z, keep);
    if (keep) ws_deflate_end(); /* the next connection's client starts afresh */
  }
  *before = after;
  return (after - b) / 8;
}

static void takeover_15_8(hr_websocket_options_t *o) { o->deflate.context_takeover = 1; }

/* Measures a plain connection, one without takeover and one with, under
 * `tune`'s settings; the client's window is `bits`. */
static void measure(fx_t *fx, void (*tune)(hr_websocket_options_t *), int bits, size_t *plain_conn,
                    size_t *shared, size_t *own) {
  char answer[256];
  size_t before;
  rc_t *warm;
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  start_with(fx, tune);
  /* The loop's shared compressor and decompressor, made once. */
  warm = open_ext(fx,
                  "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                  "client_no_context_takeover\r\n",
                  answer, sizeof answer);
  before = settled_bytes(warm, 1, 0);
  *plain_conn = held_by(fx, "", 0, 0, &before);
  *shared = held_by(fx,
                    "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                    "client_no_context_takeover\r\n",
                    1, 0, &before);
  ws_deflate_end();
  ws_deflate_window(bits); /* client_max_window_bits as agreed */
  *own = held_by(fx, "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n",
                 1, 1, &before);
  ws_deflate_end();
  ws_deflate_window(15);
}

static void test_memory_per_connection(void **state) {
  fx_t *fx = *state;
  size_t plain_conn, shared, own;
  measure(fx, takeover_10_4, 10, &plain_conn, &shared, &own);
  printf("# memory per connection: plain %zu B, permessage-deflate without takeover %zu B, "
         "with takeover (windows 10 bits, memLevel 4) %zu B\n",
         plain_conn, shared, own);
  /* Without takeover: the agreement only (a few dozen bytes). */
  assert_true(shared >= plain_conn && shared <= plain_conn + 64);
  /* With it: zlib's own figures (compressor 2^12 + 2^13 bytes, window
   * 2^10 for the decompressor, and their small objects). */
  assert_true(own >= plain_conn + 4096 + 8192 + 1024);
  assert_true(own <= plain_conn + 4096 + 8192 + 1024 + 7168 + 16384);
}

static void test_memory_zlib_defaults(void **state) {
  fx_t *fx = *state;
  size_t plain_conn, shared, own;
  measure(fx, takeover_15_8, 15, &plain_conn, &shared, &own);
  printf("# memory per connection with takeover (windows 15 bits, memLevel 8): %zu B\n", own);
  assert_true(shared <= plain_conn + 64);
  assert_true(own >= plain_conn + 131072 + 131072 + 32768);
  assert_true(own <= plain_conn + 131072 + 131072 + 32768 + 7168 + 16384);
}

static void big_limit(hr_websocket_options_t *o) { o->max_message_bytes = 1 << 20; }

/* Reads one server frame of any length, keeping none of it; returns the
 * payload's length. */
static size_t skip_frame(rc_t *c, int *opcode, int *rsv) {
  unsigned char h[2], ext[8], scratch[4096];
  size_t len, i;
  ws_read_exact(c, h, 2);
  *opcode = h[0] & 0x0f;
  *rsv = (h[0] >> 4) & 7;
  len = h[1] & 0x7f;
  if (len == 126) {
    ws_read_exact(c, ext, 2);
    len = (size_t)ext[0] << 8 | ext[1];
  } else if (len == 127) {
    ws_read_exact(c, ext, 8);
    for (len = 0, i = 0; i < 8; i++) len = len << 8 | ext[i];
  }
  for (i = 0; i < len;) {
    size_t k = len - i < sizeof scratch ? len - i : sizeof scratch;
    ws_read_exact(c, scratch, k);
    i += k;
  }
  return len;
}

/* The loop's buffers stay bounded and are not kept: a message that did
 * not shrink leaves no compress buffer behind, and a zip bomb grows the
 * inflate buffer to the limit (and a byte) at most, freed after its
 * 1009. */
static void test_buffers_bounded(void **state) {
  fx_t *fx = *state;
  static char zeros[2 << 20];
  char answer[256];
  size_t before, i, n;
  uint32_t x = 7;
  int op, rsv;
  rc_t *c;
  for (i = 0; i < sizeof noise_big; i++) {
    x = x * 1103515245u + 12345u;
    noise_big[i] = (unsigned char)(x >> 16);
  }
  ca_init(&ca);
  fx->opts.allocator = &ca.hook;
  start_with(fx, big_limit);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  expect_echo(c, 1, repeat_text, 200, 1, 1, 0); /* the loop's state made */
  before = ca_bytes(&ca);
  send_msg(c, 1, "noise", 5, 0, 0);
  assert_int_equal(skip_frame(c, &op, &rsv), sizeof noise_big);
  assert_int_equal(op, 2);
  assert_int_equal(rsv, 0); /* it did not shrink: sent as it is */
  expect_echo(c, 1, repeat_text, 200, 1, 1, 0); /* the output queue is empty again */
  assert_true(ca_bytes(&ca) < before + 65536);
  /* 2 MiB of zeros in a few KiB, over the 1 MiB limit. */
  ca_reset_peak(&ca);
  n = ws_deflate(zeros, sizeof zeros, zbuf, sizeof zbuf, 0);
  assert_true(n > 0);
  assert_int_equal(rc_send(c, buf, ws_frame(buf, 1, 4, 2, zbuf, n, 0)), 0);
  expect_failed(fx, c, 1009);
  printf("# a 1 MiB limit's zip bomb: peak %zu B over the connection's\n", ca_peak(&ca) - before);
  assert_true(ca_peak(&ca) < before + (1 << 20) + 131072);
  assert_true(ca_bytes(&ca) < before + 65536); /* freed with its 1009 */
  ws_deflate_end();
}

#else /* no zlib: offers are declined */

static void test_declined_without_zlib(void **state) {
  fx_t *fx = *state;
  char answer[256];
  rc_t *c;
  start_with(fx, NULL);
  c = open_ext(fx, "Sec-WebSocket-Extensions: permessage-deflate\r\n", answer, sizeof answer);
  assert_string_equal(answer, "");
  fx_drop(fx, c);
}

#endif

static int bad_rc[4];

/* Accepts with settings out of range, one per request (X-Case: 0..3). */
static void h_bad(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_websocket_options_t o;
  hr_span_t v;
  int k;
  (void)udata;
  assert_int_equal(hr_request_field(req, HR_SPAN_LIT("X-Case"), NULL, &v), 0);
  k = v.ptr[0] - '0';
  hr_websocket_options_init(&o);
  o.deflate.enabled = 1;
  if (k == 0) o.deflate.server_window_bits = 8;
  if (k == 1) o.deflate.client_window_bits = 16;
  if (k == 2) o.deflate.level = 0;
  if (k == 3) o.deflate.mem_level = 10;
  bad_rc[k] = hr_websocket_accept(req, res, &o, &cbs, NULL, NULL);
  hr_response_send(res, 500, "bad options\n", 12);
}

static void test_bad_options(void **state) {
  fx_t *fx = *state;
  int k;
  fx_route(fx, "GET", "/bad", h_bad, NULL);
  start_with(fx, NULL);
  for (k = 0; k < 4; k++) {
    rc_t *c = fx_connect(fx);
    rc_response_t r;
    char req[512];
    snprintf(req, sizeof req,
             "GET /bad HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
             "Sec-WebSocket-Extensions: permessage-deflate\r\nX-Case: %d\r\n\r\n",
             k);
    assert_int_equal(rc_send_str(c, req), 0);
    expect_head_response(c, "HTTP/1.1 500 Internal Server Error", &r);
    rc_response_free(&r);
    assert_int_equal(bad_rc[k], HR_EINVAL);
    fx_drop(fx, c);
  }
  assert_int_equal(hr_websocket_deflated(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#ifdef HR_HAVE_ZLIB
      cmocka_unit_test_setup_teardown(test_answers, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_answers_takeover, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_off_by_default, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_echo_without_takeover, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_echo_with_takeover, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_refusals, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_rfc_examples, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_empty_with_takeover, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_mixed_windows, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_buffers_bounded, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_memory_per_connection, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_memory_zlib_defaults, fx_setup, fx_teardown),
#else
      cmocka_unit_test_setup_teardown(test_declined_without_zlib, fx_setup, fx_teardown),
#endif
      cmocka_unit_test_setup_teardown(test_bad_options, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
