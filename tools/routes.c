/* SPDX-License-Identifier: MIT */
/*
 * hroute-routes: checks a routes file and matches requests against it, with
 * the router alone (no server).  A routes file holds one route per line,
 * "METHODS pattern" (METHODS is "GET", "GET,POST" or "*"); "host NAME"
 * sends the routes that follow to NAME's table ("host *" back to the default
 * table); '#' starts a comment and blank lines are ignored.  `check`
 * registers every route, reports each rejected one on stderr as
 * "FILE:LINE: METHODS pattern: HR_EXXX: reason (at byte N)[; conflicts with
 * METHODS pattern]", warns on stdout about registered routes that are
 * probably mistakes ("FILE:LINE: warning: ..."), then prints the route tree
 * and a summary.  `match`
 * registers the routes the same way, then answers "METHOD target [host]"
 * lines from stdin with one JSON object per line, exactly what
 * hr_router_match() returned.  JSON strings are written byte for byte,
 * except '"' and '\' (escaped), control bytes 0x00-0x1f and 0x7f (as
 * \u00XX) and bytes that are not part of a well-formed UTF-8 sequence
 * (each as \u00XX, so "\u00e9" in the output stands for the single raw byte
 * 0xE9, while a valid "é" is passed through as its two bytes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hroute.h>

#define EXIT_REJECTED 1
#define EXIT_USAGE 2

static const char usage_text[] =
    "usage: hroute-routes [options] check FILE\n"
    "       hroute-routes [options] match FILE < requests\n"
    "\n"
    "check  registers every route of FILE, reports each rejected one on stderr\n"
    "       (FILE:LINE: METHODS pattern: HR_EXXX: reason (at byte N)\n"
    "       [; conflicts with METHODS pattern]), prints a warning for each\n"
    "       registered route that is probably a mistake (a method with\n"
    "       lower-case letters, a brace in a literal segment), the route\n"
    "       tree and \"N routes, M rejected, W warnings, K nodes, B bytes\".\n"
    "       Exit status 0 when none was rejected, 1 when some were.\n"
    "match  registers the routes the same way (rejected ones on stderr), then\n"
    "       reads \"METHOD target [host]\" lines from stdin (blank lines and\n"
    "       lines starting with '#' are skipped) and writes one JSON object\n"
    "       per request:\n"
    "       {\"method\":..,\"target\":..,\"status\":N,\"route\":..|null,\n"
    "        \"params\":{name:value,..},\"allow\":..|null,\"location\":..|null}\n"
    "       (params in pattern order, values decoded; in JSON strings '\"' and\n"
    "       '\\' are escaped, control bytes and bytes that are not part of\n"
    "       valid UTF-8 are written \\u00XX, one per byte).\n"
    "       Exit status 0, or 1 when a route was rejected or a request line\n"
    "       was malformed (the other lines are still answered).\n"
    "\n"
    "FILE: one route per line, \"METHODS pattern\" (GET, GET,POST or *);\n"
    "\"host NAME\" sends the following routes to NAME's table, \"host *\" back\n"
    "to the default table; '#' starts a comment.\n"
    "\n"
    "options:\n"
    "  --slash-redirect    redirect to the path with/without the trailing slash\n"
    "                      when only that one exists (HR_SLASH_REDIRECT)\n"
    "  --reject-unclean    400 for dot segments and \"//\" (HR_CLEAN_REJECT)\n"
    "                      instead of a redirect to the clean path\n"
    "  --case-insensitive  literal segments match ignoring ASCII case\n"
    "  --help              this text\n"
    "Exit status 2: usage or I/O error.\n";

/* ---- output helpers -------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at p[0..n), or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  size_t len, i;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    len = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    len = 4;
  else
    return 0;
  if (n < len) return 0;
  for (i = 1; i < len; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
  if (c == 0xED && p[1] > 0x9F) return 0; /* surrogate */
  if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
  if (c == 0xF4 && p[1] > 0x8F) return 0; /* above U+10FFFF */
  return len;
}

