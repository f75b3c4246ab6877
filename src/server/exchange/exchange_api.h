/* SPDX-License-Identifier: MIT */
/*
 * What the modules above the server (the typed header values in
 * src/delegate) may do with an exchange, without seeing its structure:
 * append response field lines in place and reach the router's delegate
 * registry.  Loop thread only, like the public calls that use them.
 */
#ifndef HR_SERVER_EXCHANGE_API_H
#define HR_SERVER_EXCHANGE_API_H

#include <stddef.h>

#include "delegate/registry.h"
#include "hroute/http.h"

/* Whether field lines may still be added to `res`: 0, HR_ESTATE (started
 * or complete), HR_ETHREAD (not its loop thread), HR_ECLOSED (abandoned). */
int hr__res_fields_open(const hr_response_t *res);
/* Room for at least `need` more bytes after the response's field lines
 * (request arena memory).  Returns where the next line goes and stores the
 * room in *cap, or NULL when out of memory.  Nothing counts until
 * hr__res_field_commit. */
char *hr__res_field_room(hr_response_t *res, size_t need, size_t *cap);
/* Adds the `n` bytes written at the room as field lines. */
void hr__res_field_commit(hr_response_t *res, size_t n);
/* The delegate registry of the router serving the exchange. */
hr__registry_t *hr__res_registry(const hr_response_t *res);
hr__registry_t *hr__req_registry(const hr_request_t *req);

#endif /* HR_SERVER_EXCHANGE_API_H */
