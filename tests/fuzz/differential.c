/* SPDX-License-Identifier: MIT */
/*
 * Differential libFuzzer target for request parsing, in two parts.
 *
 * 1. Splits.  The input (after its first byte) is fed to a loopback
 * connection (src/server/sink.c) whole, in 1-byte pieces, in pieces of
 * 1..64 bytes (the first byte chooses, as in fuzz_request) and in pieces of
 * varying length drawn from a generator the first byte seeds.  Every run
 * must write byte-identical output: hroute's answer may not depend on how
 * the bytes arrive.  Date is pinned (the worker's refresh timer is stopped
 * and its text fixed) and every timeout is an hour, so nothing depends on
 * the clock.  A difference aborts with both outputs.
 *
 * 2. llhttp.  The same bytes go to llhttp 8 on its own, with hroute's
 * settings: no lenient flag (hroute sets none), one fresh parser per
 * message, paused at each message's end.  hroute's verdict on each message
 * (from its access log and its "answered N and closing" log lines) is
 * compared with llhttp's (complete, rejected, or waiting for more bytes).
 * What hroute does on purpose differently is encoded below; any other
 * disagreement aborts.  The intended ones:
 *
 *  - Methods: any token is a method (RFC 9110 §9.1), while llhttp knows a
 *    fixed list.  hroute hands llhttp "GET " in the method's place
 *    (src/server/parse.c), and so does the reference here: the framing
 *    never depends on the method, and CONNECT is not a tunnel.
 *  - Between messages any CR and LF bytes are skipped (RFC 9112 §2.2).
 *  - hroute is stricter, and answers with a close, when one of its own
 *    checks fails -- each accepted only when the reference sees the same
 *    fault in the bytes (README "What the server rejects"): bare CR or LF,
 *    obs-fold, an empty field name or whitespace before a colon in the
 *    header section; the request line, header section or field count over
 *    the limits (414, 431); a missing, repeated or malformed Host; an
 *    Expect other than 100-continue (417); a transfer coding other than
 *    chunked (501); a version other than 1.0 and 1.1 (505) or none; control
 *    bytes, space, DEL or '#' in the target; a body over the limit, or
 *    chunked framing out of proportion to its data (413); bare CR or LF,
 *    obs-fold or an empty name in the chunked framing, and chunk data not
 *    followed by CRLF (llhttp 8.1 skips the two bytes after chunk data
 *    unread); a trailer section over the field count or the header limit
 *    (431, judged at each line's end).  The router's path rules are the
 *    router's, checked by fuzz_router: a path it refuses is a 400 on the
 *    keep-alive path, as a 404 is (framing is not in doubt), so the
 *    connection must go on as llhttp's does.  A message that the input
 *    ends inside of is cut short, as hroute logs it: a header section
 *    (400 and close) or a body (a client abort, no answer).
 *  - hroute reads a header section whole before llhttp sees it: where
 *    llhttp rejects a section part-way, hroute may still be waiting for
 *    its end when the input stops.
 *  - Persistence: hroute ends the connection after an HTTP/1.0 message
 *    with Transfer-Encoding (RFC 9112 §6.1) or with "close" among its
 *    Connection tokens (llhttp keeps an HTTP/1.0 connection open when
 *    "keep-alive" is there too), and after answering a request that
 *    expects 100-continue with a body it did not read (RFC 9110 §10.1.1):
 *    that body's bytes, which llhttp may find complete, incomplete or
 *    malformed, are not judged; the same after a message with
 *    Transfer-Encoding answered before its body (/stream): an early
 *    answer ends a chunked body by closing (http.h); and after the
 *    router's answer to a request whose Content-Length is over the body
 *    limit, given before its body, which is skipped up to 256 KiB and
 *    otherwise ends the connection.  A Connection
 *    field among the trailers ends the connection for llhttp but not for
 *    hroute: trailers do not change how the connection is handled (RFC
 *    9110 §6.5.1).
 *
 * hroute may never complete a message llhttp does not, accept one llhttp
 * rejects, or see a different method, target or body length (/echo sends
 * the body back).
 *
 * It found that hroute's "chunked framing out of proportion to its data"
 * (413) depended on where reads ended: the rule was tested after each read
 * only, when data, or a fault, later in the same read had already been
 * parsed.  llhttp is now given body bytes in pieces that end one byte past
 * what the rule still allows (h1.c body_piece), so the excess is found at
 * the byte that makes it, which the byte stream alone decides.  HROUTE_DIFF_TRACE prints each message's two
 * verdicts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#include "server/internal.h"
#include "fuzzroutes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The server's limits, which the reference's checks use too. */
#define MAX_LINE 512
#define MAX_HEAD 2048
#define MAX_FIELDS 16
#define MAX_BODY 4096
#define MAX_MSGS 64
#define OUT_CAP (1u << 20)