/* Writes `s` as a JSON string (see the top of the file for the rules). */
static void json_str(FILE *f, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, k;
  putc('"', f);
  while (i < n) {
    unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      putc('\\', f);
      putc(c, f);
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
      i++;
    } else if (c < 0x80) {
      putc(c, f);
      i++;
    } else if ((k = utf8_len(p + i, n - i)) != 0) {
      fwrite(p + i, 1, k, f);
      i += k;
    } else {
      fprintf(f, "\\u%04x", c);
      i++;
    }
  }
  putc('"', f);
}

static void json_span_or_null(FILE *f, hr_span_t s) {
  if (s.ptr == NULL)
    fputs("null", f);
  else
    json_str(f, s.ptr, s.len);
}

static void write_stdout(void *ctx, const char *p, size_t n) {
  (void)ctx;
  fwrite(p, 1, n, stdout);
}

/* ---- the routes file ------------------------------------------------------- */

typedef struct host_group_s {
  char *name; /* as written in the file */
  hr_group_t *group;
  struct host_group_s *next;
} host_group_t;

typedef struct loader_s {
  hr_router_t *router;
  hr_txn_t *txn;         /* every route goes in one transaction */
  const char *file;
  host_group_t *groups;  /* one per host name, reused on a repeated "host" */
  hr_group_t *current;   /* NULL: the default table */
  const char *bad_host;  /* set while the current "host" line was rejected */
  unsigned long bad_host_line;
  size_t registered, rejected;
  int lint;              /* check: warn about probable mistakes (stdout) */
  size_t warnings;
} loader_t;

static void no_handler(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)res;
  (void)udata;
}

/* Splits `line` in place into at most `max` whitespace-separated fields;
 * returns how many it found (max + 1 when there are more). */
static size_t split_fields(char *line, char **fields, size_t max) {
  size_t n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') *p++ = '\0';
    if (*p == '\0') return n;
    if (n == max) return max + 1;
    fields[n++] = p;
    while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
  }
}

static host_group_t *find_group(loader_t *ld, const char *name) {
  host_group_t *g;
  hr_span_t s = hr_span_cstr(name);
  for (g = ld->groups; g != NULL; g = g->next)
    if (hr_span_eq_nocase(hr_span_cstr(g->name), s)) return g;
  return NULL;
}

/* "host NAME": switches the current table.  Returns 0, or -1 when out of
 * memory (a rejected name is reported and counted, not fatal). */
static int set_host(loader_t *ld, const char *name, unsigned long lineno) {
  host_group_t *g;
  hr_group_t *grp;
  int rc;
  ld->bad_host = NULL;
  if (strcmp(name, "*") == 0) {
    ld->current = NULL;
    return 0;
  }
  if ((g = find_group(ld, name)) != NULL) {
    ld->current = g->group;
    return 0;
  }
  rc = hr_router_group(ld->router, name, NULL, &grp);
  if (rc != 0) {
    fprintf(stderr, "%s:%lu: host %s: %s: %s\n", ld->file, lineno, name,
            hr_err_name(rc), hr_strerror(rc));
    ld->rejected++;
    if (rc == HR_ENOMEM) return -1;
    ld->current = NULL;
    ld->bad_host = "rejected";
    ld->bad_host_line = lineno;
    return 0;
  }
  g = malloc(sizeof(*g));
  if (g == NULL || (g->name = strdup(name)) == NULL) {
    free(g);
    return -1;
  }
  g->group = grp;
  g->next = ld->groups;
  ld->groups = g;
  ld->current = grp;
  return 0;
}

