/* SPDX-License-Identifier: MIT */
/*
 * Route table publication under concurrent change (DESIGN.md,
 * "Publication"), on two worker loops:
 *   - clients flood /v and short-lived /tmp/<k> routes while the test
 *     thread replaces /v thousands of times, adds and removes /tmp/<k> and
 *     adds middleware: no response mixes two versions (body vs the route's
 *     constant X-Version field), versions and middleware never go
 *     backwards for one client, /v never fails, /tmp/<k> answers exactly
 *     as its registration state says when that state was stable around
 *     the request, and every after-middleware ran once per response that
 *     carries its before's field;
 *   - a route's first requests on both loops, released together right
 *     after its registration (typed parameter, per-loop context made
 *     lazily on both loops at once).
 * Requests in flight across a removal or replacement: test_invoker_lifetime.c.
 * Runs under ThreadSanitizer (label stress) and AddressSanitizer.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fixture.h"

/* ---- 1. replace, add, remove and middleware under load ------------------- */

#define N_CLIENTS 3
#define MIN_REQUESTS 3000   /* per client, and on until the writer is done */
#define MAX_REQUESTS 60000  /* per client, a bound if the writer stalls */
#define N_OPS 3000          /* writer operations */
#define N_TMP 8             /* /tmp/0 .. /tmp/7 */
#define MW_EVERY 300        /* a middleware after every 300th operation */
#define MAX_MW (N_OPS / MW_EVERY + 1)
#define MAX_VERSION (N_OPS / 3 + 2)
#define RECONNECT_EVERY 400
#define MAX_PAIRS 4096

static const char *tmp_body[N_TMP] = {"tmp0", "tmp1", "tmp2", "tmp3",
                                      "tmp4", "tmp5", "tmp6", "tmp7"};
/* Registration state of /tmp/<k>, written by the writer around each call:
 * 4n absent, 4n+1 adding, 4n+2 present (add returned), 4n+3 removing. */
static atomic_uint tmp_gen[N_TMP];
static atomic_ulong progress;      /* responses read by all clients */
static atomic_int writer_done;
static atomic_int clients_live;
static atomic_ulong mw_after_calls[MAX_MW];
static atomic_ulong mw_after_bad; /* after-callbacks with a status but 200 or 404 */
/* Middleware count when version v was published, and when it was replaced
 * (writer only; read after the joins). */
static unsigned mw_lo[MAX_VERSION], mw_hi[MAX_VERSION];

typedef struct vpair_s {
  unsigned v, m;
} vpair_t;

typedef struct client_s {
  int port;
  unsigned long requests;
  unsigned long mw_seen[MAX_MW]; /* responses carrying X-Mw: j */
  vpair_t pairs[MAX_PAIRS];      /* distinct (version, middleware) seen */
  size_t npairs;
  char fail[256];
} client_t;

static void h_version(hr_request_t *req, hr_response_t *res, void *udata) {
  char b[24];
  int n = snprintf(b, sizeof b, "%lu", (unsigned long)(uintptr_t)udata);
  (void)req;
  hr_response_send(res, 200, b, (size_t)n);
}

static void h_tmp(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  hr_response_send(res, 200, udata, strlen(udata));
}

static hr_next_t mw_before(hr_request_t *req, hr_response_t *res, void *udata) {
  char v[16];
  int n = snprintf(v, sizeof v, "%u", (unsigned)(uintptr_t)udata);
  (void)req;
  hr_response_add_field(res, HR_SPAN_LIT("X-Mw"), (hr_span_t){v, (size_t)n});
  return HR_NEXT;
}

/* Counts the routes' 200s; the server's 404s for /tmp/<k> pass the
 * after-middleware too (of the table current at their end, so their count
 * depends on timing and is not compared). */
static void mw_after(hr_request_t *req, int status, void *udata) {
  (void)req;
  if (status == 200) atomic_fetch_add(&mw_after_calls[(uintptr_t)udata], 1);
  else if (status != 404) atomic_fetch_add(&mw_after_bad, 1);
}

static int put_version(hr_router_t *r, unsigned v, int replace) {
  char val[16];
  hr_field_t f = {HR_SPAN_LIT("X-Version"), {val, 0}};
  hr_route_options_t o;
  f.value.len = (size_t)snprintf(val, sizeof val, "%u", v);
  hr_route_options_init(&o);
  o.fields = &f; /* copied and rendered by hr_router_add */
  o.nfields = 1;
  o.replace = replace;
  return hr_router_add(r, "GET", "/v", h_version, (void *)(uintptr_t)v, &o);
}

