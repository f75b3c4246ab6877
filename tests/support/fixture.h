/* SPDX-License-Identifier: MIT */
/*
 * Loopback server fixture for the integration tests.  A test gets an fx_t
 * from fx_setup (its cmocka setup), adds routes to fx->router, adjusts
 * fx->opts, then starts the server on 127.0.0.1 port 0 either on worker
 * threads (fx_start: hr_server_start) or attached to a loop that runs in a
 * test-owned thread (fx_attach).  fx_teardown stops and frees everything the
 * test left, even after a failed assertion, so later tests start clean.
 *
 * Also: the handlers most tests share (fixed text, echo, an "info" line that
 * describes the request), a handler-call counter, and response assertions.
 * Handlers never call cmocka asserts: they run on a server thread.  They
 * record, and the test thread asserts.
 *
 * The protocol is the process's parameter: with HROUTE_TEST_PROTO=h2 in
 * the environment (CTest's <name>_h2 entries, see CMakeLists.txt) the
 * listener also speaks HTTP/2 with prior knowledge (hr_listen_options_t.h2
 * = HR_H2_ON) and fx_connect's connections speak HTTP/2 (rc_connect_h2):
 * the same HTTP/1.1 request text and the same response assertions run over
 * both protocols.  A test about HTTP/1.1 itself says so with fx_h1_only,
 * which skips it over HTTP/2 with the reason printed.
 */
#ifndef HR_TEST_FIXTURE_H
#define HR_TEST_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <hroute.h>
#include <uv.h>

#include "countalloc.h"
#include "rawclient.h"
#include "sync.h"

#define FX_MAX_CONNS 256

typedef struct fx_s fx_t;
typedef void (*fx_loop_fn)(fx_t *fx, void *arg);

/* The protocol fx_connect speaks. */
typedef enum fx_proto_e { FX_HTTP1, FX_HTTP2 } fx_proto_t;

/* HROUTE_TEST_PROTO: unset or "h1" FX_HTTP1, "h2" FX_HTTP2 (anything else
 * ends the process with a message).  Read once. */
fx_proto_t fx_proto(void);
/* Whether the run is over HTTP/2. */
int fx_h2(void);
/* The version as the access log and hr_request_version name it:
 * "HTTP/1.1" (11) or "HTTP/2.0" (20). */
const char *fx_version_text(void);
int fx_version(void);
/* Over HTTP/2: prints "skipped over HTTP/2: <why>" and skips the test
 * (cmocka skip(): it ends here).  Over HTTP/1.1: returns. */
void fx_h1_only(const char *why);

struct fx_s {
  hr_router_t *router;
  hr_server_t *server;
  hr_server_options_t opts;
  int port;
  int started;  /* by hr_server_start */
  int attached; /* by hr_server_attach on fx->loop */
  rc_t *conns[FX_MAX_CONNS];
  size_t nconns;
  /* attached mode */
  uv_loop_t loop;
  uv_thread_t thread;
  uv_async_t async;
  ev_t ready;
  ev_t ran;
  int attach_rc;
  fx_loop_fn fn;      /* run on the loop thread by fx_run_on_loop */
  void *fn_arg;
  int close_rc;       /* hr_server_close's result */
  int shutdown_called;
  int loop_close_rc;  /* uv_loop_close after the loop thread ended */
  void *user;         /* free for the test */
  const hr_listen_options_t *listen; /* set before fx_start: hr_server_listen_ex
                                        (h2 set to HR_H2_ON over HTTP/2) */
};

/* cmocka setup/teardown: allocate an fx_t (router with libc allocator,
 * default server options) into *state / stop and free everything. */
int fx_setup(void **state);
int fx_teardown(void **state);

/* Before fx_start: replaces fx->router with an empty one on allocator
 * `a` (a counting allocator's hook) and gives the server `a` too. */
void fx_use_allocator(fx_t *fx, const hr_allocator_t *a);

/* Starts on 127.0.0.1:0 with `nthreads` workers; asserts success. */
void fx_start(fx_t *fx, unsigned nthreads);
/* Same, without asserting: returns hr_server_new/listen/start's error. */
int fx_try_start(fx_t *fx, unsigned nthreads);
/* Graceful stop (hr_server_stop with `deadline_ms`) and free; returns the
 * stop result. */
int fx_stop(fx_t *fx, uint64_t deadline_ms);

/* Attached mode: creates a loop, runs hr_server_attach and uv_run in a new
 * thread; asserts success. */
void fx_attach(fx_t *fx);
/* Runs fn(fx, arg) on the loop thread and waits for it to return. */
void fx_run_on_loop(fx_t *fx, fx_loop_fn fn, void *arg);
/* hr_server_close(deadline) on the loop thread; waits for the shutdown
 * callback, the loop to end and uv_loop_close; asserts each. */
void fx_close_attached(fx_t *fx, uint64_t deadline_ms);
/* The shutdown callback fx_close_attached passes (udata: the fx_t); it
 * closes the fixture's async handle so the loop can end. */