static void report_rejected(const loader_t *ld, unsigned long lineno,
                            const char *methods, const char *pattern, int rc,
                            const hr_route_error_t *err) {
  fprintf(stderr, "%s:%lu: %s %s: %s: %s (at byte %zu)", ld->file, lineno,
          methods, pattern, hr_err_name(rc),
          err->reason != NULL ? err->reason : hr_strerror(rc), err->offset);
  if (err->conflict_len > 0)
    fprintf(stderr, "; conflicts with %s%s", err->conflict,
            err->conflict_len >= sizeof(err->conflict) ? "..." : "");
  fputc('\n', stderr);
}

/* Warns (on stdout, for `check`) about what registers fine but is
 * probably a mistake: a method with lower-case letters (methods are
 * case-sensitive, RFC 9110 §9.1: a client's "GET" never reaches "get"),
 * and a brace in a literal segment ("{id}" is a parameter only when it
 * fills its segment: "/files/{id}.json" matches the literal text). */
static void lint_route(loader_t *ld, const char *methods, const char *pattern,
                       unsigned long lineno) {
  const char *m = methods, *seg;
  while (*m) {
    const char *e = strchr(m, ',');
    size_t n = e ? (size_t)(e - m) : strlen(m), i;
    for (i = 0; i < n && !(m[i] >= 'a' && m[i] <= 'z'); i++)
      ;
    if (i < n) {
      char up[64];
      size_t k;
      for (k = 0; k < n && k < sizeof up - 1; k++)
        up[k] = (char)(m[k] >= 'a' && m[k] <= 'z' ? m[k] - 32 : m[k]);
      up[k] = '\0';
      printf("%s:%lu: warning: method \"%.*s\" has lower-case letters; methods are "
             "case-sensitive, clients send \"%s\"\n",
             ld->file, lineno, (int)n, m, up);
      ld->warnings++;
    }
    m += n + (e != NULL);
  }
  for (seg = pattern; *seg == '/'; ) {
    const char *e = strchr(seg + 1, '/');
    size_t n = e ? (size_t)(e - seg - 1) : strlen(seg + 1);
    const char *s = seg + 1;
    int param = n >= 2 && s[0] == '{' && s[n - 1] == '}';
    if (!param && (memchr(s, '{', n) != NULL || memchr(s, '}', n) != NULL)) {
      printf("%s:%lu: warning: '{' or '}' in the literal segment \"%.*s\"; {name} is a "
             "parameter only when it fills its segment\n",
             ld->file, lineno, (int)n, s);
      ld->warnings++;
    }
    if (e == NULL) break;
    seg = e;
  }
}

static int add_route(loader_t *ld, const char *methods, const char *pattern,
                     unsigned long lineno) {
  hr_route_options_t ro;
  hr_route_error_t err;
  int rc;
  if (ld->bad_host != NULL) {
    fprintf(stderr, "%s:%lu: %s %s: skipped: its host (line %lu) was rejected\n",
            ld->file, lineno, methods, pattern, ld->bad_host_line);
    ld->rejected++;
    return 0;
  }
  hr_route_options_init(&ro);
  memset(&err, 0, sizeof(err));
  ro.error = &err;
  rc = hr_txn_add(ld->txn, ld->current, methods, pattern, no_handler,
                  (void *)(uintptr_t)lineno, &ro);
  if (rc == 0) {
    ld->registered++;
    if (ld->lint) lint_route(ld, methods, pattern, lineno);
    return 0;
  }
  report_rejected(ld, lineno, methods, pattern, rc, &err);
  ld->rejected++;
  return rc == HR_ENOMEM ? -1 : 0;
}

/* Reads and registers the routes file, in one transaction: each route is
 * checked as its line is read, and the table is built once at the end.
 * Returns 0, or -1 after an I/O, out-of-memory or commit error (reported). */