static const char fixed_date[] = "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n";

/* ---- what hroute did ------------------------------------------------------ */

typedef struct {
  int status;               /* as sent (access log) */
  int failed;               /* answered through hr__h1_fail */
  char reason[128];         /* its reason, when failed */
  char method[32];
  size_t method_len;        /* full length; method[] holds a prefix */
  uint64_t target_hash;
  size_t target_len;
  int echo;                 /* POST or PUT /echo: the body comes back */
  uint64_t bytes;           /* response body bytes */
} h_msg_t;

typedef struct {
  char *out;
  size_t out_len;
  int out_cut; /* more than OUT_CAP bytes */
  h_msg_t msgs[MAX_MSGS];
  size_t nmsgs;
  int pending_fail; /* a log line that the next access entry belongs to */
  int pending_status;
  char pending_reason[128];
} h_run_t;

static uv_loop_t loop;
static hr_server_t *server;
static hr__worker_t *worker;
static h_run_t *cur;

static uint64_t fnv(const char *p, size_t n) {
  uint64_t h = 14695981039346656037u;
  while (n--) h = (h ^ (unsigned char)*p++) * 1099511628211u;
  return h;
}

static void sink(void *ctx, const char *p, size_t n) {
  (void)ctx;
  if (cur->out_len + n > OUT_CAP) {
    cur->out_cut = 1;
    n = OUT_CAP - cur->out_len;
  }
  memcpy(cur->out + cur->out_len, p, n);
  cur->out_len += n;
}

static void on_log(void *ctx, hr_log_level_t level, const char *msg) {
  static const char pre[] = "answered ";
  static const char mid[] = " and closing the connection: ";
  static const char left[] = "client closed the connection in the middle of a body";
  const char *p;
  (void)ctx;
  (void)level;
  if (cur != NULL && strcmp(msg, left) == 0) {
    /* The input ended inside a body: no answer (a client abort), the
     * message is cut short as for a header section. */
    cur->pending_fail = 1;
    cur->pending_status = 0; /* the access log's status stays */
    snprintf(cur->pending_reason, sizeof cur->pending_reason,
             "connection closed in the middle of a body");
    return;
  }
  if (cur == NULL || strncmp(msg, pre, sizeof pre - 1) != 0) return;
  p = strstr(msg, mid);
  if (p == NULL) return;
  cur->pending_fail = 1;
  cur->pending_status = atoi(msg + sizeof pre - 1);
  snprintf(cur->pending_reason, sizeof cur->pending_reason, "%s", p + sizeof mid - 1);
}

static void on_access(void *ctx, const char *line, size_t len, const hr_access_entry_t *e) {
  h_msg_t *m;
  (void)ctx;
  (void)line;
  (void)len;
  if (cur == NULL || cur->nmsgs == MAX_MSGS) return;
  m = &cur->msgs[cur->nmsgs++];
  memset(m, 0, sizeof(*m));
  m->status = e->status;
  if (cur->pending_fail) {
    m->failed = 1;
    if (cur->pending_status != 0) m->status = cur->pending_status;
    memcpy(m->reason, cur->pending_reason, sizeof m->reason);
    cur->pending_fail = 0;
  }
  m->method_len = e->method.len;
  if (e->method.len)
    memcpy(m->method, e->method.ptr,
           e->method.len < sizeof m->method ? e->method.len : sizeof m->method);
  m->target_len = e->target.len;
  m->target_hash = fnv(e->target.ptr, e->target.len);
  m->echo = hr_span_eq(e->target, HR_SPAN_LIT("/echo")) &&
            (hr_span_eq(e->method, HR_SPAN_LIT("POST")) ||
             hr_span_eq(e->method, HR_SPAN_LIT("PUT")));
  m->bytes = e->bytes;
}

