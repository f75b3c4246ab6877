/* SPDX-License-Identifier: MIT */
/*
 * Held responses for the invoker and middleware tests: a handler (or a
 * before-middleware) leaves its response open with held_take(), and the
 * test thread completes it later through hr_response_post(), so a test can
 * change the router, or drop the client, while the exchange is in flight.
 * The completion runs on the loop thread; its body defaults to the string
 * the request's route was registered with (hr_route_udata), which shows
 * which route version the exchange kept.
 */
#ifndef HR_TEST_HELD_H
#define HR_TEST_HELD_H

#include <hroute.h>

#include "sync.h"

typedef struct held_s {
  hr_response_t *res;   /* the response last taken (loop thread writes it
                           before signalling ev_held) */
  int status;           /* what the completion sends ... */
  const char *body;     /* ... (NULL: the route's udata string) */
  int send_rc;          /* the completing call's result */
  int aborted;          /* abort callbacks seen */
  ev_t ev_held;         /* once per held_take */
  ev_t ev_aborted;      /* once per abort callback */
  ev_t ev_done;         /* once per completion */
} held_t;

void held_init(held_t *h);
void held_destroy(held_t *h);

/* Loop thread: keeps `res` open (with an abort callback that only counts)
 * and signals ev_held. */
void held_take(held_t *h, hr_response_t *res);

/* A handler that holds its response in `held_default` (its udata is left
 * for the route's body text).  Initialise held_default with held_init. */
extern held_t held_default;
void held_handler(hr_request_t *req, hr_response_t *res, void *udata);

/* Test thread: waits (bounded) until `n` responses were taken in total,
 * then completes the last one taken with `status` and `body` (NULL: route
 * udata) through hr_response_post and waits for the completion to run.
 * Returns the completing call's result (0, HR_ECLOSED...), or -1 when a
 * wait timed out or the post failed. */
int held_complete(held_t *h, unsigned long n, int status, const char *body);

/* Teardown: completes the last response taken if no completion ran for
 * it yet (after a failed assertion), so that the server can shut down. */
void held_release(held_t *h);

#endif
