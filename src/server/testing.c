/* SPDX-License-Identifier: MIT */
/*
 * The in-process test client (include/hroute/testing.h): a virtual server
 * (hr__server_attach_virtual, one worker on the client's loop) and, per
 * request, a connection over the sink transport.  The request is written
 * as HTTP/1.1 bytes and fed as if read; what the server writes goes to
 * llhttp in response mode as it comes, through the same callbacks a client
 * library would use.
 */
#include <stdlib.h>
#include <string.h>

#include <llhttp.h>

#include "hroute/testing.h"
#include "server/internal.h"

#define DEFAULT_TIMEOUT_MS 10000u

struct hr_test_s {
  uv_loop_t loop;
  hr_server_t *server;
  int shut; /* the server's shutdown callback ran */
};

/* Growable bytes (the client's own memory: libc, as a test's would be). */
typedef struct buf_s {
  char *p;
  size_t len, cap;
} buf_t;

static int buf_put(buf_t *b, const void *p, size_t n) {
  if (b->cap - b->len < n + 1) {
    size_t cap = b->cap ? b->cap : 256;
    char *q;
    while (cap - b->len < n + 1) cap *= 2;
    if ((q = realloc(b->p, cap)) == NULL) return HR_ENOMEM;
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, p, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

static int buf_str(buf_t *b, const char *s) { return buf_put(b, s, strlen(s)); }

/* ---- the response, as llhttp reads it ---------------------------------------- */

typedef struct rx_s {
  llhttp_t parser;
  llhttp_settings_t settings;
  hr_test_response_t *res;
  buf_t name, value, body;
  size_t fcap, tcap;
  int head;      /* the request was HEAD: no body follows */
  int in_fields; /* between a response's status line and its end */
  int done;      /* a final response is complete */
  int err;       /* HR_ENOMEM, or HR_EPARSE */
} rx_t;

static void fields_free(hr_field_t *f, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) free((void *)f[i].name.ptr); /* value: same block */
  free(f);
}

/* Appends the field in rx->name/value to the fields, or after the header
 * section to the trailers: one block "name\0value\0". */
static int field_done(rx_t *rx) {
  hr_test_response_t *res = rx->res;
  int trailer = !rx->in_fields;
  hr_field_t **arr = trailer ? &res->trailers : &res->fields;
  size_t *n = trailer ? &res->ntrailers : &res->nfields;
  size_t *cap = trailer ? &rx->tcap : &rx->fcap;
  char *blk;
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    hr_field_t *f = realloc(*arr, c * sizeof(*f));
    if (f == NULL) return HR_ENOMEM;
    *arr = f;
    *cap = c;
  }
  if ((blk = malloc(rx->name.len + rx->value.len + 2)) == NULL) return HR_ENOMEM;
  memcpy(blk, rx->name.p ? rx->name.p : "", rx->name.len + 1);
  memcpy(blk + rx->name.len + 1, rx->value.p ? rx->value.p : "", rx->value.len + 1);
  (*arr)[*n].name.ptr = blk;
  (*arr)[*n].name.len = rx->name.len;
  (*arr)[*n].value.ptr = blk + rx->name.len + 1;
  (*arr)[*n].value.len = rx->value.len;
  (*n)++;
  rx->name.len = rx->value.len = 0;
  return 0;
}

static rx_t *rx_of(llhttp_t *p) { return p->data; }

static int fail(rx_t *rx, int err) {
  rx->err = err;
  return HPE_USER;
}

static int on_message_begin(llhttp_t *p) {
  rx_t *rx = rx_of(p);
  rx->in_fields = 1;
  return 0;
}

static int on_field(llhttp_t *p, const char *at, size_t n) {
  return buf_put(&rx_of(p)->name, at, n) ? fail(rx_of(p), HR_ENOMEM) : 0;
}

static int on_value(llhttp_t *p, const char *at, size_t n) {
  return buf_put(&rx_of(p)->value, at, n) ? fail(rx_of(p), HR_ENOMEM) : 0;
}

static int on_value_complete(llhttp_t *p) {
  return field_done(rx_of(p)) ? fail(rx_of(p), HR_ENOMEM) : 0;
}

static int on_headers_complete(llhttp_t *p) {
  rx_t *rx = rx_of(p);
  rx->res->status = p->status_code;
  rx->in_fields = 0;
  if (p->status_code == 101) {
    rx->done = 1;
    return 2; /* an upgrade: nothing after it is HTTP */
  }
  /* A response to HEAD has no content (RFC 9110 §9.3.2). */
  return rx->head && p->status_code >= 200 ? 1 : 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  return buf_put(&rx_of(p)->body, at, n) ? fail(rx_of(p), HR_ENOMEM) : 0;
}

static int on_message_complete(llhttp_t *p) {
  rx_t *rx = rx_of(p);
  hr_test_response_t *res = rx->res;
  if (p->status_code >= 100 && p->status_code < 200) {
    /* An interim response: forget it, the final one follows. */
    fields_free(res->fields, res->nfields);
    res->fields = NULL;
    res->nfields = 0;
    rx->fcap = 0;
    return 0;
  }
  rx->done = 1;
  return HPE_PAUSED; /* what follows (nothing should) is not read */
}

