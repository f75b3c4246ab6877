/* SPDX-License-Identifier: MIT */
/*
 * upload: saves the files of multipart/form-data uploads (what an HTML form
 * with <input type="file"> posts) into a directory, without blocking the
 * loop.  POST /upload is a streaming route (HR_BODY_STREAM): the body goes
 * to the multipart parser (include/hroute/multipart.h) as it arrives, and
 * each part with a filename goes to a file sink (include/hroute/filesink.h),
 * which writes it on libuv's thread pool and pauses the body while the
 * disk is behind, so an upload of any size costs the server a few hundred
 * KiB.  Parts without a filename (plain form fields) are read and dropped.
 *
 * Names are the client's, so they are checked: at most 255 bytes, no '/'
 * or '\\', no control byte, not starting with '.' (no "." or "..", no
 * hidden files): otherwise 400.  A file is never overwritten: each is
 * created with O_EXCL, and a name that exists is 409.  The answer comes
 * once every file is written and closed: 201 with one line per file
 * ("NAME BYTES"); or 400 (not multipart/form-data syntax, a bad name),
 * 413 (the body over --max-bytes, more than MAX_FILES files), 415 (not
 * multipart/form-data), 507 (the disk is full, a quota or a file size
 * limit), 500 (another I/O error).  A failed upload, or one whose client
 * went away, leaves no file behind: the part being written is removed by
 * its sink, the parts saved before it by this program.
 *
 *   upload DIR [--host ADDR] [--port N] [--max-bytes N] [--sync]
 *   curl -F 'a=@photo.jpg' -F 'b=@notes.txt' http://127.0.0.1:8082/upload
 *
 * One loop (hr_server_attach on libuv's default loop); SIGINT and SIGTERM
 * shut it down gracefully, as examples/hello.c does.
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
#include <sys/stat.h>

#include <uv.h>

#include "hroute.h"

/* How long a shutdown waits for uploads in flight before closing them. */
#define SHUTDOWN_DEADLINE_MS 5000
/* Most files one upload may carry (413 above). */
#define MAX_FILES 16
/* Longest file name (bytes), as most file systems allow. */
#define MAX_NAME 255

typedef struct options_s {
  const char *dir;
  const char *host;
  int port;
  uint64_t max_bytes; /* the body limit of POST /upload */
  int sync;           /* fsync each file before answering */
} options_t;

static void usage(FILE *out) {
  fprintf(out,
          "usage: upload DIR [--host ADDR] [--port N] [--max-bytes N] [--sync]\n"
          "\n"
          "  DIR            where the files go (it must exist)\n"
          "  --host ADDR    address or host name to listen on (default 127.0.0.1)\n"
          "  --port N       TCP port, 0 picks a free one (default 8082)\n"
          "  --max-bytes N  largest upload body, in bytes (default 104857600)\n"
          "  --sync         fsync every file before answering 201\n"
          "\n"
          "POST /upload with a multipart/form-data body: each part with a file\n"
          "name is saved as DIR/NAME (never overwriting); 201 lists \"NAME BYTES\"\n"
          "per line; 400, 409, 413, 415, 500, 507 otherwise.\n");
}

static int parse_options(int argc, char **argv, options_t *o) {
  int i;
  o->dir = NULL;
  o->host = "127.0.0.1";
  o->port = 8082;
  o->max_bytes = 100u << 20;
  o->sync = 0;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    char *end;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 1;
    } else if (strcmp(a, "--sync") == 0) {
      o->sync = 1;
    } else if (i + 1 < argc && strcmp(a, "--host") == 0) {
      o->host = argv[++i];
    } else if (i + 1 < argc && strcmp(a, "--port") == 0) {
      long port = strtol(argv[++i], &end, 10);
      if (*end != '\0' || port < 0 || port > 65535) goto bad;
      o->port = (int)port;
    } else if (i + 1 < argc && strcmp(a, "--max-bytes") == 0) {
      unsigned long long n;
      errno = 0;
      n = strtoull(argv[++i], &end, 10);
      if (errno != 0 || *end != '\0' || n == 0) goto bad;
      o->max_bytes = n;
    } else if (a[0] != '-' && o->dir == NULL) {
      o->dir = a;
    } else {
      goto bad;
    }
    continue;
  bad:
    fprintf(stderr, "upload: bad or incomplete option '%s'\n", a);
    usage(stderr);
    return 2;
  }
  if (o->dir == NULL) {
    usage(stderr);
    return 2;
  }
  return 0;
}