static void setup(void) {
  hr_router_t *router;
  hr_server_options_t so;
  uv_loop_init(&loop);
  hr_router_new(&router, NULL);
  fz_add_request_routes(router);
  hr_server_options_init(&so);
  so.max_header_bytes = MAX_HEAD;
  so.max_request_line_bytes = MAX_LINE;
  so.max_header_fields = MAX_FIELDS;
  so.max_body_bytes = MAX_BODY;
  so.header_timeout_ms = so.keepalive_timeout_ms = 3600000;
  so.body_timeout_ms = so.write_timeout_ms = 3600000;
  so.access_log = on_access;
  so.log = on_log;
  hr_server_new(&server, router, &so);
  hr__server_attach_virtual(server, &loop);
  worker = hr__server_worker(server, 0);
  uv_timer_stop(&worker->date_timer);
  memcpy(worker->date, fixed_date, sizeof fixed_date - 1);
  worker->date_len = sizeof fixed_date - 1;
}

/* Piece lengths: `mode` 0 whole, 1 single bytes, 2 `step` bytes, 3 drawn
 * from 1..32 (mostly 1..4) by a generator whose state is `rng`. */
typedef struct {
  int mode;
  size_t step;
  uint32_t rng;
} splitter_t;

static size_t next_piece(splitter_t *s, size_t left) {
  size_t n;
  switch (s->mode) {
    case 0: n = left; break;
    case 1: n = 1; break;
    case 2: n = s->step; break;
    default:
      s->rng = s->rng * 1103515245u + 12345u;
      n = (s->rng >> 16) % 8 == 0 ? (s->rng >> 8) % 32 + 1 : (s->rng >> 8) % 4 + 1;
      break;
  }
  return n < left ? n : left;
}

/* Feeds the input to a new connection and runs it to its end.  The loop
 * runs only when the connection takes no more bytes (and at the end), the
 * same byte offsets in every mode; a closed connection is never touched
 * after a loop turn (w->nconns tells whether it is still there). */
static void run_hroute(h_run_t *r, const uint8_t *p, size_t size, splitter_t *sp) {
  hr__conn_t *c;
  size_t off = 0;
  int i;
  cur = r;
  c = hr__vconn_new(worker, sink, NULL);
  if (c == NULL) abort();
  while (off < size) {
    size_t n = next_piece(sp, size - off), took;
    took = hr__vconn_feed(c, (const char *)p + off, n);
    if (took == 0) {
      if (hr__vconn_closed(c)) break;
      uv_run(&loop, UV_RUN_NOWAIT);
      if (worker->nconns == 0 || hr__vconn_closed(c)) break;
      took = hr__vconn_feed(c, (const char *)p + off, n);
      if (took == 0) break;
    }
    off += took;
  }
  if (worker->nconns != 0 && !hr__vconn_closed(c)) {
    uv_run(&loop, UV_RUN_NOWAIT);
    if (worker->nconns != 0 && !hr__vconn_closed(c)) hr__vconn_eof(c);
  }
  for (i = 0; i < 4 && worker->nconns != 0 && !hr__vconn_closed(c); i++)
    uv_run(&loop, UV_RUN_NOWAIT);
  if (worker->nconns != 0 && !hr__vconn_closed(c)) hr__conn_close(c);
  for (i = 0; i < 8 && worker->nconns != 0; i++) uv_run(&loop, UV_RUN_NOWAIT);
  if (worker->nconns != 0) {
    fprintf(stderr, "differential: the connection outlived its close\n");
    abort();
  }
  cur = NULL;
}

/* ---- printing a finding ---------------------------------------------------- */

static void print_bytes(const char *label, const char *p, size_t n) {
  size_t i, lim = n < 3000 ? n : 3000;
  fprintf(stderr, "%s (%zu bytes):\n  ", label, n);
  for (i = 0; i < lim; i++) {
    unsigned char ch = (unsigned char)p[i];
    if (ch == '\n')
      fputs("\\n\n  ", stderr);
    else if (ch == '\r')
      fputs("\\r", stderr);
    else if (ch == '\\')
      fputs("\\\\", stderr);
    else if (ch < 0x20 || ch >= 0x7f)
      fprintf(stderr, "\\x%02x", ch);
    else
      fputc(ch, stderr);
  }
  fprintf(stderr, "%s\n", lim < n ? "..." : "");
}

/* ---- llhttp on its own ------------------------------------------------------ */

typedef enum { L_COMPLETE, L_REJECT, L_INCOMPLETE } l_outcome_t;

