/* SPDX-License-Identifier: MIT */
/*
 * Conformance tests for the router through the hroute-routes tool, driven by
 * the files in tests/routes/: for every NAME.routes there is
 *   NAME.in + NAME.out   requests for `hroute-routes match` and the exact
 *                        JSON lines expected on stdout, and/or
 *   NAME.check           the exact stdout expected from `hroute-routes check`
 *                        (the byte count of the summary line is not compared:
 *                        it depends on the platform's struct sizes);
 *   NAME.err             the exact stderr expected (no file: none).
 * The expected exit status is 1 when NAME.err is not empty, else 0.  A line
 * "# flags: --opt ..." in NAME.routes gives the tool's options.  The tool is
 * run with tests/routes/ as its working directory and "NAME.routes" as its
 * argument, so file names in messages do not depend on the checkout.  The
 * tool is found in $HROUTE_BINARY_DIR, the data in $HROUTE_SOURCE_DIR (both
 * set by CMake); without the tool (HROUTE_BUILD_TOOLS=OFF) the tests skip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CASES 64
#define MAX_FLAGS 8

static char tool[4096];
static char datadir[4096];

typedef struct tcase_s {
  char name[128];
} tcase_t;

static tcase_t cases[MAX_CASES];

/* Reads a whole file; returns NULL when it does not exist.  *len gets its
 * size.  The result is NUL-terminated and must be freed. */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0;
  if (f == NULL) return NULL;
  for (;;) {
    size_t got;
    if (cap - n < 4096) {
      char *nb = realloc(buf, cap + 65536);
      assert_non_null(nb);
      buf = nb;
      cap += 65536;
    }
    got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  assert_false(ferror(f));
  fclose(f);
  buf[n] = '\0';
  if (len != NULL) *len = n;
  return buf;
}

static char *path_of(const char *name, const char *ext) {
  static char buf[4][4096];
  static int next;
  char *p = buf[next++ % 4];
  int n = snprintf(p, sizeof buf[0], "%s/%s%s", datadir, name, ext);
  assert_true(n > 0 && (size_t)n < sizeof buf[0]);
  return p;
}

/* The options from a "# flags:" line of the routes file. */
static size_t read_flags(const char *routes, char flags[MAX_FLAGS][64]) {
  const char *line = strstr(routes, "# flags:");
  size_t n = 0;
  if (line == NULL) return 0;
  line += strlen("# flags:");
  while (*line != '\n' && *line != '\0') {
    size_t k = 0;
    while (*line == ' ' || *line == '\t') line++;
    while (*line != ' ' && *line != '\t' && *line != '\n' && *line != '\0') {
      if (k + 1 < 64) flags[n][k++] = *line;
      line++;
    }
    if (k > 0) {
      flags[n][k] = '\0';
      if (++n == MAX_FLAGS) break;
    }
  }
  return n;
}

/* Runs the tool: `cmd` (check or match) on NAME.routes, stdin from `in`
 * (NULL: /dev/null).  Returns the exit status; stdout and stderr are left in
 * the files `out` and `err`. */
static int run_tool(const char *name, const char *cmd, const char *in,
                    const char *out, const char *err) {
  char routes_arg[256], flags[MAX_FLAGS][64];
  char *argv[MAX_FLAGS + 4];
  char *routes = slurp(path_of(name, ".routes"), NULL);
  size_t nflags, i, argc = 0;
  pid_t pid;
  int status;
  assert_non_null(routes);
  nflags = read_flags(routes, flags);
  free(routes);
  snprintf(routes_arg, sizeof routes_arg, "%s.routes", name);
  argv[argc++] = tool;
  for (i = 0; i < nflags; i++) argv[argc++] = flags[i];
  argv[argc++] = (char *)cmd;
  argv[argc++] = routes_arg;
  argv[argc] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fi = open(in != NULL ? in : "/dev/null", O_RDONLY);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fi < 0 || fo < 0 || fe < 0 || dup2(fi, 0) < 0 || dup2(fo, 1) < 0 ||
        dup2(fe, 2) < 0 || chdir(datadir) != 0)
      _exit(126);
    execv(tool, argv);
    _exit(127);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status))
    fail_msg("%s %s: the tool died (signal %d)", cmd, name,
             WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return WEXITSTATUS(status);
}

/* In a check summary "N routes, M rejected, W warnings, K nodes, B bytes",
 * replaces B
 * with "_". */
static void mask_bytes(char *text) {
  char *p = text;
  while ((p = strstr(p, " bytes\n")) != NULL) {
    char *d = p;
    while (d > text && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d < p && d > text && d[-1] == ' ') {
      memmove(d + 1, p, strlen(p) + 1);
      *d = '_';
      p = d + 1;
    }
    p += strlen(" bytes\n");
  }
}