static int load_routes(loader_t *ld) {
  FILE *f = fopen(ld->file, "r");
  char *line = NULL, *fields[3];
  size_t cap = 0;
  unsigned long lineno = 0;
  hr_route_error_t err;
  int rc = 0;
  if (f == NULL) {
    fprintf(stderr, "hroute-routes: %s: %s\n", ld->file, strerror(errno));
    return -1;
  }
  if (hr_router_begin(ld->router, &ld->txn) != 0) {
    fprintf(stderr, "hroute-routes: out of memory\n");
    fclose(f);
    return -1;
  }
  while (rc == 0 && getline(&line, &cap, f) != -1) {
    char *hash = strchr(line, '#');
    size_t n;
    lineno++;
    if (hash != NULL) *hash = '\0';
    n = split_fields(line, fields, 2);
    if (n == 0) continue;
    if (n != 2) {
      fprintf(stderr, "%s:%lu: expected \"METHODS pattern\" or \"host NAME\"\n",
              ld->file, lineno);
      ld->rejected++;
      continue;
    }
    if (strcmp(fields[0], "host") == 0)
      rc = set_host(ld, fields[1], lineno);
    else
      rc = add_route(ld, fields[0], fields[1], lineno);
    if (rc != 0) fprintf(stderr, "hroute-routes: out of memory\n");
  }
  if (rc == 0 && ferror(f)) {
    fprintf(stderr, "hroute-routes: %s: read error\n", ld->file);
    rc = -1;
  }
  free(line);
  fclose(f);
  if (rc != 0) {
    hr_txn_abort(ld->txn);
    ld->txn = NULL;
    return rc;
  }
  memset(&err, 0, sizeof(err));
  rc = hr_txn_commit(ld->txn, &err);
  ld->txn = NULL;
  if (rc != 0) {
    fprintf(stderr, "%s: the routes as a whole: %s: %s\n", ld->file, hr_err_name(rc),
            err.reason != NULL ? err.reason : hr_strerror(rc));
    return -1;
  }
  return 0;
}

static void loader_free(loader_t *ld) {
  host_group_t *g;
  while ((g = ld->groups) != NULL) {
    ld->groups = g->next;
    free(g->name);
    free(g);
  }
}

/* ---- subcommands ----------------------------------------------------------- */

static int cmd_check(loader_t *ld) {
  hr_router_stats_t st;
  if (hr_router_dump(ld->router, write_stdout, NULL) != 0) {
    fprintf(stderr, "hroute-routes: out of memory\n");
    return EXIT_USAGE;
  }
  hr_router_stats(ld->router, &st);
  printf("%zu routes, %zu rejected, %zu warnings, %zu nodes, %zu bytes\n", st.routes,
         ld->rejected, ld->warnings, st.nodes, st.table_bytes);
  if (fflush(stdout) != 0) return EXIT_USAGE;
  return ld->rejected ? EXIT_REJECTED : 0;
}

static void print_match(const char *method, const char *target,
                        const hr_match_t *m) {
  size_t i;
  fputs("{\"method\":", stdout);
  json_str(stdout, method, strlen(method));
  fputs(",\"target\":", stdout);
  json_str(stdout, target, strlen(target));
  printf(",\"status\":%d,\"route\":", m->status);
  if (m->route != NULL) {
    hr_span_t p = hr_route_pattern(m->route);
    json_str(stdout, p.ptr, p.len);
  } else {
    fputs("null", stdout);
  }
  fputs(",\"params\":{", stdout);
  for (i = 0; i < m->nparams; i++) {
    if (i > 0) putc(',', stdout);
    json_str(stdout, m->params[i].name.ptr, m->params[i].name.len);
    putc(':', stdout);
    json_str(stdout, m->params[i].value.ptr, m->params[i].value.len);
  }
  fputs("},\"allow\":", stdout);
  json_span_or_null(stdout, m->allow);
  fputs(",\"location\":", stdout);
  json_span_or_null(stdout, m->location);
  fputs("}\n", stdout);
}