typedef struct {
  l_outcome_t outcome;
  llhttp_errno_t err;
  const char *reason;
  size_t start, end; /* the message's bytes (end: where llhttp stopped) */
  size_t method_len;
  hr_span_t target;
  int head_done;     /* on_headers_complete ran */
  size_t head_end;   /* offset after the header section (head_done) */
  unsigned major, minor;
  int keep_alive;    /* llhttp_should_keep_alive at the message's end */
  int chunked, has_length;
  uint64_t content_length;
  /* Field facts, from the header section only (not trailers). */
  size_t hosts;
  int host_bad, expect_continue, expect_other, te, te_other, close_token;
  int trailer_connection; /* a Connection field among the trailers */
  /* Trailer field lines and their bytes (name + value as llhttp gives
   * them, 4 a line), counted at each line's end, and whether the section
   * went over MAX_FIELDS or MAX_HEAD there (hroute's 431). */
  size_t trailer_lines, trailer_bytes;
  int trailer_over;
  /* Body: data bytes, and the framing rules over the bytes between them. */
  uint64_t body_data;
  const char *body_start; /* p + head_end */
  const char *gap;   /* first framing byte not yet checked */
  int fr_cr, fr_line_start, fr_after_data, framing_bad;
  /* Framing before some data over the header limit plus the data before
   * it (hroute's 413 rule, judged before each piece of data). */
  int framing_excess;
  /* A chunk whose size line would take the body past MAX_BODY (hroute's
   * 413 at the size line). */
  int chunk_over;
  /* The field being collected. */
  hr_span_t name, value;
  int in_value;
} l_msg_t;

static int is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int span_is(hr_span_t s, const char *lit) {
  size_t i, n = strlen(lit);
  if (s.len != n) return 0;
  for (i = 0; i < n; i++) {
    char a = s.ptr[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != lit[i]) return 0;
  }
  return 1;
}

static hr_span_t trim(hr_span_t s) {
  while (s.len && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) s.ptr++, s.len--;
  while (s.len && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t')) s.len--;
  return s;
}

/* Calls f for each non-empty element of a comma-separated list; returns 1
 * when f said yes for one. */
static int list_any(hr_span_t v, int (*f)(hr_span_t)) {
  size_t i = 0, from = 0;
  for (i = 0; i <= v.len; i++) {
    if (i == v.len || v.ptr[i] == ',') {
      hr_span_t item = trim((hr_span_t){v.ptr + from, i - from});
      if (item.len && f(item)) return 1;
      from = i + 1;
    }
  }
  return 0;
}
static int not_chunked(hr_span_t s) { return !span_is(s, "chunked"); }
static int is_close(hr_span_t s) { return span_is(s, "close"); }

/* Host = uri-host [ ":" port ] (RFC 3986 §3.2.2), written out apart from
 * src/util/text.c. */
static int authority_bad(hr_span_t a) {
  size_t i = 0;
  if (a.len == 0) return 1;
  if (a.ptr[0] == '[') {
    for (i = 1; i < a.len && a.ptr[i] != ']'; i++)
      if (!strchr("0123456789abcdefABCDEF:.vV", a.ptr[i]) || a.ptr[i] == 0) return 1;
    if (i == a.len || i == 1) return 1;
    i++;
  } else {
    for (; i < a.len && a.ptr[i] != ':'; i++) {
      unsigned char c = (unsigned char)a.ptr[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            (c != 0 && strchr("-._~%!$&'()+,;=", c) != NULL)))
        return 1;
    }
    if (i == 0) return 1;
  }
  if (i == a.len) return 0;
  if (a.ptr[i++] != ':') return 1;
  for (; i < a.len; i++)
    if (a.ptr[i] < '0' || a.ptr[i] > '9') return 1;
  return 0;
}

static l_msg_t *lm(llhttp_t *p) { return p->data; }

static void extend(hr_span_t *s, const char *at, size_t len) {
  if (s->ptr == NULL || s->len == 0)
    s->ptr = at, s->len = len;
  else
    s->len = (size_t)(at + len - s->ptr);
}

static int l_url(llhttp_t *p, const char *at, size_t len) {
  extend(&lm(p)->target, at, len);
  return 0;
}

static int l_field(llhttp_t *p, const char *at, size_t len) {
  l_msg_t *m = lm(p);
  if (m->in_value) {
    m->name.len = m->value.len = 0;
    m->in_value = 0;
  }
  extend(&m->name, at, len);
  return 0;
}

static int l_value(llhttp_t *p, const char *at, size_t len) {
  extend(&lm(p)->value, at, len);
  return 0;
}