/* Checks the X-Mw lines of a response: 0, 1, ..., m-1 in this order (the
 * befores in registration order).  Returns m, or -1. */
static int mw_lines(const rc_response_t *r, client_t *cl) {
  size_t i;
  int m = 0;
  for (i = 0; i < r->nheaders; i++) {
    if (strcasecmp(r->headers[i].name, "X-Mw") != 0) continue;
    if (atoi(r->headers[i].value) != m || m >= MAX_MW) return -1;
    cl->mw_seen[m++]++;
  }
  return m;
}

#define CL_FAIL(cl, ...)                                         \
  do {                                                           \
    if ((cl)->fail[0] == '\0')                                   \
      snprintf((cl)->fail, sizeof (cl)->fail, __VA_ARGS__);      \
  } while (0)

/* Reads one response to a /v request and checks it.  Returns 0 or -1. */
static int read_v(rc_t *c, client_t *cl, unsigned *last_v, int *last_m) {
  rc_response_t r;
  const char *xv;
  unsigned v;
  int m, rc = rc_read_response(c, &r, 0);
  atomic_fetch_add(&progress, 1);
  if (rc != RC_OK || r.status != 200) {
    CL_FAIL(cl, "/v: rc %d, %s", rc, r.status_line ? r.status_line : "-");
    goto bad;
  }
  xv = rc_header(&r, "X-Version");
  if (xv == NULL || rc_header_count(&r, "X-Version") != 1 || strcmp(xv, r.body) != 0) {
    CL_FAIL(cl, "/v: X-Version %s with body %s", xv ? xv : "-", r.body);
    goto bad;
  }
  v = (unsigned)strtoul(r.body, NULL, 10);
  m = mw_lines(&r, cl);
  if (m < 0 || v < *last_v || m < *last_m || v >= MAX_VERSION) {
    CL_FAIL(cl, "/v: version %u mw %d after version %u mw %d", v, m, *last_v, *last_m);
    goto bad;
  }
  if ((cl->npairs == 0 || cl->pairs[cl->npairs - 1].v != v ||
       cl->pairs[cl->npairs - 1].m != (unsigned)m) && cl->npairs < MAX_PAIRS)
    cl->pairs[cl->npairs++] = (vpair_t){v, (unsigned)m};
  *last_v = v;
  *last_m = m;
  rc_response_free(&r);
  return 0;
bad:
  rc_response_free(&r);
  return -1;
}

static int request_tmp(rc_t *c, client_t *cl, unsigned k, int *last_m) {
  char req[64];
  rc_response_t r;
  unsigned g0, g1;
  int rc, m = 0;
  snprintf(req, sizeof req, "GET /tmp/%u HTTP/1.1\r\nHost: a\r\n\r\n", k);
  g0 = atomic_load(&tmp_gen[k]);
  if (rc_send_str(c, req) != 0) {
    CL_FAIL(cl, "send /tmp/%u failed", k);
    return -1;
  }
  rc = rc_read_response(c, &r, 0);
  g1 = atomic_load(&tmp_gen[k]);
  atomic_fetch_add(&progress, 1);
  if (rc != RC_OK || (r.status != 200 && r.status != 404)) {
    CL_FAIL(cl, "/tmp/%u: rc %d, %s", k, rc, r.status_line ? r.status_line : "-");
    goto bad;
  }
  if (r.status == 200) {
    m = mw_lines(&r, cl);
    if (strcmp(r.body, tmp_body[k]) != 0 || m < *last_m) {
      CL_FAIL(cl, "/tmp/%u: body %s mw %d after mw %d", k, r.body, m, *last_m);
      goto bad;
    }
    *last_m = m;
  }
  /* The state held from before the send to after the answer. */
  if (g0 == g1 && ((g0 % 4 == 2 && r.status != 200) || (g0 % 4 == 0 && r.status != 404))) {
    CL_FAIL(cl, "/tmp/%u: %d while %s", k, r.status, g0 % 4 == 2 ? "registered" : "absent");
    goto bad;
  }
  rc_response_free(&r);
  return 0;
bad:
  rc_response_free(&r);
  return -1;
}