static void rx_init(rx_t *rx, hr_test_response_t *res, int head) {
  memset(rx, 0, sizeof(*rx));
  memset(res, 0, sizeof(*res));
  rx->res = res;
  rx->head = head;
  llhttp_settings_init(&rx->settings);
  rx->settings.on_message_begin = on_message_begin;
  rx->settings.on_header_field = on_field;
  rx->settings.on_header_value = on_value;
  rx->settings.on_header_value_complete = on_value_complete;
  rx->settings.on_headers_complete = on_headers_complete;
  rx->settings.on_body = on_body;
  rx->settings.on_message_complete = on_message_complete;
  llhttp_init(&rx->parser, HTTP_RESPONSE, &rx->settings);
  rx->parser.data = rx;
}

/* The server's output: parsed as it comes (the sink transport's callback). */
static void on_output(void *ctx, const char *p, size_t n) {
  rx_t *rx = ctx;
  llhttp_errno_t e;
  if (rx->done || rx->err || n == 0) return;
  e = llhttp_execute(&rx->parser, p, n);
  if (e != HPE_OK && e != HPE_PAUSED && e != HPE_PAUSED_UPGRADE && !rx->err)
    rx->err = HR_EPARSE;
}

/* The connection ended: a response delimited by the close ends here. */
static void rx_eof(rx_t *rx) {
  if (rx->done || rx->err) return;
  if (llhttp_finish(&rx->parser) != HPE_OK || !rx->done) rx->err = HR_ECLOSED;
}

/* ---- the request ------------------------------------------------------------- */

static int is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int token_ok(const char *p, size_t n) {
  size_t i;
  if (n == 0) return 0;
  for (i = 0; i < n; i++)
    if (!is_tchar((unsigned char)p[i])) return 0;
  return 1;
}

/* No control bytes (HTAB allowed in values), no DEL; a target also no
 * space. */
static int text_ok(const char *p, size_t n, int target) {
  size_t i;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == 0x7f || (c < 0x20 && (target || c != '\t')) || (target && c == ' ')) return 0;
  }
  return 1;
}

static int names(const hr_test_request_t *r, const char *name) {
  size_t i;
  for (i = 0; i < r->nfields; i++)
    if (hr_span_eq_nocase(r->fields[i].name, hr_span_cstr(name))) return 1;
  return 0;
}

/* The request's bytes.  Returns 0, HR_EINVAL or HR_ENOMEM. */
static int compose(const hr_test_request_t *r, buf_t *b) {
  const char *method = r->method ? r->method : "GET";
  const char *host = r->host ? r->host : "test";
  size_t i;
  int rc = 0;
  if (r->target == NULL || r->target[0] == '\0' || !token_ok(method, strlen(method)) ||
      !text_ok(r->target, strlen(r->target), 1) || !text_ok(host, strlen(host), 0) ||
      (r->nfields && r->fields == NULL) || (r->body_len && r->body == NULL))
    return HR_EINVAL;
  for (i = 0; i < r->nfields; i++)
    if (!token_ok(r->fields[i].name.ptr, r->fields[i].name.len) ||
        (r->fields[i].value.len && r->fields[i].value.ptr == NULL) ||
        !text_ok(r->fields[i].value.ptr, r->fields[i].value.len, 0))
      return HR_EINVAL;
  rc |= buf_str(b, method) | buf_str(b, " ") | buf_str(b, r->target) | buf_str(b, " HTTP/1.1\r\n");
  if (!names(r, "Host")) rc |= buf_str(b, "Host: ") | buf_str(b, host) | buf_str(b, "\r\n");
  for (i = 0; i < r->nfields; i++)
    rc |= buf_put(b, r->fields[i].name.ptr, r->fields[i].name.len) | buf_str(b, ": ") |
          buf_put(b, r->fields[i].value.ptr, r->fields[i].value.len) | buf_str(b, "\r\n");
  if ((r->body != NULL || r->body_len) && !names(r, "Content-Length") &&
      !names(r, "Transfer-Encoding")) {
    char cl[32];
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", r->body_len);
    rc |= buf_str(b, cl);
  }
  rc |= buf_str(b, "\r\n") | buf_put(b, r->body, r->body_len);
  return rc ? HR_ENOMEM : 0;
}

/* ---- the client -------------------------------------------------------------- */

int hr_test_new(hr_test_t **out, hr_router_t *router, const hr_server_options_t *opts) {
  hr_test_t *t;
  int err;
  if (out == NULL || router == NULL) return HR_EINVAL;
  *out = NULL;
  if ((t = calloc(1, sizeof(*t))) == NULL) return HR_ENOMEM;
  if ((err = uv_loop_init(&t->loop)) != 0) {
    free(t);
    return err;
  }
  if ((err = hr_server_new(&t->server, router, opts)) != 0 ||
      (err = hr__server_attach_virtual(t->server, &t->loop)) != 0) {
    hr_server_free(t->server);
    uv_loop_close(&t->loop);
    free(t);
    return err;
  }
  *out = t;
  return 0;
}