static int l_value_complete(llhttp_t *p) {
  l_msg_t *m = lm(p);
  hr_span_t v = trim(m->value);
  m->in_value = 1;
  if (m->head_done) { /* a trailer field */
    /* llhttp lets a Connection field in the trailers end the connection;
     * hroute, as RFC 9110 §6.5.1 asks, does not let trailers change how
     * the connection is handled. */
    if (span_is(m->name, "connection")) m->trailer_connection = 1;
    m->trailer_lines++;
    m->trailer_bytes += m->name.len + m->value.len + 4;
    if (m->trailer_lines > MAX_FIELDS || m->trailer_bytes > MAX_HEAD) m->trailer_over = 1;
    m->name.len = m->value.len = 0;
    m->name.ptr = m->value.ptr = NULL;
    return 0;
  }
  if (span_is(m->name, "host")) {
    m->hosts++;
    if (v.len && authority_bad(v)) m->host_bad = 1;
  } else if (span_is(m->name, "expect")) {
    if (span_is(v, "100-continue"))
      m->expect_continue = 1;
    else
      m->expect_other = 1;
  } else if (span_is(m->name, "transfer-encoding")) {
    m->te = 1;
    if (list_any(v, not_chunked)) m->te_other = 1;
  } else if (span_is(m->name, "connection")) {
    if (list_any(v, is_close)) m->close_token = 1;
  }
  m->name.len = m->value.len = 0;
  m->name.ptr = m->value.ptr = NULL;
  return 0;
}

static int l_field_complete(llhttp_t *p) {
  l_msg_t *m = lm(p);
  m->in_value = 1; /* a value may be empty: on_header_value never runs */
  m->value.len = 0;
  m->value.ptr = NULL;
  return 0;
}

static int l_headers_complete(llhttp_t *p) {
  l_msg_t *m = lm(p);
  m->head_done = 1;
  m->major = p->http_major;
  m->minor = p->http_minor;
  m->chunked = (p->flags & F_CHUNKED) != 0;
  m->has_length = (p->flags & F_CONTENT_LENGTH) != 0;
  m->content_length = p->content_length;
  m->gap = m->body_start;
  m->fr_line_start = 1;
  return 0;
}

/* The framing rules over bytes between chunk data: lines end in CRLF, none
 * starts with SP, HTAB or ':', and chunk data is followed by CRLF (llhttp
 * 8.1 skips the two bytes after chunk data unread). */
static void framing_scan(l_msg_t *m, const char *from, const char *to) {
  for (; from < to && !m->framing_bad; from++) {
    unsigned char c = (unsigned char)*from;
    if (m->fr_after_data) { /* chunk data ends with CRLF, nothing else */
      m->fr_after_data = 0;
      if (c != '\r') m->framing_bad = 1;
      m->fr_cr = 1;
    } else if (m->fr_cr) {
      m->fr_cr = 0;
      if (c != '\n') m->framing_bad = 1;
      m->fr_line_start = 1;
    } else if (c == '\r') {
      m->fr_cr = 1;
    } else if (c == '\n') {
      m->framing_bad = 1;
    } else {
      if (m->fr_line_start && (c == ' ' || c == '\t' || c == ':')) m->framing_bad = 1;
      m->fr_line_start = 0;
    }
  }
}

static int l_body(llhttp_t *p, const char *at, size_t len) {
  l_msg_t *m = lm(p);
  if (m->chunked) {
    framing_scan(m, m->gap, at);
    if ((uint64_t)(at - m->body_start) - m->body_data > MAX_HEAD + m->body_data)
      m->framing_excess = 1;
    if (m->fr_cr) m->framing_bad = 1;
    m->fr_line_start = 0;
    m->fr_after_data = 1;
    m->gap = at + len;
  }
  m->body_data += len;
  return 0;
}

static int l_chunk_header(llhttp_t *p) {
  l_msg_t *m = lm(p);
  if (p->content_length > MAX_BODY - (m->body_data < MAX_BODY ? m->body_data : MAX_BODY))
    m->chunk_over = 1;
  return 0;
}

static int l_message_complete(llhttp_t *p) {
  lm(p)->keep_alive = llhttp_should_keep_alive(p);
  return HPE_PAUSED;
}

static const llhttp_settings_t l_settings = {
    .on_url = l_url,
    .on_header_field = l_field,
    .on_header_value = l_value,
    .on_header_field_complete = l_field_complete,
    .on_header_value_complete = l_value_complete,
    .on_headers_complete = l_headers_complete,
    .on_body = l_body,
    .on_chunk_header = l_chunk_header,
    .on_message_complete = l_message_complete,
};

