/* SPDX-License-Identifier: MIT */
/*
 * Directory listings of a static root (the `listing` option, off by
 * default, as nginx's autoindex): an HTML page naming the entries of a
 * directory without an index file, sorted by name, directories with a
 * trailing '/', hidden files left out unless dotfiles are served.  The
 * directory is read on libuv's thread pool; names are percent-encoded in
 * the links and escaped in the text, so a file called "<script>" is only
 * text.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "static/static.h"

typedef struct buf_s {
  char *p;
  size_t len, cap;
  int failed;
} buf_t;

static void put(buf_t *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    char *np;
    while (cap < b->len + n) cap *= 2;
    if ((np = realloc(b->p, cap)) == NULL) {
      b->failed = 1;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }

/* Text of an element: & < > " ' escaped. */
static void put_text(buf_t *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': puts_(b, "&amp;"); break;
      case '<': puts_(b, "&lt;"); break;
      case '>': puts_(b, "&gt;"); break;
      case '"': puts_(b, "&quot;"); break;
      case '\'': puts_(b, "&#39;"); break;
      default: put(b, s, 1);
    }
  }
}

/* A path segment in a link: everything but unreserved bytes
 * (RFC 3986 §2.3) percent-encoded. */
static void put_href(buf_t *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      put(b, s, 1);
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      put(b, e, 3);
    }
  }
}

typedef struct ent_s {
  char *name;
  int dir;
} ent_t;

static int by_name(const void *a, const void *b) {
  return strcmp(((const ent_t *)a)->name, ((const ent_t *)b)->name);
}

int hr__static_listing(int rootfd, const char *name, hr_static_symlinks_t mode, int dotfiles,
                       const char *title, char **out, size_t *len) {
  int fd = hr__static_open(rootfd, name, mode), rc = 0;
  DIR *d;
  struct dirent *de;
  ent_t *v = NULL;
  size_t n = 0, cap = 0, i;
  buf_t b = {NULL, 0, 0, 0};
  *out = NULL;
  *len = 0;
  if (fd < 0) return 404;
  if ((d = fdopendir(fd)) == NULL) {
    close(fd);
    return 404;
  }
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' && (!dotfiles || de->d_name[1] == '\0' ||
                                 (de->d_name[1] == '.' && de->d_name[2] == '\0')))
      continue;
    if (n == cap) {
      ent_t *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
      if (nv == NULL) {
        rc = 503;
        break;
      }
      v = nv;
    }
    if ((v[n].name = strdup(de->d_name)) == NULL) {
      rc = 503;
      break;
    }
    v[n].dir = de->d_type == DT_DIR;
    n++;
  }
  closedir(d);
  if (rc == 0) {
    /* qsort's array must not be NULL even for no entries (C11 7.22.5):
     * an empty or dotfiles-only directory has none and no array. */
    if (n > 1) qsort(v, n, sizeof(*v), by_name);
    puts_(&b, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Index of ");
    put_text(&b, title);
    puts_(&b, "</title>\n<h1>Index of ");
    put_text(&b, title);
    puts_(&b, "</h1>\n<ul>\n");
    if (name[0] != '\0') puts_(&b, "<li><a href=\"../\">../</a></li>\n");
    for (i = 0; i < n; i++) {
      puts_(&b, "<li><a href=\"");
      put_href(&b, v[i].name);
      if (v[i].dir) puts_(&b, "/");
      puts_(&b, "\">");
      put_text(&b, v[i].name);
      if (v[i].dir) puts_(&b, "/");
      puts_(&b, "</a></li>\n");
    }
    puts_(&b, "</ul>\n");
    if (b.failed) {
      rc = 503;
      free(b.p);
    } else {
      *out = b.p;
      *len = b.len;
    }
  }
  for (i = 0; i < n; i++) free(v[i].name);
  free(v);
  return rc;
}
