/* SPDX-License-Identifier: MIT */
/*
 * Route table publication under load: client threads keep requesting
 * routes on two workers while the test thread registers them.  Every
 * response is either 404 (route not there yet) or the route's own body; a
 * route whose hr_router_add returned before the request was sent is always
 * found.  Run under ThreadSanitizer too.
 *
 * ctest-labels: tsan
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

#define N_ROUTES 40
#define N_CLIENTS 3
#define N_REQUESTS 300

static char bodies[N_ROUTES][16];
static atomic_int added[N_ROUTES];
static atomic_int all_added;

typedef struct client_s {
  int port;
  int index;
  int ok, not_found, stale, bad, total;
  char first_bad[160];
} client_t;

static void *client_main(void *arg) {
  client_t *cl = arg;
  rc_t *c = rc_connect(cl->port);
  int j, after_all = 0;
  if (c == NULL) {
    cl->bad++;
    return NULL;
  }
  /* At least N_REQUESTS, and at least N_ROUTES after every route was
   * added (bounded). */
  for (j = 0; (j < N_REQUESTS || after_all < N_ROUTES) && j < 100000; j++) {
    int k = (j * 7 + cl->index * 13) % N_ROUTES;
    int was_added;
    char req[96];
    rc_response_t r;
    if (atomic_load(&all_added)) after_all++;
    was_added = atomic_load(&added[k]);
    snprintf(req, sizeof req, "GET /live/%d HTTP/1.1\r\nHost: a\r\n\r\n", k);
    if (rc_send_str(c, req) != 0 || rc_read_response(c, &r, 0) != RC_OK) {
      if (cl->bad++ == 0) snprintf(cl->first_bad, sizeof cl->first_bad, "no response to %s", req);
      rc_response_free(&r);
      break;
    }
    if (r.status == 404) {
      cl->not_found++;
      if (was_added) cl->stale++;
    } else if (r.status == 200 && strcmp(r.body, bodies[k]) == 0) {
      cl->ok++;
    } else if (cl->bad++ == 0) {
      snprintf(cl->first_bad, sizeof cl->first_bad, "/live/%d: %s body %s", k,
               r.status_line, r.body);
    }
    rc_response_free(&r);
  }
  cl->total = j;
  rc_close(c);
  return NULL;
}

static void test_routes_added_under_load(void **state) {
  fx_t *fx = *state;
  client_t cl[N_CLIENTS];
  pthread_t t[N_CLIENTS];
  int i;
  char pat[32];
  for (i = 0; i < N_ROUTES; i++) {
    snprintf(bodies[i], sizeof bodies[i], "live%d", i);
    atomic_store(&added[i], 0);
  }
  atomic_store(&all_added, 0);
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_start(fx, 2);
  memset(cl, 0, sizeof cl);
  for (i = 0; i < N_CLIENTS; i++) {
    cl[i].port = fx->port;
    cl[i].index = i;
    assert_int_equal(pthread_create(&t[i], NULL, client_main, &cl[i]), 0);
  }
  for (i = 0; i < N_ROUTES; i++) {
    snprintf(pat, sizeof pat, "/live/%d", i);
    fx_route(fx, "GET", pat, ta_text, bodies[i]);
    atomic_store(&added[i], 1); /* after hr_router_add returned */
    if (i % 8 == 0) sleep_ms(1);
  }
  atomic_store(&all_added, 1);
  for (i = 0; i < N_CLIENTS; i++) pthread_join(t[i], NULL);
  for (i = 0; i < N_CLIENTS; i++) {
    if (cl[i].bad) fail_msg("client %d: %s", i, cl[i].first_bad);
    assert_int_equal(cl[i].stale, 0);
    assert_int_equal(cl[i].ok + cl[i].not_found, cl[i].total);
    assert_true(cl[i].ok >= N_ROUTES); /* the requests after all_added */
  }
  /* afterwards every route answers */
  {
    rc_t *c = fx_connect(fx);
    for (i = 0; i < N_ROUTES; i++) {
      char req[96];
      snprintf(req, sizeof req, "GET /live/%d HTTP/1.1\r\nHost: a\r\n\r\n", i);
      assert_int_equal(rc_send_str(c, req), 0);
      expect_response(c, "HTTP/1.1 200 OK", bodies[i], NULL);
    }
  }
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_routes_added_under_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