static int cmd_match(loader_t *ld) {
  char *line = NULL, *fields[3], *buf = NULL;
  size_t cap = 0, bufcap = 0;
  unsigned long lineno = 0;
  int status = ld->rejected ? EXIT_REJECTED : 0;
  while (getline(&line, &cap, stdin) != -1) {
    const char *host;
    size_t n;
    hr_match_t m;
    int rc;
    lineno++;
    n = split_fields(line, fields, 3);
    if (n == 0 || fields[0][0] == '#') continue;
    if (n < 2 || n > 3) {
      fprintf(stderr, "<stdin>:%lu: expected \"METHOD target [host]\"\n", lineno);
      status = EXIT_REJECTED;
      continue;
    }
    host = n == 3 ? fields[2] : "";
    /* As the server: with what there is, then with m.need (hr_router_match;
     * the table does not change here). */
    rc = hr_router_match(ld->router, hr_span_cstr(fields[0]), hr_span_cstr(host),
                         hr_span_cstr(fields[1]), buf, bufcap, &m);
    if (rc == HR_ENOSPC) {
      char *nb = realloc(buf, m.need);
      if (nb == NULL) {
        fprintf(stderr, "hroute-routes: out of memory\n");
        status = EXIT_USAGE;
        break;
      }
      buf = nb;
      bufcap = m.need;
      rc = hr_router_match(ld->router, hr_span_cstr(fields[0]), hr_span_cstr(host),
                           hr_span_cstr(fields[1]), buf, bufcap, &m);
    }
    if (rc != 0) {
      fputs("{\"method\":", stdout);
      json_str(stdout, fields[0], strlen(fields[0]));
      fputs(",\"target\":", stdout);
      json_str(stdout, fields[1], strlen(fields[1]));
      printf(",\"error\":\"%s\"}\n", hr_err_name(rc));
      status = EXIT_REJECTED;
      continue;
    }
    print_match(fields[0], fields[1], &m);
  }
  if (ferror(stdin)) {
    fprintf(stderr, "hroute-routes: <stdin>: read error\n");
    status = EXIT_USAGE;
  }
  free(buf);
  free(line);
  if (fflush(stdout) != 0) status = EXIT_USAGE;
  return status;
}

/* ---- main ------------------------------------------------------------------ */

static int usage(FILE *f, int status) {
  fputs(usage_text, f);
  return status;
}

int main(int argc, char **argv) {
  hr_router_options_t opts;
  loader_t ld;
  const char *cmd = NULL, *file = NULL;
  int i, rc, status;
  hr_router_options_init(&opts);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
      return usage(stdout, 0);
    if (strcmp(a, "--slash-redirect") == 0)
      opts.trailing_slash = HR_SLASH_REDIRECT;
    else if (strcmp(a, "--reject-unclean") == 0)
      opts.unclean_path = HR_CLEAN_REJECT;
    else if (strcmp(a, "--case-insensitive") == 0)
      opts.case_insensitive = 1;
    else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "hroute-routes: unknown option %s\n", a);
      return usage(stderr, EXIT_USAGE);
    } else if (cmd == NULL)
      cmd = a;
    else if (file == NULL)
      file = a;
    else
      return usage(stderr, EXIT_USAGE);
  }
  if (cmd == NULL || file == NULL ||
      (strcmp(cmd, "check") != 0 && strcmp(cmd, "match") != 0))
    return usage(stderr, EXIT_USAGE);

  memset(&ld, 0, sizeof(ld));
  ld.file = file;
  ld.lint = strcmp(cmd, "check") == 0;
  rc = hr_router_new(&ld.router, &opts);
  if (rc != 0) {
    fprintf(stderr, "hroute-routes: %s\n", hr_strerror(rc));
    return EXIT_USAGE;
  }
  if (load_routes(&ld) != 0)
    status = EXIT_USAGE;
  else if (strcmp(cmd, "check") == 0)
    status = cmd_check(&ld);
  else
    status = cmd_match(&ld);
  loader_free(&ld);
  hr_router_free(ld.router);
  return status;
}