void fx_on_shutdown(hr_server_t *server, void *udata);
/* After a test called hr_server_close itself with fx_on_shutdown: waits for
 * the loop thread, asserts one callback and a clean uv_loop_close. */
void fx_join_attached(fx_t *fx);

/* Connects to the server (closed at teardown unless fx_drop'ped), in the
 * run's protocol. */
rc_t *fx_connect(fx_t *fx);
/* Closes a connection early and forgets it. */
void fx_drop(fx_t *fx, rc_t *c);

void fx_stats(fx_t *fx, hr_server_stats_t *st);
/* Polls the stats until connections_active == n, up to `ms`. 1 if reached. */
int fx_wait_active(fx_t *fx, uint64_t n, unsigned ms);

/* Which counter fx_wait_stat polls. */
typedef enum fx_stat_e {
  FX_REQUESTS,
  FX_ACCEPTED,
  FX_ACTIVE,
  FX_REJECTED,
  FX_BAD_REQUESTS,
  FX_EXCHANGES /* exchanges in use: a request is being read or answered */
} fx_stat_t;
/* Polls until the counter equals n (counters may be updated just after the
 * client saw the bytes), up to `ms`.  Returns 1 if reached; the value seen
 * last is stored in *last (may be NULL). */
int fx_wait_stat(fx_t *fx, fx_stat_t which, uint64_t n, unsigned ms,
                 uint64_t *last);
/* Asserts the counter reaches exactly n within RC_TIMEOUT_MS. */
void expect_stat(fx_t *fx, fx_stat_t which, uint64_t n);

/* Polls (1 ms steps) until *flag is non-zero, up to RC_TIMEOUT_MS.
 * Returns 1 when it was set, 0 on timeout. */
int fx_flag_set(_Atomic int *flag);
/* Runs `cb` on the loop that serves `res` (hr_response_post) and waits,
 * up to RC_TIMEOUT_MS, until it ran: the loop has gone round, and polled
 * its sockets, once more.  Asserts the post and the run. */
void fx_on_loop(hr_response_t *res, hr_post_cb cb);

/* Adds a route; asserts success. */
void fx_route(fx_t *fx, const char *methods, const char *pattern,
              hr_handler_cb cb, void *udata);
void fx_route_opts(fx_t *fx, const char *methods, const char *pattern,
                   hr_handler_cb cb, void *udata,
                   const hr_route_options_t *opts);

/* ---- shared handlers ---------------------------------------------------- */

/* Handler calls since the last ta_reset (every ta_ handler and every test
 * handler that calls ta_count counts). */
void ta_reset(void);
void ta_count(void);
unsigned long ta_calls(void);
/* Waits until ta_calls() >= n (bounded). */
int ta_wait_calls(unsigned long n, unsigned ms);

/* 200 with the NUL-terminated string `udata` as body. */
void ta_text(hr_request_t *req, hr_response_t *res, void *udata);
/* 200 echoing the request body. */
void ta_echo(hr_request_t *req, hr_response_t *res, void *udata);
/* 200 with "METHOD|path|query|version|nparams[|param value...]|body". */
void ta_info(hr_request_t *req, hr_response_t *res, void *udata);
/* Writes the info line of ta_info into out (NUL-terminated, truncated at
 * cap); returns its length. */
size_t ta_format_info(hr_request_t *req, char *out, size_t cap);

/* ---- assertions (test thread only) -------------------------------------- */

/* Reads one response and asserts its status line and (unless NULL) exact
 * body.  The response is left in *r (free it) when r is non-NULL. */
void expect_response(rc_t *c, const char *status_line, const char *body,
                     rc_response_t *r);
/* Same for a response to HEAD (no body is read). */
void expect_head_response(rc_t *c, const char *status_line,
                          rc_response_t *r);
/* Asserts the connection ends here (EOF or reset, no further byte). */
void expect_closed(rc_t *c);
/* Reads exactly the bytes of `want` (a NUL-terminated string of any
 * length) from c, what its response reader buffered first: the raw bytes
 * of an upgraded stream. */
void expect_bytes(rc_t *c, const char *want);
/* Asserts field `name` is present exactly once with value `value`
 * (compared case-sensitively unless nocase). */
void expect_field(const rc_response_t *r, const char *name, const char *value,
                  int nocase);
void expect_no_field(const rc_response_t *r, const char *name);
/* Asserts a Date field in IMF-fixdate form within a minute of now. */
void expect_date(const rc_response_t *r);
/* Whether an Allow value equals `base` ("DELETE, POST, PUT") once the
 * methods the router may add on its own are set aside: OPTIONS (answered by
 * the router) and HEAD when GET is listed.  The value must be ", "-separated,
 * sorted, without duplicates.  Returns 1 or 0. */
int allow_equiv(const char *allow, size_t len, const char *base);
/* Builds "HTTP/1.1 <code> <reason>" from hr_status_reason. */
const char *status_line_of(int code);

#endif
