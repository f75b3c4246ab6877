/* SPDX-License-Identifier: MIT */
/*
 * examples/rest.c as a user runs it: the built program is started on a free
 * loopback port with a token and the access log on, driven over raw
 * sockets through everything its header comment promises (content
 * negotiation, validators and conditional GET, conditional PUT, the token
 * checked before a body is read, a list with query parameters, a create
 * from an HTML form, JSON answers for what the router decides, a request
 * id), then stopped with SIGTERM.  Every response is asserted exactly; the
 * access log must hold one line per response, in order; the process must
 * exit 0 (under ASan: without a leak).
 *
 * The program is $HROUTE_BINARY_DIR/rest (CMake builds it first).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "proc.h"
#include "rawclient.h"

/* What the access log must say, one line per response, in order: the
 * request line, the status and the body bytes. */
static char logged[64][128];
static size_t nlogged;

/* Sends `req` and asserts the status line and the exact body; the
 * response stays in *r when r is not NULL. */
static void exchange(rc_t *c, const char *req, const char *status, const char *body,
                     rc_response_t *r) {
  assert_int_equal(rc_send_str(c, req), 0);
  expect_response(c, status, body, r);
  assert_true(nlogged < sizeof logged / sizeof logged[0]);
  snprintf(logged[nlogged++], sizeof logged[0], "%.*s\" %.3s %zu",
           (int)strcspn(req, "\r"), req, status + 9, strlen(body));
}

static char rest_path[4096];