/* Prints every line where `got` differs from `want`; returns how many. */
static unsigned compare(const char *what, const char *want, const char *got) {
  const char *w = want, *g = got;
  unsigned line = 1, bad = 0;
  while (*w != '\0' || *g != '\0') {
    const char *we = strchr(w, '\n'), *ge = strchr(g, '\n');
    size_t wl = we ? (size_t)(we - w) : strlen(w);
    size_t gl = ge ? (size_t)(ge - g) : strlen(g);
    if (wl != gl || memcmp(w, g, wl) != 0 || !we != !ge) {
      print_error("%s, line %u:\n  want: %.*s\n  got:  %.*s\n", what, line,
                  (int)wl, *w ? w : "(end of output)", (int)gl,
                  *g ? g : "(end of output)");
      bad++;
    }
    w = we ? we + 1 : w + wl;
    g = ge ? ge + 1 : g + gl;
    line++;
  }
  return bad;
}

/* Runs `cmd` on case `name` and compares stdout with `want_out_file`,
 * stderr with NAME.err and the exit status with what NAME.err implies. */
static void expect_run(const char *name, const char *cmd, const char *in,
                       const char *want_out_file, int mask) {
  char out[] = "/tmp/hroute-routes-out.XXXXXX";
  char err[] = "/tmp/hroute-routes-err.XXXXXX";
  char *want_out, *want_err, *got_out, *got_err, what[256];
  int fo = mkstemp(out), fe = mkstemp(err), status, want_status;
  unsigned bad = 0;
  assert_true(fo >= 0 && fe >= 0);
  close(fo);
  close(fe);
  status = run_tool(name, cmd, in, out, err);
  got_out = slurp(out, NULL);
  got_err = slurp(err, NULL);
  unlink(out);
  unlink(err);
  want_out = slurp(want_out_file, NULL);
  want_err = slurp(path_of(name, ".err"), NULL);
  if (want_out != NULL && got_out != NULL && got_err != NULL) {
    if (mask) {
      mask_bytes(want_out);
      mask_bytes(got_out);
    }
    snprintf(what, sizeof what, "%s %s: stderr", cmd, name);
    bad += compare(what, want_err != NULL ? want_err : "", got_err);
    snprintf(what, sizeof what, "%s %s: stdout", cmd, name);
    bad += compare(what, want_out, got_out);
    want_status = want_err != NULL && want_err[0] != '\0' ? 1 : 0;
    if (status != want_status) {
      print_error("%s %s: exit status %d, want %d\n", cmd, name, status,
                  want_status);
      bad++;
    }
  } else {
    bad++;
  }
  free(want_out);
  free(want_err);
  free(got_out);
  free(got_err);
  if (bad != 0)
    fail_msg("%s %s: %u difference(s); reproduce with: cd %s && %s %s %s.routes%s%s",
             cmd, name, bad, datadir, tool, cmd, name, in ? " < " : "",
             in ? in : "");
}

static void test_case(void **state) {
  const tcase_t *c = *state;
  struct stat st;
  int ran = 0;
  if (tool[0] == '\0' || stat(tool, &st) != 0) {
    print_message("hroute-routes not built (HROUTE_BUILD_TOOLS=OFF?): skipped\n");
    skip();
  }
  if (stat(path_of(c->name, ".in"), &st) == 0) {
    expect_run(c->name, "match", path_of(c->name, ".in"),
               path_of(c->name, ".out"), 0);
    ran = 1;
  }
  if (stat(path_of(c->name, ".check"), &st) == 0) {
    expect_run(c->name, "check", NULL, path_of(c->name, ".check"), 1);
    ran = 1;
  }
  if (!ran) fail_msg("%s.routes has neither a .in nor a .check file", c->name);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const tcase_t *)a)->name, ((const tcase_t *)b)->name);
}

int main(void) {
  const char *src = getenv("HROUTE_SOURCE_DIR");
  const char *bin = getenv("HROUTE_BINARY_DIR");
  struct CMUnitTest tests[MAX_CASES];
  struct dirent *de;
  size_t n = 0, i;
  DIR *d;
  if (src == NULL || bin == NULL) {
    fprintf(stderr, "HROUTE_SOURCE_DIR and HROUTE_BINARY_DIR must be set "
                    "(ctest sets them)\n");
    return 1;
  }
  snprintf(tool, sizeof tool, "%s/hroute-routes", bin);
  snprintf(datadir, sizeof datadir, "%s/tests/routes", src);
  d = opendir(datadir);
  if (d == NULL) {
    fprintf(stderr, "%s: %s\n", datadir, strerror(errno));
    return 1;
  }
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len <= 7 || strcmp(de->d_name + len - 7, ".routes") != 0) continue;
    if (n == MAX_CASES || len - 7 >= sizeof cases[0].name) {
      fprintf(stderr, "too many cases or name too long: %s\n", de->d_name);
      closedir(d);
      return 1;
    }
    memcpy(cases[n].name, de->d_name, len - 7);
    cases[n].name[len - 7] = '\0';
    n++;
  }
  closedir(d);
  if (n == 0) {
    fprintf(stderr, "no *.routes files in %s\n", datadir);
    return 1;
  }
  qsort(cases, n, sizeof cases[0], by_name);
  for (i = 0; i < n; i++) {
    memset(&tests[i], 0, sizeof tests[i]);
    tests[i].name = cases[i].name;
    tests[i].test_func = test_case;
    tests[i].initial_state = &cases[i];
  }
  return _cmocka_run_group_tests("routes_tool", tests, n, NULL, NULL);
}