static void *client_main(void *arg) {
  client_t *cl = arg;
  rc_t *c = NULL;
  unsigned long j;
  unsigned last_v = 0;
  int last_m = 0;
  for (j = 0; j < MAX_REQUESTS; j++) {
    if (j >= MIN_REQUESTS && atomic_load(&writer_done)) break;
    if (c == NULL || j % RECONNECT_EVERY == 0) {
      /* A new connection may land on the other loop: a client's requests
       * are sequential, so its versions still never go backwards. */
      if (c != NULL) rc_close(c);
      if ((c = rc_connect(cl->port)) == NULL) {
        CL_FAIL(cl, "connect failed");
        break;
      }
    }
    if (j % 4 == 3) {
      if (request_tmp(c, cl, (unsigned)(j / 4) % N_TMP, &last_m) != 0) break;
    } else if (j % 4 == 1) {
      /* two pipelined requests in one write */
      if (rc_send_str(c, "GET /v HTTP/1.1\r\nHost: a\r\n\r\n"
                         "GET /v HTTP/1.1\r\nHost: a\r\n\r\n") != 0 ||
          read_v(c, cl, &last_v, &last_m) != 0 || read_v(c, cl, &last_v, &last_m) != 0) {
        CL_FAIL(cl, "pipelined /v failed");
        break;
      }
    } else if (rc_send_str(c, "GET /v HTTP/1.1\r\nHost: a\r\n\r\n") != 0 ||
               read_v(c, cl, &last_v, &last_m) != 0) {
      CL_FAIL(cl, "/v failed");
      break;
    }
  }
  cl->requests = j;
  if (c != NULL) rc_close(c);
  atomic_fetch_sub(&clients_live, 1);
  return NULL;
}

