/* SPDX-License-Identifier: MIT */
/*
 * Content types by file extension for the static handler: a built-in
 * table of the types the web uses (text types with charset=utf-8, as Go's
 * mime package has them), then the entries of a mime.types file (the
 * format of Debian's /etc/mime.types: "type ext ext ...", '#' comments),
 * kept as one array sorted by extension for a binary search.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "static/static.h"

static const struct {
  const char *ext, *type;
} builtin[] = {
    {"avif", "image/avif"},
    {"css", "text/css; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"gif", "image/gif"},
    {"gz", "application/gzip"},
    {"htm", "text/html; charset=utf-8"},
    {"html", "text/html; charset=utf-8"},
    {"ico", "image/vnd.microsoft.icon"},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"md", "text/markdown; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"otf", "font/otf"},
    {"pdf", "application/pdf"},
    {"png", "image/png"},
    {"svg", "image/svg+xml"},
    {"tar", "application/x-tar"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain; charset=utf-8"},
    {"wasm", "application/wasm"},
    {"webm", "video/webm"},
    {"webmanifest", "application/manifest+json"},
    {"webp", "image/webp"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"xml", "text/xml; charset=utf-8"},
    {"zip", "application/zip"},
};

#define NBUILTIN (sizeof builtin / sizeof builtin[0])

static int cmp_entry(const void *a, const void *b) {
  const hr__mime_t *x = a, *y = b;
  int c = strcasecmp(x->ext, y->ext);
  /* Equal extensions: the earlier entry (built-in first) wins. */
  return c != 0 ? c : (x->order > y->order) - (x->order < y->order);
}

/* Appends (ext, type) to t; both are copied into its string block. */
static int add(hr__mimes_t *t, const char *ext, size_t elen, const char *type, size_t tlen) {
  hr__mime_t *e;
  char *s;
  /* Long names and long types are nobody's: a Content-Type longer than
   * HR__TYPE_MAX would not fit the part heads of a multipart body. */
  if (elen == 0 || tlen == 0 || elen > 32 || tlen > HR__TYPE_MAX) return 0;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    hr__mime_t *n = realloc(t->v, cap * sizeof(*n));
    if (n == NULL) return -1;
    t->v = n;
    t->cap = cap;
  }
  s = malloc(elen + 1 + tlen + 1);
  if (s == NULL) return -1;
  memcpy(s, ext, elen);
  s[elen] = '\0';
  memcpy(s + elen + 1, type, tlen);
  s[elen + 1 + tlen] = '\0';
  e = &t->v[t->n];
  e->ext = s;
  e->type = s + elen + 1;
  e->order = t->n++;
  return 0;
}

/* Reads "type ext ext..." lines; a missing file is no error. */
static int read_file(hr__mimes_t *t, const char *path) {
  FILE *f = fopen(path, "re");
  char line[1024];
  int rc = 0;
  if (f == NULL) return 0;
  while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
    char *p = line, *type;
    size_t tlen;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\0') continue;
    type = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
    tlen = (size_t)(p - type);
    for (;;) {
      char *ext;
      while (*p == ' ' || *p == '\t') p++;
      if (*p == '\0' || *p == '\n' || *p == '#') break;
      ext = p;
      while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
      if ((rc = add(t, ext, (size_t)(p - ext), type, tlen)) != 0) break;
      /* (a type is one whitespace-free word here: no CR or LF can be in it) */
    }
  }
  fclose(f);
  return rc;
}

int hr__static_type_ok(const char *s) {
  size_t i, n = strlen(s);
  if (n == 0 || n > HR__TYPE_MAX) return 0;
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return 0;
  }
  return 1;
}

int hr__mimes_load(hr__mimes_t *t, const char *path) {
  size_t i, w;
  memset(t, 0, sizeof(*t));
  for (i = 0; i < NBUILTIN; i++)
    if (add(t, builtin[i].ext, strlen(builtin[i].ext), builtin[i].type,
            strlen(builtin[i].type)) != 0)
      goto fail;
  if (path != NULL && read_file(t, path) != 0) goto fail;
  qsort(t->v, t->n, sizeof(t->v[0]), cmp_entry);
  /* Keep the first of each extension. */
  for (i = w = 0; i < t->n; i++) {
    if (w > 0 && strcasecmp(t->v[w - 1].ext, t->v[i].ext) == 0) {
      free((char *)t->v[i].ext);
      continue;
    }
    t->v[w++] = t->v[i];
  }
  t->n = w;
  return 0;
fail:
  hr__mimes_free(t);
  return HR_ENOMEM;
}

void hr__mimes_free(hr__mimes_t *t) {
  size_t i;
  for (i = 0; i < t->n; i++) free((char *)t->v[i].ext);
  free(t->v);
  memset(t, 0, sizeof(*t));
}

const char *hr__mimes_find(const hr__mimes_t *t, hr_span_t name) {
  const char *dot = NULL, *p;
  size_t lo = 0, hi = t->n, elen;
  char ext[33];
  /* The extension: after the last '.' of the last component, not a
   * leading one (".bashrc" has none). */
  for (p = name.ptr + name.len; p > name.ptr && p[-1] != '/'; p--)
    if (p[-1] == '.' && dot == NULL) dot = p - 1;
  if (dot == NULL || dot == p) return NULL;
  elen = (size_t)(name.ptr + name.len - dot - 1);
  if (elen == 0 || elen >= sizeof ext) return NULL;
  memcpy(ext, dot + 1, elen);
  ext[elen] = '\0';
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcasecmp(t->v[mid].ext, ext);
    if (c == 0) return t->v[mid].type;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}
