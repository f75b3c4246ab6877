/* SPDX-License-Identifier: MIT */
/*
 * bench_upload: the memory a server spends on request bodies and on
 * connections that hold unfinished header sections, and whether slow
 * bodies can lock clients out.  One process: an hroute server on
 * 127.0.0.1 (one worker thread) and the clients on other threads; figures
 * are the process's RSS (the clients' own share is a few buffers).
 *
 *   bench_upload [bodies|heads|slow|all]
 *
 * bodies  one 1 GB body, then ten 100 MB bodies at once, to a buffered
 *         route with a 2 GiB limit: the peak RSS above the start (VmHWM,
 *         reset before each case through /proc/self/clear_refs).
 * heads   10,000 connections each sending 1,000 and then 16,000 bytes of a
 *         header section it never ends: RSS while they are held and 2 s
 *         after they closed.
 * slow    a server capped at 200 connections, 200 clients sending their
 *         bodies at 40 B/s in all (a byte every 5 s each): when a new
 *         client gets its answer (30 s at most).
 *
 * It uses only the public API, so the same source measures an older tree.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hroute.h>

/* /proc/self/status, opened once (10,000 connections later no descriptor
 * may be left for fopen). */
static int status_fd = -1;

static long status_kb(const char *key) {
  static char text[8192];
  const char *p;
  ssize_t n;
  if (status_fd < 0) status_fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  n = pread(status_fd, text, sizeof text - 1, 0);
  if (n <= 0) return -1;
  text[n] = '\0';
  p = strstr(text, key);
  return p != NULL ? atol(p + strlen(key)) : -1;
}