static void test_replace_under_load(void **state) {
  fx_t *fx = *state;
  static client_t cl[N_CLIENTS];
  pthread_t t[N_CLIENTS];
  unsigned long seen[MAX_MW] = {0};
  unsigned version = 0, nmw = 0, i, k;
  int first_err = 0, first_err_op = -1, rc;
  size_t p;
  char pat[32];
  rc_t *c;
  rc_response_t r;

  memset(cl, 0, sizeof cl);
  for (k = 0; k < N_TMP; k++) atomic_store(&tmp_gen[k], 0);
  for (k = 0; k < MAX_MW; k++) atomic_store(&mw_after_calls[k], 0);
  atomic_store(&mw_after_bad, 0);
  atomic_store(&progress, 0);
  atomic_store(&writer_done, 0);
  atomic_store(&clients_live, N_CLIENTS);
  memset(mw_lo, 0, sizeof mw_lo);
  memset(mw_hi, 0, sizeof mw_hi);
  assert_int_equal(put_version(fx->router, 0, 0), 0);
  fx_start(fx, 2);
  for (i = 0; i < N_CLIENTS; i++) {
    cl[i].port = fx->port;
    assert_int_equal(pthread_create(&t[i], NULL, client_main, &cl[i]), 0);
  }

  for (i = 0; i < N_OPS; i++) {
    /* Keep pace with the clients (each operation waits for one more
     * response), so that the changes overlap the traffic. */
    while (atomic_load(&progress) < i && atomic_load(&clients_live) > 0) sched_yield();
    if (i % 3 == 0) {
      version++;
      mw_lo[version] = mw_hi[version] = nmw;
      rc = put_version(fx->router, version, 1);
      if (rc == 0 && i % MW_EVERY == 0 && nmw < MAX_MW) {
        rc = hr_router_use(fx->router, NULL, NULL, mw_before, mw_after,
                           (void *)(uintptr_t)nmw);
        if (rc == 0) mw_hi[version] = ++nmw;
      }
    } else {
      unsigned g;
      k = (i / 3) % N_TMP;
      g = atomic_load(&tmp_gen[k]);
      snprintf(pat, sizeof pat, "/tmp/%u", k);
      atomic_store(&tmp_gen[k], g + 1);
      if (g % 4 == 0)
        rc = hr_router_add(fx->router, "GET", pat, h_tmp, (void *)tmp_body[k], NULL);
      else
        rc = hr_router_remove(fx->router, "GET", pat);
      atomic_store(&tmp_gen[k], g + 2);
    }
    if (rc != 0 && first_err == 0) {
      first_err = rc;
      first_err_op = (int)i;
    }
  }
  atomic_store(&writer_done, 1);
  for (i = 0; i < N_CLIENTS; i++) pthread_join(t[i], NULL);

  if (first_err != 0) fail_msg("writer op %d: %s", first_err_op, hr_err_name(first_err));
  for (i = 0; i < N_CLIENTS; i++) {
    if (cl[i].fail[0] != '\0') fail_msg("client %u: %s", i, cl[i].fail);
    assert_true(cl[i].requests >= MIN_REQUESTS);
    assert_true(cl[i].npairs < MAX_PAIRS);
    /* Each (version, middleware count) pair comes from one table. */
    for (p = 0; p < cl[i].npairs; p++) {
      vpair_t vp = cl[i].pairs[p];
      if (vp.v > version || vp.m < mw_lo[vp.v] || vp.m > mw_hi[vp.v])
        fail_msg("client %u: version %u with %u middleware (published with %u..%u)",
                 i, vp.v, vp.m, mw_lo[vp.v], mw_hi[vp.v]);
    }
    for (k = 0; k < MAX_MW; k++) seen[k] += cl[i].mw_seen[k];
    print_message("client %u: %lu requests, %zu (version, middleware) pairs\n", i,
                  cl[i].requests, cl[i].npairs);
  }

  /* The final version is served, with every middleware. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET /v HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  snprintf(pat, sizeof pat, "%u", version);
  expect_response(c, "HTTP/1.1 200 OK", pat, &r);
  expect_field(&r, "X-Version", pat, 0);
  assert_int_equal(rc_header_count(&r, "X-Mw"), nmw);
  rc_response_free(&r);
  for (k = 0; k < nmw; k++) seen[k]++;
  /* /tmp/<k> answers as last registered */
  for (k = 0; k < N_TMP; k++) {
    char req[64];
    snprintf(req, sizeof req, "GET /tmp/%u HTTP/1.1\r\nHost: a\r\n\r\n", k);
    assert_int_equal(rc_send_str(c, req), 0);
    if (atomic_load(&tmp_gen[k]) % 4 == 2) {
      expect_response(c, "HTTP/1.1 200 OK", tmp_body[k], NULL);
      for (i = 0; i < nmw; i++) seen[i]++;
    } else {
      expect_response(c, "HTTP/1.1 404 Not Found", NULL, NULL);
    }
  }
  fx_drop(fx, c);

  /* After the stop every exchange has ended: each after-middleware ran
   * exactly once per response that carried its before's field. */
  assert_int_equal(fx_stop(fx, 2000), 0);
  for (k = 0; k < MAX_MW; k++) {
    if (atomic_load(&mw_after_calls[k]) != seen[k])
      fail_msg("middleware %u: %lu after-calls, %lu responses with its field", k,
               atomic_load(&mw_after_calls[k]), seen[k]);
  }
  assert_int_equal(atomic_load(&mw_after_bad), 0);
}

/* ---- 2. first requests on both loops, released together ----------------- */

#define N_FIRST 8   /* client threads, one connection each */
#define N_ROUNDS 20

static pthread_barrier_t first_barrier;
static pthread_mutex_t loops_mu = PTHREAD_MUTEX_INITIALIZER;
static uv_loop_t *loops_seen[2];
static ev_t ctx_made;

typedef struct first_s {
  int port;
  rc_t *c;
  int rounds_ok;
  int loop_of_round[N_ROUNDS];
  char fail[200];
} first_t;

static int loop_index(uv_loop_t *loop) {
  int i, found = -1;
  pthread_mutex_lock(&loops_mu);
  for (i = 0; i < 2 && found < 0; i++) {
    if (loops_seen[i] == NULL) loops_seen[i] = loop;
    if (loops_seen[i] == loop) found = i;
  }
  pthread_mutex_unlock(&loops_mu);
  return found;
}

static int first_ctx_create(void *udata, uv_loop_t *loop, void **ctx) {
  (void)udata;
  *ctx = loop; /* the handler checks it got its own loop's context */
  ev_signal(&ctx_made);
  return 0;
}

