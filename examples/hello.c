/* SPDX-License-Identifier: MIT */
/*
 * hello: the smallest complete hroute service, and the target of the bundled
 * wrk benchmark (bench/run.sh).  It shows, in order: registering a route with
 * a parameter and a constant response field (pre-rendered once, at
 * registration), answering from a handler without touching the heap (a stack
 * buffer, or the request's arena for long names), the server's counters
 * as Prometheus metrics, and the two ways to run a server -- attached to a libuv loop this
 * program owns (one thread), or on hroute's own worker threads -- each with a
 * graceful shutdown on SIGINT, and a drain on SIGTERM (readiness answers
 * 503 for --drain-grace, then the server stops) for a load balancer's
 * sake.  It serves /healthz and /readyz, and takes its listening sockets
 * from systemd's socket activation (LISTEN_FDS) when started that way.  The "route churn" section is for
 * the benchmark only (--churn): a thread that keeps replacing routes while
 * the server serves.
 *
 *   hello [--host ADDR] [--port N] [--threads N] [--reuseport] [--stats]
 *         [--churn N] [--keepalive-timeout MS] [--max-connections N]
 *         [--tls-cert FILE --tls-key FILE] [--access-log FILE] [--static DIR]
 *         [--proxy-from CIDR] [--drain-grace MS] [--h2c]
 *   curl http://127.0.0.1:8080/hello/John      ->  Hello, John
 */
/* uv.h needs POSIX types (pthread_rwlock_t) that a strict -std=c11 hides;
 * ask for them unless the build already chose a feature set. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "hroute.h"

/* How long a shutdown waits for requests in flight before closing them. */
#define SHUTDOWN_DEADLINE_MS 5000
/* Most route replacements per second --churn accepts. */
#define CHURN_MAX 100000

/* ---- command line ------------------------------------------------------ */

typedef struct options_s {
  const char *host;
  int port;
  unsigned threads;
  int stats; /* also serve GET /metrics (Prometheus) */
  unsigned churn; /* route replacements per second (benchmark only), 0: none */
  const char *tls_cert; /* PEM files: serve HTTPS (SIGHUP reloads them) */
  const char *tls_key;
  long keepalive_ms;   /* keep-alive timeout, -1: the server's default */
  long max_conns;      /* connection cap, -1: the server's default */
  const char *access_log; /* Common Log Format lines appended to this file */
  const char *static_dir; /* served under /static/ (hr_static) */
  const char *proxy_from; /* take a PROXY protocol header from this network */
  int reuseport;          /* one SO_REUSEPORT socket per worker thread */
  long drain_grace_ms;    /* SIGTERM: keep accepting this long while draining */
  int h2c;                /* plain TCP: HTTP/2 with prior knowledge too */
  int compress_coding;    /* --compress: HR_CODING_*, 0: none */
  int compress_level;
  const char *bodies_dir; /* --bodies: files served from memory under /bodies/ */
} options_t;

static void usage(FILE *out) {
  fprintf(out,
          "usage: hello [--host ADDR] [--port N] [--threads N] [--stats] "
          "[--churn N]\n"
          "             [--keepalive-timeout MS] [--max-connections N]\n"
          "             [--tls-cert FILE --tls-key FILE] [--access-log FILE]\n"
          "             [--static DIR] [--proxy-from CIDR] [--reuseport]\n"
          "             [--drain-grace MS] [--h2c] [--compress CODING:LEVEL]\n"
          "             [--bodies DIR]\n"
          "\n"
          "  --host ADDR    IPv4 or IPv6 address, or a host name, to listen on "
          "(default 0.0.0.0)\n"
          "  --port N       TCP port, 0 picks a free one (default 8080)\n"
          "  --threads N    1 serves on this thread's loop; more starts N "
          "worker\n"
          "                 threads polling one shared socket (default 1, "
          "max 256)\n"
          "  --stats        also serve GET /metrics: the server's and every route's\n"
          "                 counters and latency histograms, Prometheus text format\n"
          "  --churn N      benchmark only: a thread replaces a route N times "
          "per\n"
          "                 second while serving (GET /churn/:x and GET "
          "/hello/:name\n"
          "                 in turn; default 0, none; max %d)\n"
          "  --keepalive-timeout MS  idle time allowed between requests "
          "(default 5000)\n"
          "  --max-connections N     open connections at most, 0: no cap "
          "(default 10000)\n"
          "  --tls-cert FILE, --tls-key FILE  serve HTTPS with this certificate\n"
          "                 chain and key (PEM); SIGHUP reloads both files\n"
          "  --access-log FILE  append one Common Log Format line per request\n"
          "                 (\"-\": stderr; buffered, flushed at exit)\n"
          "  --static DIR   serve the files of DIR under /static/ (GET, HEAD;\n"
          "                 ranges, validators, index.html)\n"
          "  --proxy-from CIDR  require a PROXY protocol header (v1 or v2) from\n"
          "                 peers in CIDR, as behind HAProxy's send-proxy\n"
          "  --compress CODING:LEVEL  compress responses with gzip, br or zstd at\n"
          "                 LEVEL when the client accepts it (hr_compress_options_t)\n"
          "  --bodies DIR   benchmark only: the files of DIR (1 MiB at most each, 16)\n"
          "                 read into memory at start and served from there as\n"
          "                 GET /bodies/NAME (.json, .html, .txt typed; else\n"
          "                 octet-stream): what the compression benchmark compresses\n"
          "  --h2c          also serve HTTP/2 with prior knowledge on the plain port\n"
          "                 (HTTPS offers h2 by ALPN in any case)\n"
          "  --reuseport    with --threads > 1: a socket per thread with SO_REUSEPORT\n"
          "                 (the kernel spreads connections; other processes of the\n"
          "                 same user may join the port); default: one shared socket\n"
          "  --drain-grace MS  on SIGTERM, answer /readyz with 503 and keep serving\n"
          "                 (Connection: close) this long before stopping (default 0)\n"
          "  Started by systemd socket activation (LISTEN_PID, LISTEN_FDS), hello\n"
          "  serves the passed sockets instead of --host/--port.\n"
          "  --help         show this text\n"
          "\n"
          "Routes: GET /hello/:name -> 200 text/plain \"Hello, <name>\"\n"
          "        GET /churn/:x    -> 200 text/plain \"churn <a|b> <x>\" "
          "(with --churn)\n",
          CHURN_MAX);
}