/* Parses the message at p[*pos..size); returns 0 when no message is left. */
static int l_next(const char *p, size_t size, size_t *pos, l_msg_t *m) {
  size_t i = *pos, k;
  const char *q;
  llhttp_t parser;
  llhttp_errno_t e;
  while (i < size && (p[i] == '\r' || p[i] == '\n')) i++;
  if (i == size) return 0;
  memset(m, 0, sizeof(*m));
  m->start = i;
  m->end = size;
  m->outcome = L_INCOMPLETE;
  for (k = i; k < size && is_tchar((unsigned char)p[k]); k++)
    ;
  m->method_len = k - i;
  if (k == size) {
    *pos = size;
    return 1;
  }
  if (k == i || p[k] != ' ') {
    m->outcome = L_REJECT;
    m->err = HPE_INVALID_METHOD;
    m->reason = "not a token and a space";
    m->end = k;
    *pos = size;
    return 1;
  }
  /* The body starts after the first empty line (a section with bare LFs
   * is refused before its body matters). */
  for (q = p + k; q + 4 <= p + size && memcmp(q, "\r\n\r\n", 4) != 0; q++)
    ;
  m->head_end = q + 4 <= p + size ? (size_t)(q + 4 - p) : size;
  llhttp_init(&parser, HTTP_REQUEST, &l_settings);
  parser.data = m;
  llhttp_execute(&parser, "GET ", 4);
  m->body_start = p + m->head_end;
  e = llhttp_execute(&parser, p + k + 1, size - k - 1);
  if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
    m->outcome = L_COMPLETE;
    m->end = (size_t)(llhttp_get_error_pos(&parser) - p);
  } else if (e != HPE_OK) {
    m->outcome = L_REJECT;
    m->err = e;
    m->reason = llhttp_get_error_reason(&parser);
    m->end = llhttp_get_error_pos(&parser) != NULL
                 ? (size_t)(llhttp_get_error_pos(&parser) - p)
                 : size;
  }
  if (m->chunked && m->gap != NULL && m->end > (size_t)(m->gap - p))
    framing_scan(m, m->gap, p + m->end);
  *pos = m->outcome == L_COMPLETE ? m->end : size;
  return 1;
}

/* ---- the reference's view of hroute's own checks ------------------------- */

typedef struct {
  long broken_at;     /* first offset breaking a line rule, or -1 */
  size_t line_len;    /* request line, CR excluded (so far) */
  int line_ended;
  size_t fields;      /* complete field lines */
  size_t head_len;    /* through the empty line; 0 when not found */
} head_facts_t;

/* The header-section line rules, written out apart from src/http/strict.c. */
static head_facts_t head_facts(const char *p, size_t n) {
  head_facts_t f = {-1, 0, 0, 0, 0};
  size_t i, line = 0, len = 0;
  int cr = 0, in_name = 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (cr) {
      cr = 0;
      if (c != '\n') {
        f.broken_at = (long)i;
        return f;
      }
      if (line == 0) {
        f.line_len = len;
        f.line_ended = 1;
      } else if (len == 0) {
        f.head_len = i + 1;
        return f;
      } else {
        f.fields++;
      }
      line++;
      len = 0;
      in_name = 0;
      continue;
    }
    if (c == '\r') {
      cr = 1;
      continue;
    }
    if (c == '\n') {
      f.broken_at = (long)i;
      return f;
    }
    if (line > 0 && len == 0) {
      if (c == ' ' || c == '\t' || c == ':') {
        f.broken_at = (long)i;
        return f;
      }
      in_name = 1;
    }
    if (in_name && c == ':') {
      in_name = 0;
    } else if (in_name && (c == ' ' || c == '\t')) {
      f.broken_at = (long)i;
      return f;
    }
    len++;
    if (line == 0) f.line_len = len;
  }
  return f;
}

/* Whether hroute's refusal for `reason` is one of its own checks that the
 * reference sees failing in this message.  -1: not one of hroute's own
 * reasons (llhttp's, as hroute ran it). */
