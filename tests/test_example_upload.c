/* SPDX-License-Identifier: MIT */
/*
 * examples/upload.c as a user runs it: the built program is started on a
 * free loopback port with a fresh directory, sent multipart/form-data
 * uploads over raw sockets, and the directory is checked after each: two
 * files and a field saved byte-exact (201 naming them with their sizes),
 * a name already there refused with 409 without touching the file, a
 * file saved before a refused part removed again, names that would leave
 * the directory or hide a file refused with 400, a body that is not
 * multipart/form-data 415.  Then SIGTERM: the process must exit 0 (under
 * ASan: without a leak).
 *
 * The program is $HROUTE_BINARY_DIR/upload (CMake builds it first).
 *
 * ctest-labels: tsan
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "proc.h"

/* ---- bodies and files ------------------------------------------------------ */

typedef struct part_s {
  const char *name;     /* the form field */
  const char *filename; /* NULL: a plain field */
  const char *data;
  size_t len;
} part_t;

/* A multipart/form-data body of `parts` (boundary "b0UNDARY"), malloc'd. */
static char *form(const part_t *parts, size_t n, size_t *len) {
  size_t cap = 1024, i, at = 0;
  char *b;
  for (i = 0; i < n; i++) cap += parts[i].len + 256;
  b = malloc(cap);
  assert_non_null(b);
  for (i = 0; i < n; i++) {
    at += (size_t)snprintf(b + at, cap - at, "--b0UNDARY\r\nContent-Disposition: form-data; "
                                             "name=\"%s\"", parts[i].name);
    if (parts[i].filename != NULL)
      at += (size_t)snprintf(b + at, cap - at, "; filename=\"%s\"\r\nContent-Type: "
                                               "application/octet-stream", parts[i].filename);
    at += (size_t)snprintf(b + at, cap - at, "\r\n\r\n");
    memcpy(b + at, parts[i].data, parts[i].len);
    at += parts[i].len;
    at += (size_t)snprintf(b + at, cap - at, "\r\n");
  }
  at += (size_t)snprintf(b + at, cap - at, "--b0UNDARY--\r\n");
  *len = at;
  return b;
}

typedef struct sender_s {
  rc_t *c;
  const char *p;
  size_t n;
} sender_t;

static void *send_body(void *arg) {
  sender_t *s = arg;
  (void)rc_send(s->c, s->p, s->n); /* a refusal may close before the end */
  return NULL;
}

/* POSTs `parts` to /upload on a new connection and reads the response
 * (the body from a thread: a refused upload may not be read whole). */
static void post(int port, const part_t *parts, size_t n, const char *status, const char *want) {
  size_t len;
  char *body = form(parts, n, &len), head[256];
  sender_t s;
  pthread_t th;
  rc_t *c = rc_connect(port);
  assert_non_null(c);
  snprintf(head, sizeof head,
           "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; "
           "boundary=b0UNDARY\r\nContent-Length: %zu\r\n\r\n", len);
  assert_int_equal(rc_send_str(c, head), 0);
  s.c = c, s.p = body, s.n = len;
  assert_int_equal(pthread_create(&th, NULL, send_body, &s), 0);
  pthread_join(th, NULL);
  expect_response(c, status, want, NULL);
  rc_close(c);
  free(body);
}

static char dir[64];

/* Asserts DIR/name holds exactly `len` bytes of `data`. */
static void expect_file(const char *name, const char *data, size_t len) {
  char path[256], *got = malloc(len + 1);
  struct stat st;
  int fd;
  ssize_t n;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, len);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  n = read(fd, got, len + 1);
  close(fd);
  assert_int_equal(n, len);
  assert_memory_equal(got, data, len);
  free(got);
}

