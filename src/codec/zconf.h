/* SPDX-License-Identifier: MIT */
/*
 * A server's compression settings, as hr_server_new keeps them (zconf.c):
 * the codings offered that were built in, in the server's order; a level
 * per coding; the smallest body; the media types, copied.  Immutable once
 * made; any thread reads it.  The router's (a host table's, a route's)
 * are shared by reference: the registration holds one, each published
 * table one per host that uses it, an exchange one while it may still
 * answer (hr__zconf_hold, hr__zconf_drop); the server's has one owner.
 */
#include <stdatomic.h>

#ifndef HR_CODEC_ZCONF_H
#define HR_CODEC_ZCONF_H

#include "codec/codec.h"

typedef struct hr__zconf_s {
  uint8_t order[3];
  size_t n;                 /* codings in order */
  int level[HR__CODINGS];
  size_t min_length;
  hr_span_t *types;         /* "type/subtype" or "type/" + "*" */
  size_t ntypes;
  int suffixes;             /* the default list: +json and +xml types too */
  hr__mem_t *m;             /* what it was allocated from */
  _Atomic unsigned refs;    /* 1 when made */
} hr__zconf_t;

/* Checks and copies `o`.  Returns 0, HR_EINVAL (*why then says what is
 * wrong, static text; else NULL) or HR_ENOMEM.  Release the result with
 * hr__zconf_drop. */
int hr__zconf_new(hr__mem_t *m, const hr_compress_options_t *o, hr__zconf_t **out,
                  const char **why);
/* Takes a reference: the caller holds one already, or reads `z` from a
 * table that does inside a read-side section. */
void hr__zconf_hold(const hr__zconf_t *z);
/* Drops one; the last frees it (any thread).  NULL: nothing. */
void hr__zconf_drop(const hr__zconf_t *z);
/* Whether a Content-Type of this type and subtype is compressed. */
int hr__zconf_type_ok(const hr__zconf_t *z, hr_span_t type, hr_span_t subtype);

#endif /* HR_CODEC_ZCONF_H */