static int own_check_holds(const char *reason, const l_msg_t *m, const char *p, size_t size) {
  size_t avail = size - m->start;
  head_facts_t f = head_facts(p + m->start, avail);
  int head = m->head_done;
  if (strstr(reason, "in the header section") != NULL)
    return f.broken_at >= 0 && f.broken_at < MAX_HEAD;
  if (strcmp(reason, "request line longer than the limit") == 0)
    return f.line_len > MAX_LINE || (!f.line_ended && avail > MAX_HEAD);
  if (strstr(reason, "header section longer than the limit") == reason)
    return f.fields > MAX_FIELDS || f.head_len > MAX_HEAD ||
           (f.head_len == 0 && avail > MAX_HEAD);
  if (strcmp(reason, "missing, repeated or invalid Host field") == 0)
    return head && (m->hosts > 1 || m->host_bad || (m->minor == 1 && m->hosts == 0));
  if (strcmp(reason, "unsupported Expect value") == 0) return head && m->expect_other;
  if (strcmp(reason, "transfer coding other than chunked") == 0) return head && m->te_other;
  if (strcmp(reason, "unsupported HTTP version") == 0)
    return head && !(m->major == 1 && m->minor <= 1);
  if (strcmp(reason, "request line without an HTTP version") == 0)
    return head && m->major == 0;
  if (strcmp(reason, "invalid byte or fragment in the request target") == 0) {
    size_t i;
    for (i = 0; i < m->target.len; i++) {
      unsigned char c = (unsigned char)m->target.ptr[i];
      if (c <= 0x20 || c == 0x7f || c == '#') return 1;
    }
    return 0;
  }
  if (strcmp(reason, "body larger than the limit") == 0)
    return head && ((m->has_length && m->content_length > MAX_BODY) || m->body_data > MAX_BODY);
  if (strcmp(reason, "chunk larger than the body limit") == 0)
    return head && m->chunked && m->chunk_over;
  if (strcmp(reason, "chunked framing out of proportion to its data") == 0)
    return head && m->chunked &&
           (m->framing_excess || m->end - m->head_end - m->body_data > MAX_HEAD + m->body_data);
  if (strcmp(reason, "bare CR or LF, obs-fold or empty name in chunked framing") == 0)
    return head && m->chunked && m->framing_bad;
  if (strcmp(reason, "trailer section longer than the limit") == 0)
    return head && m->chunked && m->trailer_over;
  return -1;
}

static int is_cut_short(const char *reason) {
  static const char pre[] = "connection closed in the middle of a ";
  return strncmp(reason, pre, sizeof pre - 1) == 0;
}

static const char *l_name(const l_msg_t *m) {
  switch (m->outcome) {
    case L_COMPLETE: return "complete";
    case L_REJECT: return "rejected";
    default: return "waiting for more bytes";
  }
}

static void disagree(const char *what, const char *p, size_t size, size_t k,
                     const l_msg_t *m, const h_run_t *r) {
  const h_msg_t *h = k < r->nmsgs ? &r->msgs[k] : NULL;
  fprintf(stderr, "differential: hroute and llhttp disagree on message %zu: %s\n", k, what);
  fprintf(stderr, "  llhttp: %s", l_name(m));
  if (m->outcome == L_REJECT)
    fprintf(stderr, " (%s: %s)", llhttp_errno_name(m->err), m->reason ? m->reason : "");
  fprintf(stderr, ", bytes %zu..%zu\n", m->start, m->end);
  if (h != NULL)
    fprintf(stderr, "  hroute: status %d%s%s\n", h->status, h->failed ? ", closing: " : "",
            h->failed ? h->reason : "");
  else
    fprintf(stderr, "  hroute: nothing\n");
  print_bytes("input", p, size);
  print_bytes("hroute's output", r->out, r->out_len);
  abort();
}

