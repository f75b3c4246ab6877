/* SPDX-License-Identifier: MIT */
/*
 * A server's compression settings (hr_compress_options_t), checked and
 * copied once by hr_server_new; read by every loop afterwards, never
 * written.
 */
#include <string.h>

#include "codec/zconf.h"

void hr_compress_options_init(hr_compress_options_t *o) {
  if (o == NULL) return;
  memset(o, 0, sizeof(*o));
  o->order[0] = HR_CODING_ZSTD;
  o->order[1] = HR_CODING_BR;
  o->order[2] = HR_CODING_GZIP;
  o->gzip_level = 6;
  o->br_level = 4;
  o->zstd_level = 3;
  o->min_length = 256;
}

static const char *const default_types[] = {"text/*", "application/json", "application/javascript",
                                             "application/xml", "image/svg+xml"};

/* What is wrong with `o`, or NULL: a reason in words for
 * hr_route_error_t.reason and hr_error_detail. */
static const char *zconf_fault(const hr_compress_options_t *o, const char *const *types,
                               size_t ntypes) {
  size_t i;
  if (o->gzip_level < 1 || o->gzip_level > 12) return "gzip_level outside 1..12";
  if (o->br_level < 0 || o->br_level > 11) return "br_level outside 0..11";
  if (o->zstd_level < 1 || o->zstd_level > 19) return "zstd_level outside 1..19";
  if (o->media_types == NULL && o->nmedia_types) return "nmedia_types without media_types";
  for (i = 0; i < 3; i++)
    if (o->order[i] > HR_CODING_ZSTD) return "order names a value that is no hr_coding_t";
  for (i = 0; i < ntypes; i++) {
    const char *slash = types[i] ? strchr(types[i], '/') : NULL;
    if (slash == NULL || slash == types[i] || slash[1] == '\0' || strpbrk(types[i], " ;,\r\n"))
      return "a media type is not \"type/subtype\" (no parameters, spaces or commas)";
  }
  return NULL;
}

int hr__zconf_new(hr__mem_t *m, const hr_compress_options_t *o, hr__zconf_t **out,
                  const char **why) {
  const char *const *types = o->media_types ? o->media_types : default_types;
  size_t ntypes = o->media_types ? o->nmedia_types : sizeof default_types / sizeof *default_types;
  size_t i, bytes = 0;
  hr__zconf_t *z;
  char *w;
  *out = NULL;
  if ((*why = zconf_fault(o, types, ntypes)) != NULL) return HR_EINVAL;
  for (i = 0; i < ntypes; i++) bytes += strlen(types[i]);
  z = hr__mem_alloc(m, sizeof(*z) + ntypes * sizeof(hr_span_t) + bytes);
  if (z == NULL) return HR_ENOMEM;
  memset(z, 0, sizeof(*z));
  z->m = m;
  atomic_init(&z->refs, 1);
  z->types = (hr_span_t *)(z + 1);
  w = (char *)(z->types + ntypes);
  for (i = 0; i < ntypes; i++) {
    size_t n = strlen(types[i]);
    memcpy(w, types[i], n);
    z->types[i].ptr = w;
    z->types[i].len = n;
    w += n;
  }
  z->ntypes = ntypes;
  z->suffixes = o->media_types == NULL; /* the default list: +json, +xml too */
  for (i = 0; i < 3 && o->order[i] != HR_CODING_IDENTITY; i++) {
    size_t k;
    int c = o->order[i], seen = 0;
    for (k = 0; k < z->n; k++) seen |= z->order[k] == c;
    if (!seen && hr__coding_available(c)) z->order[z->n++] = (uint8_t)c;
  }
  z->level[HR_CODING_GZIP] = o->gzip_level;
  z->level[HR_CODING_BR] = o->br_level;
  z->level[HR_CODING_ZSTD] = o->zstd_level;
  z->min_length = o->min_length;
  *out = z;
  return 0;
}

void hr__zconf_hold(const hr__zconf_t *z) {
  /* Relaxed: the holder's own reference (or the table's, inside a
   * read-side section) keeps it alive meanwhile. */
  atomic_fetch_add_explicit(&((hr__zconf_t *)z)->refs, 1, memory_order_relaxed);
}

void hr__zconf_drop(const hr__zconf_t *z) {
  hr__zconf_t *w = (hr__zconf_t *)z;
  /* acq_rel: every holder's reads happen before the free. */
  if (w != NULL && atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1)
    hr__mem_free(w->m, w);
}

int hr__zconf_type_ok(const hr__zconf_t *z, hr_span_t type, hr_span_t subtype) {
  size_t i;
  /* The default list leaves event streams out: each open one would hold
   * an encoder for as long as it lives.  A list of one's own may name it. */
  if (z->suffixes && hr_span_eq_nocase(type, HR_SPAN_LIT("text")) &&
      hr_span_eq_nocase(subtype, HR_SPAN_LIT("event-stream")))
    return 0;
  for (i = 0; i < z->ntypes; i++) {
    hr_span_t t = z->types[i];
    const char *slash = memchr(t.ptr, '/', t.len);
    hr_span_t tt = {t.ptr, (size_t)(slash - t.ptr)}, ts = {slash + 1, t.len - tt.len - 1};
    if (!hr_span_eq(tt, HR_SPAN_LIT("*")) && !hr_span_eq_nocase(tt, type)) continue;
    if (hr_span_eq(ts, HR_SPAN_LIT("*")) || hr_span_eq_nocase(ts, subtype)) return 1;
  }
  if (z->suffixes && subtype.len > 5) {
    hr_span_t tail = {subtype.ptr + subtype.len - 5, 5};
    if (hr_span_eq_nocase(tail, HR_SPAN_LIT("+json"))) return 1;
  }
  if (z->suffixes && subtype.len > 4 &&
      hr_span_eq_nocase((hr_span_t){subtype.ptr + subtype.len - 4, 4}, HR_SPAN_LIT("+xml")))
    return 1;
  return 0;
}