/* Parses a whole decimal number in [min, max]; returns 0 or -1. */
static int parse_number(const char *text, long min, long max, long *out) {
  char *end;
  long value;

  errno = 0;
  value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max)
    return -1;
  *out = value;
  return 0;
}

/*
 * Accepts "--name value" and "--name=value".  Returns 1 and sets *value when
 * argv[*i] is option `name` (advancing *i past a separate value), 0 when it is
 * another option, -1 when `name` lacks its value.
 */
static int option_value(int argc, char **argv, int *i, const char *name,
                        const char **value) {
  const char *arg = argv[*i];
  size_t n = strlen(name);

  if (strncmp(arg, name, n) != 0)
    return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != '\0')
    return 0;
  if (*i + 1 >= argc)
    return -1;
  *i += 1;
  *value = argv[*i];
  return 1;
}

/* Returns 0 to run, 1 after --help, 2 on a bad command line (usage shown). */
static int parse_options(int argc, char **argv, options_t *opts) {
  opts->host = "0.0.0.0";
  opts->port = 8080;
  opts->threads = 1;
  opts->stats = 0;
  opts->churn = 0;
  opts->keepalive_ms = -1;
  opts->max_conns = -1;
  opts->access_log = NULL;
  opts->static_dir = NULL;
  opts->proxy_from = NULL;
  opts->compress_coding = 0;
  opts->compress_level = 0;
  opts->bodies_dir = NULL;
  opts->tls_cert = NULL;
  opts->tls_key = NULL;
  opts->reuseport = 0;
  opts->drain_grace_ms = 0;
  opts->h2c = 0;

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *value = NULL;
    long number;
    int r;

    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 1;
    }
    if (strcmp(argv[i], "--stats") == 0) {
      opts->stats = 1;
      continue;
    }
    if (strcmp(argv[i], "--reuseport") == 0) {
      opts->reuseport = 1;
      continue;
    }
    if (strcmp(argv[i], "--h2c") == 0) {
      opts->h2c = 1;
      continue;
    }
    if ((r = option_value(argc, argv, &i, "--host", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->host = value;
    } else if ((r = option_value(argc, argv, &i, "--port", &value)) != 0) {
      if (r < 0 || parse_number(value, 0, 65535, &number) != 0)
        goto bad;
      opts->port = (int)number;
    } else if ((r = option_value(argc, argv, &i, "--threads", &value)) != 0) {
      if (r < 0 || parse_number(value, 1, 256, &number) != 0)
        goto bad;
      opts->threads = (unsigned)number;
    } else if ((r = option_value(argc, argv, &i, "--churn", &value)) != 0) {
      if (r < 0 || parse_number(value, 0, CHURN_MAX, &number) != 0)
        goto bad;
      opts->churn = (unsigned)number;
    } else if ((r = option_value(argc, argv, &i, "--tls-cert", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->tls_cert = value;
    } else if ((r = option_value(argc, argv, &i, "--tls-key", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->tls_key = value;
    } else if ((r = option_value(argc, argv, &i, "--keepalive-timeout", &value)) != 0) {
      if (r < 0 || parse_number(value, 1, 86400000, &number) != 0)
        goto bad;
      opts->keepalive_ms = number;
    } else if ((r = option_value(argc, argv, &i, "--max-connections", &value)) != 0) {
      if (r < 0 || parse_number(value, 0, 10000000, &number) != 0)
        goto bad;
      opts->max_conns = number;
    } else if ((r = option_value(argc, argv, &i, "--access-log", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->access_log = value;
    } else if ((r = option_value(argc, argv, &i, "--static", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->static_dir = value;
    } else if ((r = option_value(argc, argv, &i, "--proxy-from", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->proxy_from = value;
    } else if ((r = option_value(argc, argv, &i, "--compress", &value)) != 0) {
      const char *colon = r < 0 ? NULL : strchr(value, ':');
      size_t n = colon ? (size_t)(colon - value) : 0;
      if (colon == NULL || parse_number(colon + 1, 0, 19, &number) != 0) goto bad;
      if (n == 4 && strncmp(value, "gzip", 4) == 0) opts->compress_coding = HR_CODING_GZIP;
      else if (n == 2 && strncmp(value, "br", 2) == 0) opts->compress_coding = HR_CODING_BR;
      else if (n == 4 && strncmp(value, "zstd", 4) == 0) opts->compress_coding = HR_CODING_ZSTD;
      else goto bad;
      opts->compress_level = (int)number;
    } else if ((r = option_value(argc, argv, &i, "--bodies", &value)) != 0) {
      if (r < 0 || *value == '\0')
        goto bad;
      opts->bodies_dir = value;
    } else if ((r = option_value(argc, argv, &i, "--drain-grace", &value)) != 0) {
      if (r < 0 || parse_number(value, 0, 3600000, &number) != 0)
        goto bad;
      opts->drain_grace_ms = number;
    } else {
      goto bad;
    }
    continue;

  bad:
    fprintf(stderr, "hello: bad or incomplete option '%s'\n", arg);
    usage(stderr);
    return 2;
  }
  if ((opts->tls_cert == NULL) != (opts->tls_key == NULL)) {
    fprintf(stderr, "hello: --tls-cert and --tls-key go together\n");
    usage(stderr);
    return 2;
  }
  return 0;
}

/* ---- handlers ------------------------------------------------------------ */

/*
 * GET /hello/:name.  The Content-Type field is not set here: it was given at
 * registration (see add_routes) and is already part of the pre-rendered
 * response head.  The server adds Date, Content-Length and, when needed,
 * Connection.
 */
static void hello_handler(hr_request_t *req, hr_response_t *res, void *udata) {
  static const char prefix[] = "Hello, ";
  const size_t prefix_len = sizeof(prefix) - 1;
  char small[128];
  char *body = small;
  hr_span_t name;
  size_t len;
  int err;

  (void)udata;
  /* A span into the request target: valid until the response completes, not
   * NUL-terminated, and not percent-decoded. */
  name = hr_request_param(req, 0);
  len = prefix_len + name.len;

  /* Names that do not fit the stack buffer go to the request's arena, which
   * is released in one step when the response completes: no free() here. */
  if (len > sizeof(small)) {
    body = hr_request_alloc(req, len);
    if (body == NULL) {
      /* Out of memory: still complete the response, as every handler must. */
      (void)hr_response_send(res, 500, NULL, 0);
      return;
    }
  }
  memcpy(body, prefix, prefix_len);
  if (name.len > 0)
    memcpy(body + prefix_len, name.ptr, name.len);

  /* hr_response_send copies the body, so the stack buffer may go away as
   * soon as it returns.  HR_ECLOSED means the client left: the response is
   * complete anyway.  Any other error means it was not sent; answer 500 so
   * that the response still completes. */
  err = hr_response_send(res, 200, body, len);
  if (err != 0 && err != HR_ECLOSED)
    (void)hr_response_send(res, 500, NULL, 0);
}

/*
 * The options of GET /hello/:name.  Everything a request needs is resolved
 * when the route is registered, once: the pattern is parsed, the parameter
 * slot fixed and the constant field rendered into the route's response
 * head.  The options and field arrays are copied, so automatic storage is
 * fine.  `replace` is 0 at start-up; with 1 an existing GET /hello/:name is
 * replaced (the route churn below does that), and requests already under
 * way finish with the old one.
 */
static const hr_field_t text_plain[] = {
    {HR_SPAN_LIT("Content-Type"), HR_SPAN_LIT("text/plain")},
};

static void hello_options(hr_route_options_t *ro, int replace) {
  hr_route_options_init(ro);
  ro->fields = text_plain;
  ro->nfields = sizeof(text_plain) / sizeof(text_plain[0]);
  ro->replace = replace;
}

/* Registers (or, with `replace`, replaces) GET /hello/:name on its own. */
static int add_hello_route(hr_router_t *router, int replace) {
  hr_route_options_t ro;

  hello_options(&ro, replace);
  return hr_router_add(router, "GET", "/hello/:name", hello_handler, NULL, &ro);
}

/* Registers the routes in one transaction (one table built, one
 * publication): hello, the probes a load balancer uses (/readyz answers 503
 * once a drain began), and the metrics when asked for.  Each call checks
 * its route at once; the commit publishes them all or, on error, none. */
static int add_routes(hr_router_t *router, hr_server_t *server, int stats) {
  hr_route_options_t ro;
  hr_txn_t *txn;
  int err;

  if ((err = hr_router_begin(router, &txn)) != 0) return err;
  hello_options(&ro, 0);
  if ((err = hr_txn_add(txn, NULL, "GET", "/hello/:name", hello_handler, NULL, &ro)) != 0 ||
      (err = hr_server_txn_health(server, txn, "/healthz", "/readyz")) != 0 ||
      /* Prometheus scrapes this: the server's counters and, per route, its
       * requests, status classes and latency histogram. */
      (stats && (err = hr_server_txn_metrics(server, txn, "/metrics")) != 0)) {
    hr_txn_abort(txn);
    return err;
  }
  return hr_txn_commit(txn, NULL);
}

/* ---- bodies from memory (benchmark only) ---------------------------------- */

/*
 * --bodies DIR: each file of DIR read once into memory and served as GET
 * /bodies/NAME with hr_response_send (a copy per response, compressed per
 * response with --compress), so that the compression benchmark measures
 * the server and its encoder, not the disk.  Kept until the process ends.
 */
#define BODIES_MAX 16
#define BODY_MAX (1u << 20)

typedef struct body_s {
  char name[64];
  char *data;
  size_t len;
  hr_span_t type;
} body_t;

static body_t bodies[BODIES_MAX];
static size_t nbodies;

static void h_body(hr_request_t *req, hr_response_t *res, void *udata) {
  hr_span_t name = hr_request_param(req, 0);
  size_t i;
  (void)udata;
  for (i = 0; i < nbodies; i++)
    if (hr_span_eq(name, hr_span_cstr(bodies[i].name))) {
      (void)hr_response_add_field(res, HR_SPAN_LIT("Content-Type"), bodies[i].type);
      (void)hr_response_send(res, 200, bodies[i].data, bodies[i].len);
      return;
    }
  (void)hr_response_error(res, 404, NULL);
}

static hr_span_t type_of(const char *name) {
  const char *dot = strrchr(name, '.');
  if (dot && strcmp(dot, ".json") == 0) return HR_SPAN_LIT("application/json");
  if (dot && strcmp(dot, ".html") == 0) return HR_SPAN_LIT("text/html; charset=utf-8");
  if (dot && strcmp(dot, ".txt") == 0) return HR_SPAN_LIT("text/plain; charset=utf-8");
  return HR_SPAN_LIT("application/octet-stream");
}

/* Reads the files of `dir` and adds GET /bodies/:name.  Returns 0 or an
 * error code (a libuv one for the directory and the files). */
static int bodies_load(hr_router_t *router, const char *dir) {
  uv_fs_t req;
  uv_dirent_t ent;
  int rc = uv_fs_scandir(NULL, &req, dir, 0, NULL);
  if (rc < 0) return rc;
  while (uv_fs_scandir_next(&req, &ent) != UV_EOF && nbodies < BODIES_MAX) {
    char path[4096];
    body_t *b = &bodies[nbodies];
    FILE *f;
    long n;
    if (ent.type != UV_DIRENT_FILE || strlen(ent.name) >= sizeof b->name) continue;
    snprintf(path, sizeof path, "%s/%s", dir, ent.name);
    if ((f = fopen(path, "rb")) == NULL) continue;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && (size_t)n <= BODY_MAX &&
        fseek(f, 0, SEEK_SET) == 0 && (b->data = malloc((size_t)n)) != NULL &&
        fread(b->data, 1, (size_t)n, f) == (size_t)n) {
      snprintf(b->name, sizeof b->name, "%s", ent.name);
      b->len = (size_t)n;
      b->type = type_of(ent.name);
      nbodies++;
    }
    fclose(f);
  }
  uv_fs_req_cleanup(&req);
  return hr_router_add(router, "GET", "/bodies/:name", h_body, NULL, NULL);
}

static void bodies_free(void) {
  while (nbodies > 0) free(bodies[--nbodies].data);
}

/* ---- shutdown on SIGINT, drain on SIGTERM ------------------------------- */

/* What the signal handlers need; lives on main's stack. */
typedef struct app_s {
  hr_server_t *server;
  uv_signal_t sigint;
  uv_signal_t sigterm;
  uv_signal_t sighup;  /* reloads the TLS certificate and key */
  uv_async_t drained;  /* threaded: the last worker thread has finished */
  hr_tls_options_t tls;
  uint64_t drain_grace_ms;
  int threaded;
  int shutting_down;
} app_t;

/* The first SIGINT or SIGTERM: closing their watchers hands them back to
 * their default action, so a second Ctrl-C during a slow shutdown ends the
 * process at once.  SIGHUP stays watched until the server has stopped:
 * its default action would end the process, and a certificate renewal
 * may well come while it drains. */
static void stop_watching(app_t *app) {
  uv_close((uv_handle_t *)&app->sigint, NULL);
  uv_close((uv_handle_t *)&app->sigterm, NULL);
}

/* The server has stopped (or will not run): the last watcher goes, and
 * uv_run() in main can return. */
static void close_sighup(app_t *app) {
  if (!uv_is_closing((uv_handle_t *)&app->sighup)) uv_close((uv_handle_t *)&app->sighup, NULL);
}

static void close_signals(app_t *app) {
  stop_watching(app);
  close_sighup(app);
}

/* SIGHUP: load the certificate files again (a certbot renewal) and publish
 * them; on any error the old certificate stays in force. */
static void on_sighup(uv_signal_t *handle, int signum) {
  app_t *app = handle->data;
  int err;
  (void)signum;
  if (app->tls.cert_file == NULL) return;
  err = hr_server_tls_update(app->server, 0, &app->tls);
  if (err != 0)
    fprintf(stderr, "hello: SIGHUP: certificate not reloaded: %s\n", hr_error_detail(err));
  else
    fprintf(stderr, "hello: SIGHUP: certificate reloaded\n");
}

/* Attached mode.  Runs on the loop thread once every connection is closed;
 * with the signal watchers closed too, uv_run() in main returns. */
static void on_server_closed(hr_server_t *server, void *udata) {
  (void)server;
  fprintf(stderr, "hello: stopped\n");
  close_sighup(udata);
}

/* Threaded drain: runs on the last worker thread to finish.  Only wakes
 * the main loop, which joins the workers (never from a worker). */
static void on_drained_thread(hr_server_t *server, void *udata) {
  app_t *app = udata;
  (void)server;
  uv_async_send(&app->drained);
}

static void on_drained(uv_async_t *handle) {
  app_t *app = handle->data;
  int err = hr_server_stop(app->server, 0); /* the workers have finished */
  if (err != 0)
    fprintf(stderr, "hello: hr_server_stop: %s\n", hr_strerror(err));
  else
    fprintf(stderr, "hello: drained and stopped\n");
  uv_close((uv_handle_t *)&app->drained, NULL);
  close_sighup(app);
}

/* SIGINT: stop accepting, let requests in flight finish (up to the
 * deadline), close.  Threaded, hr_server_stop blocks until every worker
 * has finished and been joined: this is the main thread, never a worker,
 * so that is allowed. */
static void shut_down(app_t *app) {
  int err;
  fprintf(stderr, "hello: SIGINT, shutting down\n");
  if (!app->threaded) {
    err = hr_server_close(app->server, SHUTDOWN_DEADLINE_MS, on_server_closed, app);
    if (err != 0) {
      fprintf(stderr, "hello: hr_server_close: %s\n", hr_strerror(err));
      close_sighup(app);
    }
    return;
  }
  err = hr_server_stop(app->server, SHUTDOWN_DEADLINE_MS);
  if (err != 0)
    fprintf(stderr, "hello: hr_server_stop: %s\n", hr_strerror(err));
  else
    fprintf(stderr, "hello: stopped\n");
  uv_close((uv_handle_t *)&app->drained, NULL);
  close_sighup(app);
}

/* SIGTERM, as a service manager or an orchestrator sends it: drain.
 * /readyz answers 503 at once, so the load balancer's health check takes
 * this instance out; meanwhile it still serves, each response with
 * "Connection: close"; after the grace period it stops as on SIGINT. */
static void drain(app_t *app) {
  int err;
  fprintf(stderr, "hello: SIGTERM, draining for %" PRIu64 " ms\n", app->drain_grace_ms);
  err = app->threaded ? hr_server_drain(app->server, app->drain_grace_ms, SHUTDOWN_DEADLINE_MS,
                                        on_drained_thread, app)
                      : hr_server_drain(app->server, app->drain_grace_ms, SHUTDOWN_DEADLINE_MS,
                                        on_server_closed, app);
  if (err != 0) {
    fprintf(stderr, "hello: hr_server_drain: %s\n", hr_strerror(err));
    shut_down(app);
  }
}

static void on_signal(uv_signal_t *handle, int signum) {
  app_t *app = handle->data;
  if (app->shutting_down)
    return;
  app->shutting_down = 1;
  if (signum == SIGTERM)
    drain(app);
  else
    shut_down(app);
  stop_watching(app);
}

/* Installs the signal watchers on `loop` (and, threaded, the handle the
 * drain's end wakes).  Returns 0 or a libuv error. */
static int watch_signals(uv_loop_t *loop, app_t *app) {
  int err;

  if (app->threaded) {
    if ((err = uv_async_init(loop, &app->drained, on_drained)) != 0)
      return err;
    app->drained.data = app;
  }
  if ((err = uv_signal_init(loop, &app->sigint)) != 0)
    goto fail_async;
  app->sigint.data = app;
  if ((err = uv_signal_init(loop, &app->sigterm)) != 0) {
    uv_close((uv_handle_t *)&app->sigint, NULL);
    goto fail_async;
  }
  app->sigterm.data = app;
  if ((err = uv_signal_init(loop, &app->sighup)) != 0) {
    uv_close((uv_handle_t *)&app->sigint, NULL);
    uv_close((uv_handle_t *)&app->sigterm, NULL);
    goto fail_async;
  }
  app->sighup.data = app;
  if ((err = uv_signal_start(&app->sigint, on_signal, SIGINT)) != 0 ||
      (err = uv_signal_start(&app->sigterm, on_signal, SIGTERM)) != 0 ||
      (err = uv_signal_start(&app->sighup, on_sighup, SIGHUP)) != 0) {
    close_signals(app);
    goto fail_async;
  }
  return 0;
fail_async:
  if (app->threaded)
    uv_close((uv_handle_t *)&app->drained, NULL);
  return err;
}

/* Closes what watch_signals opened, when the server could not start. */
static void unwatch_signals(app_t *app) {
  close_signals(app);
  if (app->threaded)
    uv_close((uv_handle_t *)&app->drained, NULL);
}

/* ---- route churn: for the benchmark only ---------------------------------- */

/*
 * bench/run.sh measures throughput while routes are being replaced, to show
 * that publishing new route tables does not slow the requests being served
 * (readers never wait for writers).  A service needs none of this: it is
 * here because hello is the benchmark's server.
 *
 * With --churn N a thread calls hr_router_add(..., replace = 1) N times per
 * second, in turn on GET /churn/:x (alternating between two handlers with
 * their own udata) and on GET /hello/:name (the same handler and field
 * again, so the route under load really gets a new compiled version).
 * hr_router_add may be called from any thread.  The thread is joined before
 * the router is freed.
 */
typedef struct churn_s {
  hr_router_t *router;
  unsigned per_second;
  uv_thread_t thread;
  uv_mutex_t lock; /* guards `stop` */
  uv_cond_t wake;  /* signalled when `stop` is set */
  int stop;
  int running;     /* the thread exists (main thread only) */
  /* Written by the thread, read after joining it. */
  uint64_t replaced, failed;
  int last_error;
  uint64_t started_ns, stopped_ns;
} churn_t;

/* GET /churn/:x; `udata` names the version ("a" or "b"). */
static void churn_handler_a(hr_request_t *req, hr_response_t *res,
                            void *udata) {
  char body[160];
  hr_span_t x = hr_request_param(req, 0);
  int len = snprintf(body, sizeof(body), "churn %s %.*s", (const char *)udata,
                     (int)(x.len < 100 ? x.len : 100), x.ptr);
  (void)hr_response_send(res, 200, body, (size_t)len);
}

/* The other version: a second function, so that each replacement changes
 * the handler as well as its udata. */
static void churn_handler_b(hr_request_t *req, hr_response_t *res,
                            void *udata) {
  churn_handler_a(req, res, udata);
}

static int add_churn_route(hr_router_t *router, int version, int replace) {
  static const char *const names[2] = {"a", "b"};
  hr_route_options_t ro;

  hello_options(&ro, replace); /* the same constant field */
  return hr_router_add(router, "GET", "/churn/:x",
                       version ? churn_handler_b : churn_handler_a,
                       (void *)names[version], &ro);
}

static void churn_main(void *arg) {
  churn_t *ch = arg;
  const uint64_t interval = 1000000000u / ch->per_second; /* ns */
  uint64_t next = uv_hrtime(), i, now;
  int err;

  ch->started_ns = next;
  uv_mutex_lock(&ch->lock);
  for (i = 0; !ch->stop; i++) {
    uv_mutex_unlock(&ch->lock);
    /* Even turns: the churn route, version a, b, a, ...; odd: hello. */
    err = i % 2 == 0 ? add_churn_route(ch->router, (int)(i / 2 % 2), 1)
                     : add_hello_route(ch->router, 1);
    if (err == 0) {
      ch->replaced++;
    } else {
      ch->failed++;
      ch->last_error = err;
    }
    /* Keep the average rate: a late turn is made up at once, but never
     * more than a second's worth. */
    next += interval;
    now = uv_hrtime();
    if (now > next + 1000000000u)
      next = now;
    uv_mutex_lock(&ch->lock);
    while (!ch->stop && (now = uv_hrtime()) < next)
      (void)uv_cond_timedwait(&ch->wake, &ch->lock, next - now);
  }
  uv_mutex_unlock(&ch->lock);
  ch->stopped_ns = uv_hrtime();
}

/* Registers GET /churn/:x and starts the thread.  Returns 0 or an error
 * (hroute's or libuv's); on error nothing is left running. */
static int churn_start(churn_t *ch, hr_router_t *router, unsigned per_second) {
  int err;

  memset(ch, 0, sizeof(*ch));
  ch->router = router;
  ch->per_second = per_second;
  if ((err = add_churn_route(router, 0, 0)) != 0)
    return err;
  if ((err = uv_mutex_init(&ch->lock)) != 0)
    return err;
  if ((err = uv_cond_init(&ch->wake)) != 0) {
    uv_mutex_destroy(&ch->lock);
    return err;
  }
  if ((err = uv_thread_create(&ch->thread, churn_main, ch)) != 0) {
    uv_cond_destroy(&ch->wake);
    uv_mutex_destroy(&ch->lock);
    return err;
  }
  ch->running = 1;
  return 0;
}

/* Stops and joins the thread (no-op when it was never started), then
 * reports what it did. */
static void churn_stop(churn_t *ch) {
  double secs;

  if (!ch->running)
    return;
  uv_mutex_lock(&ch->lock);
  ch->stop = 1;
  uv_cond_signal(&ch->wake);
  uv_mutex_unlock(&ch->lock);
  uv_thread_join(&ch->thread);
  ch->running = 0;
  uv_cond_destroy(&ch->wake);
  uv_mutex_destroy(&ch->lock);

  secs = (double)(ch->stopped_ns - ch->started_ns) / 1e9;
  fprintf(stderr,
          "hello: churn: %" PRIu64 " route replacements in %.1f s (%.0f/s)",
          ch->replaced, secs, secs > 0 ? (double)ch->replaced / secs : 0.0);
  if (ch->failed > 0)
    fprintf(stderr, ", %" PRIu64 " failed (last: %s)", ch->failed,
            hr_strerror(ch->last_error));
  fprintf(stderr, "\n");
}

/* ---- main -------------------------------------------------------------- */

/* --access-log: the file the lines go to, and the sink that writes them
 * (the server calls it on the loop thread of each request; with
 * --threads > 1 several loops write).  A line and its newline are built in
 * one buffer and leave in one fwrite: stdio locks the stream for the call,
 * so another thread's line never lands between them, and nothing touches
 * the stream outside that lock (putc_unlocked under flockfile did, and
 * ThreadSanitizer, which cannot see flockfile's lock, reported a race). */
static FILE *log_file;

static void write_access_line(void *ctx, const char *line, size_t len,
                              const hr_access_entry_t *entry) {
  FILE *out = ctx;
  char small[1024], *buf = small;
  (void)entry;
  /* A long line (its target is up to 8 KiB, escaped) takes the heap; out
   * of memory, it is left out rather than written in two pieces. */
  if (len >= sizeof small && (buf = malloc(len + 1)) == NULL) return;
  memcpy(buf, line, len);
  buf[len] = '\n';
  fwrite(buf, 1, len + 1, out);
  if (buf != small) free(buf);
}

/* Reports a failed call and returns 1 (the exit status): why, in the
 * words of hr_error_detail (which address, which file, OpenSSL's reason),
 * or the code's message when the call recorded no detail. */
static int fail(const char *what, int err) {
  fprintf(stderr, "hello: %s: %s (%s)\n", what, hr_error_detail(err),
          hr_err_name(err));
  return 1;
}

int main(int argc, char **argv) {
  options_t opts;
  app_t app;
  churn_t churn;
  hr_router_t *router = NULL;
  hr_server_t *server = NULL;
  hr_static_t *files = NULL;
  hr_compress_options_t compress;
  uv_loop_t *loop = uv_default_loop();
  size_t activated = 0; /* listening sockets passed by socket activation */
  int status = 1;
  int err;

  switch (parse_options(argc, argv, &opts)) {
  case 0:
    break;
  case 1:
    return 0;
  default:
    return 2;
  }

  /* hroute writes with MSG_NOSIGNAL and never raises SIGPIPE itself; a
   * service that also writes to sockets or pipes of its own wants this line
   * so that a closed peer shows up as EPIPE rather than ending the process. */
  signal(SIGPIPE, SIG_IGN);

  memset(&app, 0, sizeof(app));
  memset(&churn, 0, sizeof(churn));

  /* 1. The router: routes are compiled and published when added. */
  if ((err = hr_router_new(&router, NULL)) != 0) {
    status = fail("hr_router_new", err);
    goto out;
  }

  /* 2. The server, with default limits and timeouts, and its address. */
  {
    hr_server_options_t so;
    hr_server_options_init(&so);
    if (opts.keepalive_ms >= 0) so.keepalive_timeout_ms = (uint64_t)opts.keepalive_ms;
    if (opts.max_conns >= 0) so.max_connections = (unsigned)opts.max_conns;
    if (opts.access_log != NULL) {
      log_file = strcmp(opts.access_log, "-") == 0 ? stderr : fopen(opts.access_log, "a");
      if (log_file == NULL) {
        status = fail("fopen --access-log", -errno);
        goto out;
      }
      so.access_log = write_access_line;
      so.access_log_ctx = log_file;
      so.access_format = HR_ACCESS_COMMON;
    }
    if (opts.compress_coding != 0) {
      /* One coding at the level asked for (the benchmark compares it). */
      hr_compress_options_init(&compress);
      compress.order[0] = (uint8_t)opts.compress_coding;
      compress.order[1] = compress.order[2] = HR_CODING_IDENTITY;
      if (opts.compress_coding == HR_CODING_GZIP) compress.gzip_level = opts.compress_level;
      if (opts.compress_coding == HR_CODING_BR) compress.br_level = opts.compress_level;
      if (opts.compress_coding == HR_CODING_ZSTD) compress.zstd_level = opts.compress_level;
      so.compress = &compress;
    }
    err = hr_server_new(&server, router, &so);
  }
  if (err != 0) {
    status = fail("hr_server_new", err);
    goto out;
  }
  app.server = server;
  if ((err = add_routes(router, server, opts.stats)) != 0) {
    status = fail("hr_router_add", err);
    goto out;
  }
  /* --static DIR: a directory under /static/, as nginx would serve it. */
  if (opts.static_dir != NULL &&
      ((err = hr_static_new(&files, opts.static_dir, NULL)) != 0 ||
       (err = hr_static_mount(router, NULL, "/static", files)) != 0)) {
    status = fail("--static", err);
    goto out;
  }
  /* Benchmark only: bodies served from memory (see "bodies" above). */
  if (opts.bodies_dir != NULL && (err = bodies_load(router, opts.bodies_dir)) != 0) {
    status = fail("--bodies", err);
    goto out;
  }
  /* Benchmark only: start replacing routes (see "route churn" above). */
  if (opts.churn > 0 &&
      (err = churn_start(&churn, router, opts.churn)) != 0) {
    status = fail("--churn", err);
    goto out;
  }
  app.server = server;
  hr_tls_options_init(&app.tls);
  app.tls.cert_file = opts.tls_cert;
  app.tls.key_file = opts.tls_key;
  {
    const char *const trusted[] = {opts.proxy_from, NULL};
    hr_listen_options_t lo;
    hr_listen_options_init(&lo);
    if (opts.tls_cert != NULL) lo.tls = &app.tls;
    /* TLS offers h2 by ALPN by default; plain TCP takes h2c on request. */
    if (opts.h2c) lo.h2 = HR_H2_ON;
    if (opts.proxy_from != NULL) {
      /* Behind a load balancer: the client's address comes in the header. */
      lo.proxy = HR_PROXY_REQUIRED;
      lo.proxy_trusted = trusted;
    }
    /* Sockets passed by systemd (or by the supervisor restarting us) come
     * first; without them, bind --host and --port. */
    err = hr_server_listen_activated(server, &lo, &activated);
    if (err == 0 && activated > 0)
      fprintf(stderr, "hello: serving %zu socket(s) passed in LISTEN_FDS\n", activated);
    lo.reuseport = opts.reuseport;
    if (err == 0 && activated == 0)
      err = hr_server_listen_ex(server, opts.host, opts.port, &lo);
  }
  if (err != 0) {
    status = fail("listen", err);
    goto out;
  }

  /* 3. Signal watchers.  Their callbacks only ever run inside uv_run(),
   * so installing them before the server serves is safe, and a failure to
   * serve below just closes them again. */
  app.threaded = opts.threads > 1;
  app.drain_grace_ms = (uint64_t)opts.drain_grace_ms;
  if ((err = watch_signals(loop, &app)) != 0) {
    status = fail("uv_signal_start", err);
    goto out;
  }

  /* 4. Serve. */
  if (opts.threads == 1) {
    /* Attached: the server's listener and connections live on our loop,
     * next to anything else the program runs there.  Binds now. */
    if ((err = hr_server_attach(server, loop)) != 0) {
      status = fail("hr_server_attach", err);
      unwatch_signals(&app);
      goto out;
    }
  } else {
    /* Threaded: one loop per worker, all polling the listening socket
     * (or, with --reuseport, one SO_REUSEPORT socket each); returns once
     * all are ready.  Our loop only watches for signals. */
    if ((err = hr_server_start(server, opts.threads)) != 0) {
      status = fail("hr_server_start", err);
      unwatch_signals(&app);
      goto out;
    }
  }

  if (activated > 0)
    fprintf(stderr, "hello: listening on the passed socket(s), port %d first, with %u thread(s)\n",
            hr_server_port(server, 0), opts.threads);
  else
    fprintf(stderr, "hello: listening on %s:%d with %u thread(s)\n", opts.host,
            hr_server_port(server, 0), opts.threads);

  /* Returns once the server and the signal watchers are all closed. */
  uv_run(loop, UV_RUN_DEFAULT);
  status = 0;

out:
  /* 5. Tear down in reverse order: finish closing handles still pending
   * (after an error), then the server before the router it uses, the loop
   * last (it fails with UV_EBUSY if a handle was left open). */
  uv_run(loop, UV_RUN_NOWAIT);
  churn_stop(&churn); /* its thread uses the router */
  hr_server_free(server);
  hr_router_free(router);
  hr_static_free(files); /* after the server that served it */
  bodies_free();
  if (log_file != NULL && log_file != stderr) fclose(log_file);
  if ((err = uv_loop_close(loop)) != 0)
    status = fail("uv_loop_close", err);
  return status;
}