static void test_rest_example(void **state) {
  const char *bin = getenv("HROUTE_BINARY_DIR");
  char *argv[] = {rest_path, "--host", "127.0.0.1", "--port", "0",
                  "--token", "sekrit", "--access-log", NULL};
  proc_t p;
  const char *at, *line;
  int port, status;
  rc_t *c;
  rc_response_t r;
  char etag_put[64];
  size_t i;
  (void)state;
  assert_non_null(bin);
  snprintf(rest_path, sizeof rest_path, "%s/rest", bin);
  assert_int_equal(access(rest_path, X_OK), 0);
  proc_start(&p, argv);
  at = proc_wait_for(&p, "rest: listening on 127.0.0.1:");
  proc_wait_for(&p, " thread(s)\n");
  port = atoi(at + strlen("rest: listening on 127.0.0.1:"));
  assert_true(port > 0 && port < 65536);
  c = rc_connect(port);
  assert_non_null(c);

  /* Negotiation: JSON first, text when asked; each with its own strong tag,
   * the validators and Vary; the request id counts requests. */
  exchange(c, "GET /items/1 HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\n\r\n",
           "HTTP/1.1 200 OK", "{\"id\":1,\"version\":1,\"text\":\"Hello from hroute\"}", &r);
  expect_field(&r, "ETag", "\"1-json\"", 0);
  expect_field(&r, "Content-Type", "application/json", 0);
  expect_field(&r, "Vary", "Accept", 0);
  expect_field(&r, "Cache-Control", "max-age=60", 0);
  expect_field(&r, "X-Request-Id", "1", 0);
  {
    /* If-Modified-Since with the Last-Modified just sent: 304. */
    char req[256];
    const char *lm = rc_header(&r, "Last-Modified");
    assert_non_null(lm);
    snprintf(req, sizeof req,
             "GET /items/1 HTTP/1.1\r\nHost: t\r\nAccept: text/plain\r\n"
             "If-Modified-Since: %s\r\n\r\n", lm);
    rc_response_free(&r);
    exchange(c, req, "HTTP/1.1 304 Not Modified", "", &r);
    expect_field(&r, "ETag", "\"1-text\"", 0);
    expect_field(&r, "X-Request-Id", "2", 0);
    rc_response_free(&r);
  }
  exchange(c, "GET /items/1 HTTP/1.1\r\nHost: t\r\nAccept: text/plain;q=0.9, */*;q=0.1\r\n\r\n",
           "HTTP/1.1 200 OK", "Hello from hroute", &r);
  expect_field(&r, "ETag", "\"1-text\"", 0);
  expect_field(&r, "Content-Type", "text/plain; charset=utf-8", 0);
  rc_response_free(&r);
  /* If-None-Match with the JSON tag among others (weak comparison). */
  exchange(c, "GET /items/1 HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"0-json\", W/\"1-json\"\r\n\r\n",
           "HTTP/1.1 304 Not Modified", "", NULL);
  exchange(c, "GET /items/1 HTTP/1.1\r\nHost: t\r\nAccept: image/png\r\n\r\n",
           "HTTP/1.1 406 Not Acceptable",
           "{\"status\":406,\"error\":\"Not Acceptable: this resource is available as "
           "application/json or text/plain\"}",
           NULL);

  /* What the router decides, in JSON: a typed :id that does not convert,
   * an unknown path, a method the path does not have. */
  exchange(c, "GET /items/abc HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 404 Not Found",
           "{\"status\":404,\"error\":\"no such resource\"}", NULL);
  exchange(c, "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 404 Not Found",
           "{\"status\":404,\"error\":\"no such resource\"}", NULL);
  exchange(c,
           "POST /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Length: 0\r\n\r\n",
           "HTTP/1.1 405 Method Not Allowed",
           "{\"status\":405,\"error\":\"allowed here: GET, HEAD, OPTIONS, PUT\"}", &r);
  expect_field(&r, "Allow", "GET, HEAD, OPTIONS, PUT", 0);
  rc_response_free(&r);
  /* No route of any kind has DELETE, a standard method: 405 all the same
   * (issue 24); a method the server does not know is 501, in JSON from
   * the error-body hook. */
  exchange(c, "DELETE /items/1 HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 405 Method Not Allowed",
           "{\"status\":405,\"error\":\"allowed here: GET, HEAD, OPTIONS, PUT\"}", NULL);
  exchange(c, "BREW /items/1 HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 501 Not Implemented",
           "{\"status\":501,\"error\":\"Not Implemented\"}", NULL);

  /* A conditional PUT: the current text tag wins once, then is stale. */
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "If-Match: \"1-text\"\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\n"
           "new text",
           "HTTP/1.1 204 No Content", "", &r);
  expect_field(&r, "ETag", "\"2-text\"", 0);
  snprintf(etag_put, sizeof etag_put, "%s", rc_header(&r, "ETag"));
  rc_response_free(&r);
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "If-Match: \"1-text\"\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"
           "stale",
           "HTTP/1.1 412 Precondition Failed",
           "{\"status\":412,\"error\":\"Precondition Failed: the item has changed; GET it "
           "again\"}",
           NULL);
  exchange(c, "GET /items/1 HTTP/1.1\r\nHost: t\r\nAccept: text/plain\r\n\r\n",
           "HTTP/1.1 200 OK", "new text", &r);
  expect_field(&r, "ETag", etag_put, 0);
  rc_response_free(&r);

  /* The same text as JSON (the JSON module): {"text": ...}, no ETag (the
   * body is not one of the item's representations); a malformed body is
   * refused saying where, one without "text" with 422. */
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: application/json\r\nContent-Length: 26\r\n\r\n"
           "{\"text\": \"json \\u00e9t\u00e9\"}",
           "HTTP/1.1 204 No Content", "", &r);
  expect_no_field(&r, "ETag");
  rc_response_free(&r);
  exchange(c, "GET /items/1 HTTP/1.1\r\nHost: t\r\nAccept: text/plain\r\n\r\n",
           "HTTP/1.1 200 OK", "json \xc3\xa9t\xc3\xa9", NULL);
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: application/json\r\nContent-Length: 14\r\n\r\n"
           "{\n \"text\": 1,}",
           "HTTP/1.1 400 Bad Request",
           "{\"status\":400,\"error\":\"string or '}' expected near '}'\",\"line\":2,"
           "\"column\":12}",
           NULL);
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: application/json\r\nContent-Length: 8\r\n\r\n"
           "{\"x\": 1}",
           "HTTP/1.1 422 Unprocessable Content",
           "{\"status\":422,\"error\":\"a JSON body is {\\\"text\\\": \\\"...\\\"}\"}", NULL);
  /* Back to the text the rest of the test expects. */
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: text/plain\r\nContent-Length: 8\r\n\r\nnew text",
           "HTTP/1.1 204 No Content", "", NULL);

  /* A create from an HTML form: + and %XX decoded; then the list. */
  exchange(c,
           "POST /items HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 24\r\n\r\n"
           "text=caf%C3%A9+au+lait&x",
           "HTTP/1.1 201 Created", "", &r);
  expect_field(&r, "Location", "/items/2", 0);
  rc_response_free(&r);
  exchange(c, "GET /items/2 HTTP/1.1\r\nHost: t\r\nAccept: text/plain\r\n\r\n",
           "HTTP/1.1 200 OK", "caf\xc3\xa9 au lait", NULL);
  exchange(c, "GET /items HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 200 OK", "{\"ids\":[1,2]}",
           NULL);
  exchange(c, "GET /items?after=1&limit=5 HTTP/1.1\r\nHost: t\r\n\r\n", "HTTP/1.1 200 OK",
           "{\"ids\":[2]}", NULL);
  exchange(c, "GET /items?limit=%31%30%31 HTTP/1.1\r\nHost: t\r\n\r\n",
           "HTTP/1.1 400 Bad Request",
           "{\"status\":400,\"error\":\"after and limit are whole numbers, limit 1..100\"}",
           NULL);
  /* The highest id taken by a PUT: a create has no id left and says so
   * (it must not wrap around onto item 0, or over an existing one). */
  exchange(c,
           "PUT /items/18446744073709551615 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: text/plain\r\nContent-Length: 3\r\n\r\nmax",
           "HTTP/1.1 201 Created", "", &r);
  expect_field(&r, "Location", "/items/18446744073709551615", 0);
  rc_response_free(&r);
  exchange(c,
           "POST /items HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit\r\n"
           "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\n\r\n"
           "text=x",
           "HTTP/1.1 507 Insufficient Storage",
           "{\"status\":507,\"error\":\"no id is left after the highest one\"}", NULL);
  /* A wrong token, and one longer than any buffer: refused, no overflow. */
  exchange(c,
           "POST /items HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer sekrit-not\r\n"
           "Content-Length: 0\r\n\r\n",
           "HTTP/1.1 401 Unauthorized",
           "{\"status\":401,\"error\":\"a bearer token is needed to write\"}", NULL);
  {
    char req[1024];
    memset(req, 0, sizeof req);
    snprintf(req, sizeof req, "POST /items HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %0600d\r\n"
             "Content-Length: 0\r\n\r\n", 7);
    exchange(c, req, "HTTP/1.1 401 Unauthorized",
             "{\"status\":401,\"error\":\"a bearer token is needed to write\"}", NULL);
  }
  rc_close(c);

  /* No token: refused from the head, before the 60 KB body is sent. */
  c = rc_connect(port);
  assert_non_null(c);
  exchange(c,
           "PUT /items/1 HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
           "Content-Length: 60000\r\n\r\n",
           "HTTP/1.1 401 Unauthorized",
           "{\"status\":401,\"error\":\"a bearer token is needed to write\"}", &r);
  expect_field(&r, "WWW-Authenticate", "Bearer", 0);
  rc_response_free(&r);
  rc_close(c);

  /* A malformed request gets the JSON error body too. */
  c = rc_connect(port);
  assert_non_null(c);
  exchange(c, "GET /items HTTP/1.1\r\nHost: t\r\nNo-Colon\r\n\r\n", "HTTP/1.1 400 Bad Request",
           "{\"status\":400,\"error\":\"Bad Request\"}", NULL);
  rc_close(c);

  status = proc_stop(&p);
  if (status != 0) fail_msg("rest exited with %d; it wrote:\n%s", status, p.out);
  /* One Common Log Format line per response, in order:
   * 127.0.0.1 - - [01/Dec/2026:12:00:00 +0000] "GET /items/1 HTTP/1.1" 200 48 */
  line = strstr(p.out, " thread(s)\n") + strlen(" thread(s)\n");
  for (i = 0; i < nlogged; i++) {
    const char *eol = strchr(line, '\n'), *q;
    if (eol == NULL) fail_msg("access log line %zu missing; rest wrote:\n%s", i + 1, p.out);
    if (strncmp(line, "127.0.0.1 - - [", 15) != 0 || (q = strstr(line, "] \"")) == NULL ||
        q > eol || strncmp(q + 3, logged[i], strlen(logged[i])) != 0 ||
        q + 3 + strlen(logged[i]) != eol)
      fail_msg("access log line %zu: \"%.*s\", want ...\"%s", i + 1, (int)(eol - line), line,
               logged[i]);
    line = eol + 1;
  }
  assert_string_equal(line, "rest: SIGTERM, shutting down\nrest: stopped\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rest_example),
  };
  signal(SIGPIPE, SIG_IGN);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