/* ---- one upload ------------------------------------------------------------ */

typedef struct upload_s upload_t;

/* A file part: written by its sink, then saved. */
typedef struct file_s {
  upload_t *up;
  hr_file_sink_t *sink; /* until its callback ran or it was aborted */
  char name[MAX_NAME + 1];
  uint64_t bytes;
  int saved; /* written and closed: DIR/name is ours */
} file_t;

/* The state of one POST /upload, in the request's memory: it goes when the
 * response completes, which is only once no sink can call back into it. */
struct upload_s {
  hr_request_t *req;
  hr_response_t *res;
  uv_loop_t *loop;
  const options_t *opts;
  file_t files[MAX_FILES];
  size_t nfiles;
  file_t *current;  /* the file part being read, NULL between parts and for fields */
  unsigned pending; /* sinks that have not called back */
  int refuse;       /* the error status decided, 0 while none */
  int body_done;    /* the closing boundary came */
  hr_multipart_t mp; /* last: it holds an 8 KB header buffer */
};

/* Whether the client's file name may name a file in DIR. */
static int safe_name(hr_span_t n) {
  size_t i;
  if (n.len == 0 || n.len > MAX_NAME || n.ptr[0] == '.') return 0;
  for (i = 0; i < n.len; i++) {
    unsigned char c = (unsigned char)n.ptr[i];
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return 0;
  }
  return 1;
}