static void on_timer(uv_timer_t *h) { (void)h; /* only wakes the loop */ }

/* Feeds the request and runs the loop until the response is complete, the
 * connection closed or the time is up. */
static int exchange(hr_test_t *t, hr__conn_t *c, const buf_t *req, rx_t *rx,
                    unsigned timeout_ms) {
  uv_timer_t timer;
  uint64_t deadline;
  size_t off = 0;
  int rc = 0;
  uv_update_time(&t->loop);
  deadline = uv_now(&t->loop) + timeout_ms;
  uv_timer_init(&t->loop, &timer);
  for (;;) {
    if (!hr__vconn_closed(c) && off < req->len) off += hr__vconn_feed(c, req->p + off, req->len - off);
    if (rx->done || rx->err) break;
    if (hr__vconn_closed(c)) {
      rx_eof(rx);
      break;
    }
    uv_update_time(&t->loop);
    if (uv_now(&t->loop) >= deadline) {
      rc = UV_ETIMEDOUT;
      break;
    }
    /* Wakes the loop at the deadline if nothing else does. */
    uv_timer_start(&timer, on_timer, deadline - uv_now(&t->loop), 0);
    uv_run(&t->loop, UV_RUN_ONCE);
  }
  uv_close((uv_handle_t *)&timer, NULL);
  uv_run(&t->loop, UV_RUN_NOWAIT); /* the timer's close */
  if (rc == 0 && rx->err) rc = rx->err;
  return rc;
}

int hr_test_do(hr_test_t *t, const hr_test_request_t *req, unsigned timeout_ms,
               hr_test_response_t *out) {
  buf_t bytes = {NULL, 0, 0};
  hr__conn_t *c;
  rx_t rx;
  int rc, head;
  if (t == NULL || req == NULL || out == NULL) return HR_EINVAL;
  memset(out, 0, sizeof(*out));
  if ((rc = compose(req, &bytes)) != 0) {
    free(bytes.p);
    return rc;
  }
  head = req->method != NULL && strcmp(req->method, "HEAD") == 0;
  rx_init(&rx, out, head);
  c = hr__vconn_new(hr__server_worker(t->server, 0), on_output, &rx);
  if (c == NULL) {
    free(bytes.p);
    return HR_ENOMEM;
  }
  /* Kept allocated while this call looks at it, whatever the loop does. */
  hr__conn_hold(c);
  rc = exchange(t, c, &bytes, &rx, timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS);
  out->closed = hr__vconn_closed(c) || (rc == 0 && !llhttp_should_keep_alive(&rx.parser));
  if (!hr__vconn_closed(c)) hr__conn_close(c);
  rx.done = 1; /* anything written from here on is not this response's */
  hr__conn_unhold(c);
  uv_run(&t->loop, UV_RUN_NOWAIT); /* the connection's close callbacks */
  free(bytes.p);
  free(rx.name.p);
  free(rx.value.p);
  if (rc == 0 && rx.body.p == NULL && buf_put(&rx.body, "", 0) != 0) rc = HR_ENOMEM;
  out->body = rx.body.p;
  out->body_len = rx.body.len;
  if (rc != 0) hr_test_response_free(out);
  return rc;
}

int hr_test_get(hr_test_t *t, const char *target, hr_test_response_t *out) {
  hr_test_request_t req;
  memset(&req, 0, sizeof(req));
  req.target = target;
  return hr_test_do(t, &req, 0, out);
}

const char *hr_test_field(const hr_test_response_t *res, const char *name) {
  size_t i;
  if (res == NULL || name == NULL) return NULL;
  for (i = 0; i < res->nfields; i++)
    if (hr_span_eq_nocase(res->fields[i].name, hr_span_cstr(name))) return res->fields[i].value.ptr;
  return NULL;
}

void hr_test_response_free(hr_test_response_t *res) {
  if (res == NULL) return;
  fields_free(res->fields, res->nfields);
  fields_free(res->trailers, res->ntrailers);
  free(res->body);
  memset(res, 0, sizeof(*res));
}

static void on_shut(hr_server_t *server, void *udata) {
  (void)server;
  ((hr_test_t *)udata)->shut = 1;
}

void hr_test_free(hr_test_t *t) {
  int i;
  if (t == NULL) return;
  if (hr_server_close(t->server, 0, on_shut, t) == 0)
    /* The zero deadline and the close callbacks are due at once. */
    for (i = 0; i < 1000 && !t->shut; i++) uv_run(&t->loop, UV_RUN_NOWAIT);
  hr_server_free(t->server);
  uv_run(&t->loop, UV_RUN_NOWAIT);
  uv_loop_close(&t->loop);
  free(t);
}
