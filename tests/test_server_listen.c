/* SPDX-License-Identifier: MIT */
/*
 * Listening sockets of worker threads: by default one socket per address
 * that every worker polls, so that no other socket (another process of the
 * same user included) can join the port; with reuseport, one SO_REUSEPORT
 * socket per worker, which another SO_REUSEPORT socket can join.  Both
 * serve every connection.  A host name listens on each of its addresses
 * with one port; failures say which address (hr_error_detail).
 *
 * ctest-labels: tsan
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netdb.h>

#include "fixture.h"
#include "server/internal.h"

/* Binds a socket with SO_REUSEPORT to 127.0.0.1:port; returns 0 or the
 * errno of bind. */
static int try_join(int port) {
  struct sockaddr_in sa;
  int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0), err = 0;
  assert_true(fd >= 0);
  assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
  assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons((uint16_t)port);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) err = errno;
  close(fd);
  return err;
}

/* `n` connections at once, each with one request, all answered. */
static void serve_many(fx_t *fx, int n) {
  rc_t *c[32];
  int i;
  assert_true(n <= 32);
  for (i = 0; i < n; i++) c[i] = fx_connect(fx);
  for (i = 0; i < n; i++)
    assert_int_equal(rc_send_str(c[i], "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  for (i = 0; i < n; i++) expect_response(c[i], "HTTP/1.1 200 OK", "root", NULL);
  expect_stat(fx, FX_ACCEPTED, (uint64_t)n);
}

static void test_shared_socket(void **state) {
  fx_t *fx = *state;
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_start(fx, 2);
  serve_many(fx, 32);
  assert_int_equal(try_join(fx->port), EADDRINUSE);
}

static void test_reuseport(void **state) {
  fx_t *fx = *state;
  hr_listen_options_t lo;
  hr_listen_options_init(&lo);
  lo.reuseport = 1;
  fx->listen = &lo;
  fx_route(fx, "GET", "/", ta_text, "root");
  fx_start(fx, 2);
  serve_many(fx, 32);
  assert_int_equal(try_join(fx->port), 0); /* what the option allows */
}

static void test_listen_option_errors(void **state) {
  fx_t *fx = *state;
  hr_server_t *s = NULL;
  hr_listen_options_t lo;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(fd, 8), 0);
  assert_int_equal(hr_server_new(&s, fx->router, NULL), 0);
  hr_listen_options_init(&lo);
  lo.reuseport = 2;
  assert_int_equal(hr_server_listen_ex(s, "127.0.0.1", 0, &lo), HR_EINVAL);
  /* A passed socket is one socket. */
  lo.reuseport = 1;
  assert_int_equal(hr_server_listen_fd(s, fd, &lo), HR_EINVAL);
  /* The caller keeps it: still blocking, still open. */
  assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  hr_server_free(s);
  assert_int_equal(close(fd), 0);
}

/* A listening socket on 127.0.0.1 at descriptor `at`; its port. */
static int listen_at(int at) {
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(fd, 8), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
  if (fd != at) {
    assert_int_equal(dup2(fd, at), at);
    close(fd);
  }
  return ntohs(sa.sin_port);
}

static void test_socket_activation(void **state) {
  fx_t *fx = *state;
  char pid[32];
  size_t n = 99;
  int saved[2], port3, port4, i;
  rc_t *c;
  fx_route(fx, "GET", "/", ta_text, "root");
  /* Descriptors 3 and 4 are the passed ones: keep what the test process
   * had there. */
  for (i = 0; i < 2; i++) saved[i] = fcntl(3 + i, F_DUPFD_CLOEXEC, 10);
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  assert_int_equal(hr_server_listen_activated(fx->server, NULL, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(hr_server_listen_activated(fx->server, NULL, NULL), HR_EINVAL);
  /* Meant for another process: left alone. */
  setenv("LISTEN_PID", "1", 1);
  setenv("LISTEN_FDS", "2", 1);
  assert_int_equal(hr_server_listen_activated(fx->server, NULL, &n), 0);
  assert_int_equal(n, 0);
  assert_string_equal(getenv("LISTEN_FDS"), "2");
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  setenv("LISTEN_PID", pid, 1);
  setenv("LISTEN_FDS", "2x", 1);
  assert_int_equal(hr_server_listen_activated(fx->server, NULL, &n), HR_EINVAL);
  port3 = listen_at(3);
  port4 = listen_at(4);
  setenv("LISTEN_FDS", "2", 1);
  setenv("LISTEN_FDNAMES", "a:b", 1);
  assert_int_equal(hr_server_listen_activated(fx->server, NULL, &n), 0);
  assert_int_equal(n, 2);
  assert_null(getenv("LISTEN_PID"));
  assert_null(getenv("LISTEN_FDS"));
  assert_null(getenv("LISTEN_FDNAMES"));
  assert_int_equal(hr_server_start(fx->server, 2), 0);
  fx->started = 1;
  assert_int_equal(hr_server_port(fx->server, 0), port3);
  assert_int_equal(hr_server_port(fx->server, 1), port4);
  for (i = 0; i < 2; i++) {
    fx->port = i == 0 ? port3 : port4;
    c = fx_connect(fx);
    assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  }
  assert_int_equal(fx_stop(fx, 1000), 0);
  /* The server closed 3 and 4; put back what was there. */
  for (i = 0; i < 2; i++) {
    assert_int_equal(fcntl(3 + i, F_GETFD), -1);
    if (saved[i] >= 0) {
      assert_int_equal(dup2(saved[i], 3 + i), 3 + i);
      close(saved[i]);
    }
  }
}

/* A binary upgrade: the running server hands its listening socket to a
 * successor (hr_server_listener_fd -> hr_server_listen_fd), then stops;
 * connections made before, during and after are all served, by one or
 * the other, and none is refused. */
static void h_old(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "old", 3);
}

static void h_new(hr_request_t *req, hr_response_t *res, void *udata) {
  (void)req;
  (void)udata;
  hr_response_send(res, 200, "new", 3);
}

static void test_hand_over(void **state) {
  fx_t *fx = *state;
  hr_router_t *r2 = NULL;
  hr_server_t *s2 = NULL;
  rc_t *c;
  rc_response_t r;
  int fd, port, i;
  fx_route(fx, "GET", "/", h_old, NULL);
  assert_int_equal(hr_server_new(&s2, fx->router, NULL), 0);
  assert_int_equal(hr_server_listen(s2, "127.0.0.1", 0), 0);
  assert_int_equal(hr_server_listener_fd(s2, 0), HR_ESTATE); /* not bound yet */
  hr_server_free(s2);
  s2 = NULL;
  fx_start(fx, 2);
  port = fx->port;
  assert_int_equal(hr_server_listener_fd(fx->server, 1), HR_EINVAL);
  assert_int_equal(hr_server_listener_fd(NULL, 0), HR_EINVAL);
  fd = hr_server_listener_fd(fx->server, 0);
  assert_true(fd >= 0);
  assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  /* The successor. */
  assert_int_equal(hr_router_new(&r2, NULL), 0);
  assert_int_equal(hr_router_add(r2, "GET", "/", h_new, NULL, NULL), 0);
  assert_int_equal(hr_server_new(&s2, r2, NULL), 0);
  assert_int_equal(hr_server_listen_fd(s2, fd, NULL), 0);
  assert_int_equal(hr_server_start(s2, 1), 0);
  assert_int_equal(hr_server_port(s2, 0), port);
  /* Both serve now; the old one stops. */
  c = fx_connect(fx);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", NULL, &r);
  assert_true(strcmp(r.body, "old") == 0 || strcmp(r.body, "new") == 0);
  rc_response_free(&r);
  assert_int_equal(fx_stop(fx, 1000), 0);
  /* Only the successor is left, on the same port. */
  for (i = 0; i < 10; i++) {
    c = rc_connect(port);
    assert_non_null(c);
    assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
    expect_response(c, "HTTP/1.1 200 OK", "new", NULL);
    rc_close(c);
  }
  assert_int_equal(hr_server_stop(s2, 1000), 0);
  hr_server_free(s2);
  hr_router_free(r2);
}

/* ---- host names, several addresses, error details ------------------------ */

/* GET / on a new connection to host:port (numeric); asserts "root". */
static void get_root_at(const char *host, int port) {
  rc_t *c = rc_connect_ex(host, port, 0);
  if (c == NULL) fail_msg("connect %s port %d: errno %d", host, port, rc_connect_errno);
  assert_int_equal(rc_send_str(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 0);
  expect_response(c, "HTTP/1.1 200 OK", "root", NULL);
  rc_close(c);
}

/* "localhost" is resolved: the server listens on every address the
 * system gives for it (127.0.0.1, and ::1 where /etc/hosts has it), all
 * on the one port hr_server_port(0) reports; the next listen call is
 * index 1 whatever the number of addresses. */
static void test_host_name(void **state) {
  fx_t *fx = *state;
  struct addrinfo hints, *res = NULL, *ai;
  char text[INET6_ADDRSTRLEN];
  int port, n = 0;
  fx_route(fx, "GET", "/", ta_text, "root");
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr_server_listen(fx->server, "localhost", 0), 0);
  assert_int_equal(hr_server_listen(fx->server, "127.0.0.1", 0), 0);
  assert_int_equal(hr_server_start(fx->server, 2), 0);
  fx->started = 1;
  port = hr_server_port(fx->server, 0);
  assert_true(port > 0);
  assert_true(hr_server_port(fx->server, 1) > 0);
  assert_int_not_equal(hr_server_port(fx->server, 1), port);
  assert_int_equal(hr_server_port(fx->server, 2), 0);
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  assert_int_equal(getaddrinfo("localhost", NULL, &hints, &res), 0);
  for (ai = res; ai != NULL; ai = ai->ai_next) {
    const void *in = ai->ai_family == AF_INET
                         ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                         : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
    assert_non_null(inet_ntop(ai->ai_family, in, text, sizeof text));
    get_root_at(text, port);
    n++;
  }
  freeaddrinfo(res);
  assert_true(n >= 1);
  get_root_at("127.0.0.1", hr_server_port(fx->server, 1));
}

/* A name's addresses as hr_server_listen_ex adds them once resolved
 * (this host's /etc/hosts may give "localhost" one address only): ::1
 * and 127.0.0.1 as one listen call share one port, picked by the first,
 * and the listen options (a PROXY setting here, freed once); a group of
 * several sockets is not one socket to hand over. */
static void test_addresses_share_port(void **state) {
  fx_t *fx = *state;
  const char *const trusted[] = {"10.0.0.0/8", NULL};
  struct sockaddr_storage ss[2];
  hr_listen_options_t lo;
  int port, fd;
  fx_route(fx, "GET", "/", ta_text, "root");
  memset(ss, 0, sizeof ss);
  assert_int_equal(uv_ip6_addr("::1", 0, (struct sockaddr_in6 *)&ss[0]), 0);
  assert_int_equal(uv_ip4_addr("127.0.0.1", 0, (struct sockaddr_in *)&ss[1]), 0);
  hr_listen_options_init(&lo);
  lo.proxy = HR_PROXY_OPTIONAL;
  lo.proxy_trusted = trusted;
  assert_int_equal(hr_server_new(&fx->server, fx->router, &fx->opts), 0);
  assert_int_equal(hr__server_listen_addrs(fx->server, ss, 2, 0, &lo), 0);
  assert_int_equal(hr_server_listen(fx->server, "127.0.0.1", 0), 0);
  assert_int_equal(hr_server_start(fx->server, 2), 0);
  fx->started = 1;
  port = hr_server_port(fx->server, 0);
  assert_true(port > 0);
  get_root_at("::1", port);
  get_root_at("127.0.0.1", port);
  get_root_at("127.0.0.1", hr_server_port(fx->server, 1));
  assert_int_equal(hr_server_listener_fd(fx->server, 0), HR_EINVAL);
  fd = hr_server_listener_fd(fx->server, 1);
  assert_true(fd >= 0);
  close(fd);
}

/* A listening socket on `host` (numeric) with a port the system picks;
 * returns its descriptor and stores the port. */
static int busy_socket(const char *host, int *port) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  int fd;
  memset(&ss, 0, sizeof ss);
  if (uv_ip4_addr(host, 0, (struct sockaddr_in *)&ss) != 0)
    assert_int_equal(uv_ip6_addr(host, 0, (struct sockaddr_in6 *)&ss), 0);
  fd = socket(ss.ss_family, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(bind(fd, (struct sockaddr *)&ss,
                        ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                : sizeof(struct sockaddr_in6)),
                   0);
  assert_int_equal(listen(fd, 8), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
  *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                        : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return fd;
}

/* hr_error_detail from another thread: a failure there is its own. */
typedef struct {
  hr_router_t *router;
  int rc;
  char detail[512];
  char mine[512]; /* what EADDRINUSE's detail is on that thread */
} other_t;

static void other_thread(void *arg) {
  other_t *o = arg;
  hr_server_t *s = NULL;
  /* No cmocka assertion off the test's thread: the test checks o. */
  if ((o->rc = hr_server_new(&s, o->router, NULL)) != 0) return;
  o->rc = hr_server_listen(s, "10.1", 80);
  snprintf(o->detail, sizeof o->detail, "%s", hr_error_detail(o->rc));
  snprintf(o->mine, sizeof o->mine, "%s", hr_error_detail(UV_EADDRINUSE));
  hr_server_free(s);
}

/* What a failed listen, attach or start says: the address in use (IPv4
 * and IPv6, by hr_server_start and hr_server_attach), an address that is
 * not one; the code's message for another code, after a success, and on
 * another thread. */
static void test_error_details(void **state) {
  fx_t *fx = *state;
  hr_server_t *s = NULL;
  uv_loop_t loop;
  uv_thread_t th;
  other_t other;
  char want[128];
  int fd, port;
  assert_int_equal(hr_server_new(&s, fx->router, NULL), 0);
  assert_int_equal(hr_server_listen(s, "1.2.3", 0), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL), "\"1.2.3\" is not an IPv4 or IPv6 address");
  assert_string_equal(hr_error_detail(UV_EADDRINUSE), hr_strerror(UV_EADDRINUSE));
  assert_int_equal(hr_server_listen(s, "", 0), HR_EINVAL);
  assert_string_equal(hr_error_detail(HR_EINVAL), "\"\" is not an IPv4 or IPv6 address");
  /* An address in use, by hr_server_start. */
  fd = busy_socket("127.0.0.1", &port);
  assert_int_equal(hr_server_listen(s, "127.0.0.1", port), 0);
  assert_string_equal(hr_error_detail(HR_EINVAL), hr_strerror(HR_EINVAL)); /* forgotten */
  assert_int_equal(hr_server_start(s, 1), UV_EADDRINUSE);
  snprintf(want, sizeof want, "bind 127.0.0.1:%d: address already in use", port);
  assert_string_equal(hr_error_detail(UV_EADDRINUSE), want);
  /* Per thread. */
  memset(&other, 0, sizeof other);
  other.router = fx->router;
  assert_int_equal(uv_thread_create(&th, other_thread, &other), 0);
  assert_int_equal(uv_thread_join(&th), 0);
  assert_int_equal(other.rc, HR_EINVAL);
  assert_string_equal(other.detail, "\"10.1\" is not an IPv4 or IPv6 address");
  assert_string_equal(other.mine, hr_strerror(UV_EADDRINUSE));
  assert_string_equal(hr_error_detail(UV_EADDRINUSE), want); /* still this thread's */
  hr_server_free(s);
  close(fd);
  /* IPv6, by hr_server_attach. */
  fd = busy_socket("::1", &port);
  assert_int_equal(hr_server_new(&s, fx->router, NULL), 0);
  assert_int_equal(hr_server_listen(s, "::1", port), 0);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(hr_server_attach(s, &loop), UV_EADDRINUSE);
  snprintf(want, sizeof want, "bind [::1]:%d: address already in use", port);
  assert_string_equal(hr_error_detail(UV_EADDRINUSE), want);
  hr_server_free(s);
  assert_int_equal(uv_loop_close(&loop), 0);
  close(fd);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_shared_socket),
      T(test_reuseport),
      T(test_listen_option_errors),
      T(test_socket_activation),
      T(test_hand_over),
      T(test_host_name),
      T(test_addresses_share_port),
      T(test_error_details),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