static void reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f != NULL) {
    fputs("5", f);
    fclose(f);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int connect_to(int port) {
  struct sockaddr_in a;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Reads until the status line is in; returns the status or -1. */
static int read_status(int fd) {
  char buf[512];
  size_t got = 0;
  while (got < sizeof buf - 1) {
    ssize_t k = recv(fd, buf + got, sizeof buf - 1 - got, 0);
    if (k <= 0) return -1;
    got += (size_t)k;
    buf[got] = '\0';
    if (strstr(buf, "\r\n") != NULL) return atoi(buf + 9);
  }
  return -1;
}

/* ---- the server ------------------------------------------------------------- */

static void h_len(hr_request_t *req, hr_response_t *res, void *udata) {
  char text[32];
  int n = snprintf(text, sizeof text, "%zu", hr_request_body(req).len);
  (void)udata;
  hr_response_send(res, 200, text, (size_t)n);
}

static void h_hello(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "hello", 5);
}

typedef struct srv_s {
  hr_router_t *router;
  hr_server_t *server;
  int port;
} srv_t;

static void srv_start(srv_t *s, unsigned max_conns) {
  hr_server_options_t o;
  hr_route_options_t ro;
  hr_router_new(&s->router, NULL);
  hr_route_options_init(&ro);
  ro.max_body_bytes = 2ull << 30;
  hr_router_add(s->router, "POST", "/up", h_len, NULL, &ro);
  hr_router_add(s->router, "GET", "/hello", h_hello, NULL, NULL);
  hr_server_options_init(&o);
  o.max_connections = max_conns;
  o.header_timeout_ms = 60000;
  o.body_timeout_ms = 10000;
  if (hr_server_new(&s->server, s->router, &o) != 0 ||
      hr_server_listen(s->server, "127.0.0.1", 0) != 0 || hr_server_start(s->server, 1) != 0) {
    fprintf(stderr, "bench_upload: the server did not start\n");
    exit(1);
  }
  s->port = hr_server_port(s->server, 0);
}

static void srv_stop(srv_t *s) {
  hr_server_stop(s->server, 1000);
  hr_server_free(s->server);
  hr_router_free(s->router);
}

/* ---- bodies ------------------------------------------------------------------ */

typedef struct up_s {
  int port;
  size_t len;
  int status;
} up_t;

static void *upload(void *arg) {
  up_t *u = arg;
  static char chunk[1 << 16];
  char head[160];
  size_t left = u->len;
  int fd = connect_to(u->port);
  u->status = -1;
  if (fd < 0) return NULL;
  memset(chunk, 'u', sizeof chunk);
  snprintf(head, sizeof head, "POST /up HTTP/1.1\r\nHost: b\r\nContent-Length: %zu\r\n\r\n",
           u->len);
  if (send_all(fd, head, strlen(head)) == 0) {
    while (left > 0) {
      size_t n = left < sizeof chunk ? left : sizeof chunk;
      if (send_all(fd, chunk, n) != 0) break;
      left -= n;
    }
    if (left == 0) u->status = read_status(fd);
  }
  close(fd);
  return NULL;
}

static void bodies(void) {
  srv_t s;
  up_t u[10];
  pthread_t th[10];
  long base;
  int i, ok = 1;
  srv_start(&s, 0);
  reset_peak();
  base = status_kb("VmRSS:");
  u[0].port = s.port, u[0].len = 1000000000;
  pthread_create(&th[0], NULL, upload, &u[0]);
  pthread_join(th[0], NULL);
  printf("bodies   one 1 GB body:       peak %6ld MB above the start (status %d)\n",
         (status_kb("VmHWM:") - base) / 1000, u[0].status);
  sleep(2); /* the trim after a burst (once a second) */
  reset_peak();
  base = status_kb("VmRSS:");
  for (i = 0; i < 10; i++) {
    u[i].port = s.port, u[i].len = 100000000;
    pthread_create(&th[i], NULL, upload, &u[i]);
  }
  for (i = 0; i < 10; i++) {
    pthread_join(th[i], NULL);
    ok &= u[i].status == 200;
  }
  printf("bodies   ten 100 MB at once:  peak %6ld MB above the start (%s)\n",
         (status_kb("VmHWM:") - base) / 1000, ok ? "all 200" : "NOT all 200");
  srv_stop(&s);
}

/* ---- unfinished header sections ------------------------------------------------ */

/* The clients run in a child process (its own descriptors), so the
 * figures are the server's alone.  The child connects n times, sends
 * `bytes` of a header section on each, writes a byte to `up`, waits for
 * one on `go`, closes them all and writes a byte again. */
static void heads_clients(int port, size_t bytes, int n, int up, int go) {
  char *head = malloc(bytes), c = 0;
  int *fds = calloc((size_t)n, sizeof *fds), i;
  size_t k = (size_t)snprintf(head, bytes, "GET /hello HTTP/1.1\r\nHost: b\r\nX-Pad: ");
  memset(head + k, 'p', bytes - k);
  for (i = 0; i < n; i++) {
    fds[i] = connect_to(port);
    if (fds[i] >= 0 && send_all(fds[i], head, bytes) != 0) {
      close(fds[i]);
      fds[i] = -1;
    }
  }
  if (write(up, &c, 1) != 1 || read(go, &c, 1) != 1) _exit(1);
  for (i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
  if (write(up, &c, 1) != 1) _exit(1);
  _exit(0);
}

static void heads_case(srv_t *s, size_t bytes, int n) {
  int up[2], go[2];
  char c = 0;
  long base = status_kb("VmRSS:"), during, after;
  hr_server_stats_t st;
  pid_t pid;
  if (pipe(up) != 0 || pipe(go) != 0) return;
  pid = fork();
  if (pid == 0) heads_clients(s->port, bytes, n, up[1], go[0]);
  if (read(up[0], &c, 1) != 1) return;
  sleep(1); /* the server reads what was sent */
  hr_server_stats(s->server, &st);
  during = status_kb("VmRSS:");
  if (write(go[1], &c, 1) != 1 || read(up[0], &c, 1) != 1) return;
  sleep(3); /* closed, and the pools' once-a-second trim */
  after = status_kb("VmRSS:");
  waitpid(pid, NULL, 0);
  printf("heads    %llu x %5zu B held: %4ld MB while held (%5ld B each, %llu read buffers), "
         "%4ld MB after they closed\n",
         (unsigned long long)st.connections_active, bytes, (during - base) / 1000,
         st.connections_active ? (during - base) * 1000 / (long)st.connections_active : 0,
         (unsigned long long)st.read_buffers_in_use, (after - base) / 1000);
  close(up[0]), close(up[1]), close(go[0]), close(go[1]);
}

static void heads(void) {
  static const size_t sizes[] = {1000, 16000};
  size_t i;
  for (i = 0; i < 2; i++) { /* each with a server of its own */
    srv_t s;
    srv_start(&s, 0);
    heads_case(&s, sizes[i], 10000);
    srv_stop(&s);
  }
}

/* ---- slow bodies ----------------------------------------------------------------- */

static void slow(void) {
  srv_t s;
  int fds[200], i, status = -1;
  double t0, t, next_byte;
  srv_start(&s, 200);
  for (i = 0; i < 200; i++) {
    fds[i] = connect_to(s.port);
    if (fds[i] >= 0)
      (void)send_all(fds[i], "POST /up HTTP/1.1\r\nHost: b\r\nContent-Length: 100000\r\n\r\n", 55);
  }
  usleep(200000);
  t0 = now_s();
  next_byte = t0;
  /* 200 connections, a byte each every 5 s: 40 B/s in all. */
  while ((t = now_s()) - t0 < 30) {
    int fd;
    if (t >= next_byte) {
      for (i = 0; i < 200; i++)
        if (fds[i] >= 0 && send(fds[i], "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
          close(fds[i]);
          fds[i] = -1;
        }
      next_byte += 5;
    }
    fd = connect_to(s.port);
    if (fd >= 0) {
      struct timeval tv = {1, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      if (send_all(fd, "GET /hello HTTP/1.1\r\nHost: b\r\n\r\n", 32) == 0)
        status = read_status(fd);
      close(fd);
      if (status == 200) break;
    }
    usleep(200000);
  }
  if (status == 200)
    printf("slow     200 bodies at 40 B/s, cap 200: a new client answered after %.1f s\n",
           now_s() - t0);
  else
    printf("slow     200 bodies at 40 B/s, cap 200: a new client NOT answered in 30 s\n");
  for (i = 0; i < 200; i++)
    if (fds[i] >= 0) close(fds[i]);
  srv_stop(&s);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "all";
  struct rlimit rl = {65536, 65536};
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) perror("bench_upload: setrlimit");
  (void)status_kb("VmRSS:");
  if (strcmp(what, "bodies") == 0 || strcmp(what, "all") == 0) bodies();
  if (strcmp(what, "heads") == 0 || strcmp(what, "all") == 0) heads();
  if (strcmp(what, "slow") == 0 || strcmp(what, "all") == 0) slow();
  return 0;
}