/* Compares hroute's verdicts (run `r` over the whole input) with llhttp's. */
static void compare_llhttp(const char *p, size_t size, const h_run_t *r) {
  static int trace = -1;
  size_t pos = 0, k;
  l_msg_t m;
  if (trace < 0) trace = getenv("HROUTE_DIFF_TRACE") != NULL;
  for (k = 0; k < MAX_MSGS && l_next(p, size, &pos, &m); k++) {
    const h_msg_t *h = k < r->nmsgs ? &r->msgs[k] : NULL;
    int own, cut, rest, early;
    size_t i;
    if (h == NULL) disagree("hroute answered nothing", p, size, k, &m, r);
    /* Expecting 100-continue with a body: hroute may answer before the body
     * (no route, or a streaming handler that does not read it), then close
     * without judging the body. */
    early = m.head_done && m.expect_continue &&
            (m.chunked || (m.has_length && m.content_length > 0));
    /* /stream answers before its body.  An answer that leaves a chunked
     * body behind ends the connection (the server will not read an
     * unbounded body it no longer needs), as does HTTP/1.0 with
     * Transfer-Encoding, faulty framing (RFC 9112 §6.1): the body is not
     * judged.  A Content-Length body is read and dropped (up to 256 KiB,
     * more than an input here holds), so it is judged as any other. */
    early = early || (m.head_done && m.te && hr_span_eq(m.target, HR_SPAN_LIT("/stream")));
    /* A Content-Length over the limit: a 413 (one of hroute's own checks)
     * or, for a request no route takes, the router's answer at once,
     * before the body (issue 24), which then ends the connection when more
     * than 256 KiB of it is left to skip. */
    early = early || (m.head_done && m.has_length && m.content_length > MAX_BODY);
    if (trace) {
      fprintf(stderr, "message %zu: llhttp %s", k, l_name(&m));
      if (m.outcome == L_REJECT) fprintf(stderr, " (%s)", m.reason ? m.reason : "");
      fprintf(stderr, "; hroute %d%s%s\n", h->status, h->failed ? ", closing: " : "",
              h->failed ? h->reason : "");
    }
    cut = h->failed && is_cut_short(h->reason);
    own = h->failed && !cut ? own_check_holds(h->reason, &m, p, size) : -1;
    if (h->failed && !cut && own == 0)
      disagree("hroute's own check does not hold", p, size, k, &m, r);
    switch (m.outcome) {
      case L_COMPLETE:
        if (cut) disagree("hroute waits for bytes llhttp does not need", p, size, k, &m, r);
        if (h->failed && own < 0) disagree("hroute's llhttp refused it", p, size, k, &m, r);
        break;
      case L_REJECT:
        if (!h->failed && !(early && r->nmsgs == k + 1))
          disagree("hroute accepted it", p, size, k, &m, r);
        if (cut && m.head_done)
          disagree("hroute waits for a body llhttp refused", p, size, k, &m, r);
        break;
      case L_INCOMPLETE:
        if (!h->failed && !early)
          disagree("hroute completed a message llhttp did not", p, size, k, &m, r);
        if (h->failed && !cut && own < 0)
          disagree("hroute's llhttp refused it", p, size, k, &m, r);
        break;
    }
    if (h->failed || m.outcome != L_COMPLETE) {
      if (r->nmsgs > k + 1) disagree("hroute went on after it", p, size, k, &m, r);
      return;
    }
    /* Both took the message: the same one? */
    if (h->method_len != m.method_len ||
        memcmp(h->method, p + m.start,
               m.method_len < sizeof h->method ? m.method_len : sizeof h->method) != 0 ||
        h->target_len != m.target.len || h->target_hash != fnv(m.target.ptr, m.target.len))
      disagree("a different method or target", p, size, k, &m, r);
    if (h->echo && h->status == 200 && h->bytes != m.body_data)
      disagree("a different body", p, size, k, &m, r);
    if (k + 1 == MAX_MSGS) return; /* hroute's list is full */
    for (rest = 0, i = pos; i < size && !rest; i++) rest = p[i] != '\r' && p[i] != '\n';
    if (!rest) {
      k++;
      break;
    }
    if (r->nmsgs == k + 1) {
      int intended = (m.minor == 0 && (m.te || m.close_token)) || early;
      if (m.keep_alive && !intended)
        disagree("hroute closed a persistent connection", p, size, k, &m, r);
      return;
    }
    if (!m.keep_alive && !m.trailer_connection)
      disagree("hroute kept a connection llhttp ends", p, size, k, &m, r);
  }
  if (k < MAX_MSGS && r->nmsgs > k) disagree("hroute answered more messages", p, size, k, &m, r);
}

/* ---- the target ---------------------------------------------------------- */

static h_run_t runs[4];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *names[4] = {"whole", "1-byte pieces", "fixed pieces", "varied pieces"};
  size_t i;
  if (server == NULL) setup();
  if (size < 1) return 0;
  for (i = 0; i < 4; i++) {
    splitter_t sp = {(int)i, (size_t)data[0] % 64 + 1, (uint32_t)data[0] * 2654435761u + 1};
    if (runs[i].out == NULL && (runs[i].out = malloc(OUT_CAP)) == NULL) abort();
    runs[i].out_len = 0;
    runs[i].out_cut = 0;
    runs[i].nmsgs = 0;
    runs[i].pending_fail = 0;
    run_hroute(&runs[i], data + 1, size - 1, &sp);
    if (i > 0 && (runs[i].out_len != runs[0].out_len || runs[i].out_cut != runs[0].out_cut ||
                  memcmp(runs[i].out, runs[0].out, runs[0].out_len) != 0)) {
      fprintf(stderr, "differential: the answer depends on the split (%s, step %zu)\n",
                      names[i], sp.step);
      print_bytes("input", (const char *)data + 1, size - 1);
      print_bytes("output, fed whole", runs[0].out, runs[0].out_len);
      print_bytes("output, split", runs[i].out, runs[i].out_len);
      abort();
    }
  }
  compare_llhttp((const char *)data + 1, size - 1, &runs[0]);
  return 0;
}
