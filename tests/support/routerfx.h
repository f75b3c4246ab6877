/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the router tests (no server): routers remembered so that the
 * teardown frees them even after a failed assertion, route registration
 * that fails the test on error, and matching with a shared scratch buffer.
 */
#ifndef TESTS_ROUTERFX_H
#define TESTS_ROUTERFX_H

#include <stdint.h>

#include <hroute.h>

#define RT_ID(n) ((void *)(intptr_t)(n))

/* Scratch for decoded values and Location; 2 * len + 16 always suffices. */
extern char rt_scratch[4096];

/* A handler that does nothing (its udata identifies the route). */
void rt_noop(hr_request_t *req, hr_response_t *res, void *udata);

/* Routers made by a test; rt_free_routers (a cmocka teardown) frees those
 * left, rt_forget frees one early. */
hr_router_t *rt_remember(hr_router_t *r);
void rt_forget(hr_router_t *r);
int rt_free_routers(void **state);

/* A remembered router with the given options, or the defaults. */
hr_router_t *rt_new_router_opts(int slash, int clean, int nocase);
hr_router_t *rt_new_router(void);

/* Registers rt_noop with udata RT_ID(id); fails the test on error. */
void rt_add(hr_router_t *r, const char *methods, const char *pattern, int id);

/* Matches and asserts hr_router_match returned 0 (the result is first
 * filled with 0xEE bytes, so nothing stale can pass for an answer). */
hr_match_t rt_match_host(hr_router_t *r, const char *method, const char *host,
                         const char *target);
hr_match_t rt_match(hr_router_t *r, const char *method, const char *target);

#endif /* TESTS_ROUTERFX_H */
