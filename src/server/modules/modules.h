/* SPDX-License-Identifier: MIT */
/*
 * The optional modules of the server that watch exchanges end: the access
 * log (access_log.c) and the metrics (metrics.c, rendered on demand).  They
 * are observers (hr__ex_observer_fn) the server installs when made; the
 * exchange and the connection never call them.
 */
#ifndef HR_SERVER_MODULES_MODULES_H
#define HR_SERVER_MODULES_MODULES_H

#include "server/conn/conn.h"

/* access_log.c: the exchange's line, when the server has an access log. */
void hr__access_log(hr__exchange_t *ex);

#endif /* HR_SERVER_MODULES_MODULES_H */