static int path_of(const upload_t *up, const char *name, char *out, size_t cap) {
  int n = snprintf(out, cap, "%s/%s", up->opts->dir, name);
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Removing a file saved by an upload that failed later: on the pool too. */
typedef struct unlink_s {
  uv_fs_t fs;
  char path[4096];
} unlink_t;

static void on_unlinked(uv_fs_t *r) {
  uv_fs_req_cleanup(r);
  free(r->data);
}

static void remove_saved(upload_t *up) {
  size_t i;
  for (i = 0; i < up->nfiles; i++) {
    unlink_t *u;
    if (!up->files[i].saved || (u = malloc(sizeof *u)) == NULL) continue;
    u->fs.data = u;
    if (path_of(up, up->files[i].name, u->path, sizeof u->path) != 0 ||
        uv_fs_unlink(up->loop, &u->fs, u->path, on_unlinked) != 0)
      free(u);
  }
}

/* Ends the upload with `status`: no sink touches the request after this,
 * nothing of the upload stays on disk, and the response completes (`up`
 * goes with it). */
static void give_up(upload_t *up, int status) {
  hr_response_t *res = up->res;
  size_t i;
  for (i = 0; i < up->nfiles; i++) {
    hr_file_sink_abort(up->files[i].sink); /* removes what it wrote */
    up->files[i].sink = NULL;
  }
  up->pending = 0;
  remove_saved(up);
  fprintf(stderr, "upload: refused with %d\n", status);
  hr_response_error(res, status, NULL);
}

static void answer_created(upload_t *up) {
  char out[MAX_FILES * (MAX_NAME + 24)];
  size_t n = 0, i;
  for (i = 0; i < up->nfiles; i++) {
    n += (size_t)snprintf(out + n, sizeof out - n, "%s %" PRIu64 "\n", up->files[i].name,
                          up->files[i].bytes);
    fprintf(stderr, "upload: saved %s (%" PRIu64 " bytes)\n", up->files[i].name,
            up->files[i].bytes);
  }
  hr_response_add_field(up->res, HR_SPAN_LIT("Content-Type"),
                        HR_SPAN_LIT("text/plain; charset=utf-8"));
  hr_response_send(up->res, 201, out, n);
}

/* Answers when the upload is decided: an error at once (the rest of the
 * body is dropped by the server), 201 once the body ended and every file
 * is saved.  Never called from inside hr_multipart_feed: answering frees
 * `up`, the parser included. */
static void settle(upload_t *up) {
  if (up->refuse != 0)
    give_up(up, up->refuse);
  else if (up->body_done && up->pending == 0)
    answer_created(up);
}

static void on_saved(hr_file_sink_t *sink, int status, uint64_t bytes, void *udata) {
  file_t *f = udata;
  upload_t *up = f->up;
  (void)sink;
  f->sink = NULL;
  up->pending--;
  if (status == 0) {
    f->bytes = bytes;
    f->saved = 1;
  } else if (up->refuse == 0) {
    fprintf(stderr, "upload: %s: %s\n", f->name, hr_strerror(status));
    up->refuse = hr_file_sink_http_status(status);
  }
  settle(up);
}

/* ---- the parser's callbacks (inside hr_multipart_feed) ---------------------- */

static int on_part(void *udata, const hr_multipart_part_t *p) {
  upload_t *up = udata;
  hr_file_sink_options_t o;
  char path[4096];
  file_t *f;
  int rc;
  up->current = NULL;
  if (p->filename.len == 0) return 0; /* a plain field: dropped */
  if (!safe_name(p->filename)) {
    up->refuse = 400;
    return HR_EINVAL;
  }
  if (up->nfiles == MAX_FILES) {
    up->refuse = 413;
    return HR_ETOOLARGE;
  }
  f = &up->files[up->nfiles];
  memcpy(f->name, p->filename.ptr, p->filename.len);
  f->name[p->filename.len] = '\0';
  f->up = up;
  if (path_of(up, f->name, path, sizeof path) != 0) {
    up->refuse = 400;
    return HR_EINVAL;
  }
  hr_file_sink_options_init(&o);
  o.exclusive = 1; /* never overwrite: 409 */
  o.sync = up->opts->sync;
  o.allocator = hr_response_allocator(up->res);
  rc = hr_file_sink_open(&f->sink, up->req, path, &o, on_saved, f);
  if (rc != 0) {
    up->refuse = hr_file_sink_http_status(rc);
    return rc;
  }
  up->nfiles++;
  up->pending++;
  up->current = f;
  return 0;
}

static int on_data(void *udata, hr_span_t data) {
  upload_t *up = udata;
  int rc;
  if (up->current == NULL) return 0;
  rc = hr_file_sink_write(up->current->sink, data);
  if (rc != 0 && up->refuse == 0) up->refuse = hr_file_sink_http_status(rc);
  return rc;
}

static int on_part_end(void *udata) {
  upload_t *up = udata;
  if (up->current != NULL) hr_file_sink_finish(up->current->sink);
  up->current = NULL;
  return 0;
}

/* ---- the body and the handler ------------------------------------------------ */

static void on_body(hr_request_t *req, hr_span_t chunk, int status, void *udata) {
  upload_t *up = udata;
  int rc;
  (void)req;
  if (status < 0) { /* the client went away, or the server gave up on it */
    give_up(up, 500);
    return;
  }
  if (status == 0) {
    rc = hr_multipart_feed(&up->mp, chunk);
  } else {
    rc = hr_multipart_finish(&up->mp);
    up->body_done = rc == 0;
  }
  if (rc != 0 && up->refuse == 0) up->refuse = rc == HR_ETOOLARGE ? 413 : 400;
  settle(up);
}

/* The connection went away after the body (files still being saved). */
static void on_abort(hr_response_t *res, void *udata) {
  (void)res;
  give_up(udata, 500);
}

static void h_upload(hr_request_t *req, hr_response_t *res, void *udata) {
  static const hr_multipart_cbs_t cbs = {on_part, on_data, on_part_end};
  upload_t *up = hr_request_alloc(req, sizeof *up);
  hr_span_t ct, boundary;
  if (up == NULL) {
    hr_response_error(res, 503, NULL);
    return;
  }
  memset(up, 0, sizeof *up);
  up->req = req;
  up->res = res;
  up->loop = hr_request_loop(req);
  up->opts = udata;
  if (hr_request_field(req, HR_SPAN_LIT("Content-Type"), NULL, &ct) != 0 ||
      hr_multipart_boundary(ct, &boundary) != 0 ||
      hr_multipart_init(&up->mp, boundary, &cbs, up, NULL) != 0) {
    hr_response_error(res, 415, "multipart/form-data expected\n");
    return;
  }
  if (hr_response_on_abort(res, on_abort, up) != 0 ||
      hr_request_read_body(req, on_body, up) != 0)
    hr_response_error(res, 500, NULL);
}

/* ---- main -------------------------------------------------------------------- */

typedef struct app_s {
  hr_server_t *server;
  uv_signal_t sigint, sigterm;
  int stopping;
} app_t;

static void on_closed(hr_server_t *server, void *udata) {
  (void)server;
  (void)udata;
  fprintf(stderr, "upload: stopped\n");
}

static void on_signal(uv_signal_t *h, int signum) {
  app_t *app = h->data;
  int err;
  if (app->stopping) return;
  app->stopping = 1;
  fprintf(stderr, "upload: %s, shutting down\n", signum == SIGINT ? "SIGINT" : "SIGTERM");
  err = hr_server_close(app->server, SHUTDOWN_DEADLINE_MS, on_closed, NULL);
  if (err != 0) fprintf(stderr, "upload: hr_server_close: %s\n", hr_strerror(err));
  uv_close((uv_handle_t *)&app->sigint, NULL);
  uv_close((uv_handle_t *)&app->sigterm, NULL);
}

static int fail(const char *what, int err) {
  fprintf(stderr, "upload: %s: %s\n", what, hr_error_detail(err));
  return 1;
}

int main(int argc, char **argv) {
  options_t opts;
  app_t app;
  hr_router_t *router = NULL;
  hr_server_t *server = NULL;
  hr_server_options_t so;
  hr_route_options_t ro;
  uv_loop_t *loop = uv_default_loop();
  struct stat st;
  int status = 1, err;

  switch (parse_options(argc, argv, &opts)) {
  case 0:
    break;
  case 1:
    return 0;
  default:
    return 2;
  }
  if (stat(opts.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "upload: %s is not a directory\n", opts.dir);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  /* A file past RLIMIT_FSIZE fails with EFBIG (a 507), not the signal. */
  signal(SIGXFSZ, SIG_IGN);
  memset(&app, 0, sizeof app);

  if ((err = hr_router_new(&router, NULL)) != 0) {
    status = fail("hr_router_new", err);
    goto out;
  }
  hr_route_options_init(&ro);
  ro.body_mode = HR_BODY_STREAM;
  ro.max_body_bytes = opts.max_bytes;
  if ((err = hr_router_add(router, "POST", "/upload", h_upload, &opts, &ro)) != 0) {
    status = fail("hr_router_add", err);
    goto out;
  }
  hr_server_options_init(&so);
  if ((err = hr_server_new(&server, router, &so)) != 0) {
    status = fail("hr_server_new", err);
    goto out;
  }
  app.server = server;
  if ((err = hr_server_listen(server, opts.host, opts.port)) != 0) {
    status = fail("hr_server_listen", err);
    goto out;
  }
  /* uv_signal_init cannot fail on Linux (it only fills the handle in). */
  uv_signal_init(loop, &app.sigint);
  uv_signal_init(loop, &app.sigterm);
  app.sigint.data = app.sigterm.data = &app;
  uv_signal_start(&app.sigint, on_signal, SIGINT);
  uv_signal_start(&app.sigterm, on_signal, SIGTERM);
  if ((err = hr_server_attach(server, loop)) != 0) {
    status = fail("hr_server_attach", err);
    uv_close((uv_handle_t *)&app.sigint, NULL);
    uv_close((uv_handle_t *)&app.sigterm, NULL);
    goto out;
  }
  fprintf(stderr, "upload: listening on %s:%d, saving into %s\n", opts.host,
          hr_server_port(server, 0), opts.dir);
  uv_run(loop, UV_RUN_DEFAULT);
  status = 0;

out:
  uv_run(loop, UV_RUN_NOWAIT);
  hr_server_free(server);
  hr_router_free(router);
  if (uv_loop_close(loop) != 0) status = 1;
  return status;
}