/* The number of entries in DIR (without "." and ".."). */
static int entries(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

static void remove_all(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[512];
  if (d == NULL) return;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void test_upload_example(void **state) {
  const char *bin = getenv("HROUTE_BINARY_DIR");
  static char program[4096];
  char *argv[] = {program, dir, "--host", "127.0.0.1", "--port", "0", NULL};
  const size_t big = 300000;
  char *photo = malloc(big), path[256];
  static const char notes[] = "hello notes\n";
  struct stat st;
  proc_t p;
  const char *at;
  int port, i;
  size_t k;
  (void)state;
  assert_non_null(bin);
  snprintf(program, sizeof program, "%s/upload", bin);
  assert_int_equal(access(program, X_OK), 0);
  snprintf(dir, sizeof dir, "/tmp/hr_upload_XXXXXX");
  assert_non_null(mkdtemp(dir));
  /* Bytes that look like the boundary's start now and then. */
  for (k = 0; k < big; k++) photo[k] = "\r\n--b0UNDAR"[k % 11] ^ (char)(k >> 11);
  proc_start(&p, argv);
  at = proc_wait_for(&p, "upload: listening on 127.0.0.1:");
  port = atoi(at + strlen("upload: listening on 127.0.0.1:"));
  assert_true(port > 0 && port < 65536);

  {
    /* Two files and a field: both files saved as sent, the field dropped. */
    const part_t parts[] = {{"photo", "photo.bin", photo, big},
                            {"title", NULL, "a trip", 6},
                            {"notes", "notes.txt", notes, sizeof notes - 1}};
    post(port, parts, 3, "HTTP/1.1 201 Created", "photo.bin 300000\nnotes.txt 12\n");
    expect_file("photo.bin", photo, big);
    expect_file("notes.txt", notes, sizeof notes - 1);
    assert_int_equal(entries(), 2);
    /* Again: the name is taken (O_EXCL), 409, and the file is as it was. */
    post(port, parts, 1, "HTTP/1.1 409 Conflict", NULL);
    expect_file("photo.bin", photo, big);
  }
  {
    /* A new file, then a taken name: 409, and the new file goes again
     * (removed on the pool just after the answer: waited for). */
    const part_t parts[] = {{"a", "fresh.txt", "fresh", 5},
                            {"b", "notes.txt", "other", 5}};
    post(port, parts, 2, "HTTP/1.1 409 Conflict", NULL);
    snprintf(path, sizeof path, "%s/fresh.txt", dir);
    for (i = 0; i < PROC_WAIT_MS && stat(path, &st) == 0; i++) usleep(1000);
    assert_int_equal(stat(path, &st), -1);
    expect_file("notes.txt", notes, sizeof notes - 1);
  }
  {
    /* Names that would leave the directory, or hide a file: 400. */
    const part_t up[] = {{"f", "../escape.txt", "x", 1}};
    const part_t hidden[] = {{"f", ".profile", "x", 1}};
    const part_t dots[] = {{"f", "..", "x", 1}};
    post(port, up, 1, "HTTP/1.1 400 Bad Request", NULL);
    post(port, hidden, 1, "HTTP/1.1 400 Bad Request", NULL);
    post(port, dots, 1, "HTTP/1.1 400 Bad Request", NULL);
    snprintf(path, sizeof path, "%s/../escape.txt", dir);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(entries(), 2);
  }
  {
    /* Not multipart/form-data: 415. */
    rc_t *c = rc_connect(port);
    assert_non_null(c);
    assert_int_equal(rc_send_str(c, "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
                                    "Content-Length: 2\r\n\r\nhi"),
                     0);
    expect_response(c, "HTTP/1.1 415 Unsupported Media Type", NULL, NULL);
    rc_close(c);
  }

  assert_int_equal(proc_stop(&p), 0);
  assert_non_null(strstr(p.out, "upload: saved photo.bin (300000 bytes)"));
  free(photo);
}

static int teardown(void **state) {
  (void)state;
  proc_kill();
  if (dir[0] != '\0') remove_all();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_upload_example, teardown),
  };
  signal(SIGPIPE, SIG_IGN);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
