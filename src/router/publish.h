/* SPDX-License-Identifier: MIT */
/*
 * Publication of route tables (publish.c), for router.c: what the
 * router's calls use besides hr__router_publish, hr__router_unlock and
 * hr__invoker_drop_new (route.h).  Writer side: lock held unless said.
 */
#ifndef HR_ROUTER_PUBLISH_H
#define HR_ROUTER_PUBLISH_H

#include "router/route.h"

/* Drops a hold on the router struct; the last frees it (router.c). */
void hr__router_drop(hr_router_t *r);
/* Frees a list of replaced tables after a grace period (waiting for it
 * with `wait` unless inside a read-side section; else through call_rcu).
 * Without the lock. */
void hr__router_reclaim(hr_router_t *r, hr__table_t *t, int wait);
/* Detaches the replaced tables when a batch is due (`all`: whatever is
 * there). */
hr__table_t *hr__router_take_batch(hr_router_t *r, int all);
/* Removes the holes of the route array (bumps the mark when any). */
void hr__router_compact(hr_router_t *r);
/* One route added (`old` NULL), replaced or removed (`add` NULL): its path
 * frozen, or whole trees when the change needs them; compacts when due.
 * Returns 0, HR_EEXIST, HR_ENOTFOUND, HR_ETOOLARGE, HR_ENOMEM; on error
 * nothing changed. */
int hr__router_change(hr_router_t *r, hr_route_t *old, hr_route_t *add, hr_route_error_t *err);

#endif /* HR_ROUTER_PUBLISH_H */