/* Body "<round>:<n>:<loop index>", or "wrong context". */
static void h_first(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_value_t n;
  char b[64];
  int len;
  if (udata != hr_request_loop(req) || hr_request_param_value(req, 0, &n) != 0) {
    hr_response_send(res, 500, "wrong context", 13);
    return;
  }
  len = snprintf(b, sizeof b, "%s:%lld:%d", (const char *)hr_route_udata(hr_request_route(req)),
                 (long long)n.i64, loop_index(hr_request_loop(req)));
  hr_response_send(res, 200, b, (size_t)len);
}

static void *first_main(void *arg) {
  first_t *f = arg;
  int round;
  for (round = 0; round < N_ROUNDS; round++) {
    char req[96], want[32];
    rc_response_t r;
    int rc;
    pthread_barrier_wait(&first_barrier); /* the route is registered */
    snprintf(req, sizeof req, "GET /first/%d/%d HTTP/1.1\r\nHost: a\r\n\r\n", round, round + 7);
    if (rc_send_str(f->c, req) != 0) {
      snprintf(f->fail, sizeof f->fail, "round %d: send failed", round);
      continue;
    }
    rc = rc_read_response(f->c, &r, 0);
    snprintf(want, sizeof want, "r%d:%d:", round, round + 7);
    if (rc != RC_OK || r.status != 200 || strncmp(r.body, want, strlen(want)) != 0) {
      if (f->fail[0] == '\0')
        snprintf(f->fail, sizeof f->fail, "round %d: rc %d %s body %s", round, rc,
                 r.status_line ? r.status_line : "-", r.body ? r.body : "-");
    } else {
      f->rounds_ok++;
      f->loop_of_round[round] = atoi(r.body + strlen(want));
    }
    rc_response_free(&r);
  }
  return NULL;
}

static void test_first_requests_together(void **state) {
  fx_t *fx = *state;
  static first_t f[N_FIRST];
  static char names[N_ROUNDS][8];
  pthread_t t[N_FIRST];
  int i, round;
  memset(f, 0, sizeof f);
  memset(loops_seen, 0, sizeof loops_seen);
  ev_init(&ctx_made);
  assert_int_equal(pthread_barrier_init(&first_barrier, NULL, N_FIRST + 1), 0);
  fx_start(fx, 2);
  /* Connections first (accepted, no request yet): the loops' first
   * requests are the ones released below. */
  for (i = 0; i < N_FIRST; i++) {
    f[i].port = fx->port;
    f[i].c = fx_connect(fx);
    assert_int_equal(pthread_create(&t[i], NULL, first_main, &f[i]), 0);
  }
  for (round = 0; round < N_ROUNDS; round++) {
    static const hr_param_type_t types[] = {HR_PARAM_INT64};
    hr_field_t fld = {HR_SPAN_LIT("X-Round"), {names[round], 0}};
    hr_route_options_t o;
    char pat[32];
    hr_route_options_init(&o);
    snprintf(names[round], sizeof names[round], "r%d", round);
    fld.value.len = strlen(names[round]);
    o.fields = &fld;
    o.nfields = 1;
    o.param_types = types;
    o.nparam_types = 1;
    o.context_scope = HR_CONTEXT_LOOP;
    o.context_create = first_ctx_create;
    snprintf(pat, sizeof pat, "/first/%d/:n", round);
    fx_route_opts(fx, "GET", pat, h_first, names[round], &o);
    pthread_barrier_wait(&first_barrier); /* release every client at once */
  }
  for (i = 0; i < N_FIRST; i++) pthread_join(t[i], NULL);
  for (i = 0; i < N_FIRST; i++) {
    if (f[i].fail[0] != '\0') fail_msg("client %d: %s", i, f[i].fail);
    assert_int_equal(f[i].rounds_ok, N_ROUNDS);
  }
  /* One loop context per round and loop that served it. */
  {
    unsigned long want = 0;
    for (round = 0; round < N_ROUNDS; round++) {
      int used[2] = {0, 0};
      for (i = 0; i < N_FIRST; i++) used[f[i].loop_of_round[round]] = 1;
      want += (unsigned long)(used[0] + used[1]);
    }
    assert_int_equal(ev_count(&ctx_made), want);
    print_message("first requests: %lu loop contexts over %d rounds\n", want, N_ROUNDS);
  }
  pthread_barrier_destroy(&first_barrier);
  ev_destroy(&ctx_made);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_replace_under_load),
      T(test_first_requests_together),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
