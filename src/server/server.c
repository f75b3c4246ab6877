/* SPDX-License-Identifier: MIT */
/*
 * The server object: options, listening addresses (numeric, or a host
 * name's addresses on one port) and sockets (one that
 * every worker polls, or one per worker with SO_REUSEPORT), attaching to a host loop, worker threads,
 * graceful shutdown and statistics.  Setup failures record the thread's
 * error detail (util/detail.h): which address, which step.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec/zconf.h"
#include "server/net/proxy.h"
#include "server/net/tlsctx.h"
#include "server/worker.h"
#include "util/detail.h"
#include "util/rcu.h"
#include "util/thread.h"

void hr_server_options_init(hr_server_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->max_request_line_bytes = 8192;
  o->max_header_bytes = 16384;
  o->max_header_fields = 100;
  o->max_body_bytes = 1024 * 1024;
  o->max_connections = 10000;
  o->header_timeout_ms = 10000;
  o->keepalive_timeout_ms = 5000;
  o->body_timeout_ms = 10000;
  o->body_min_rate_bytes = 1024;
  o->body_rate_window_ms = 10000;
  o->write_timeout_ms = 10000;
  o->write_high_water_bytes = 65536;
  o->backlog = 511;
  o->max_form_pairs = 1000;
  o->h2_max_concurrent_streams = 100;
  o->h2_initial_window_bytes = 65535;
  o->h2_max_frame_bytes = 16384;
  o->h2_reset_burst = 200;
  o->h2_reset_rate = 33;
  o->request_id_field = "X-Request-Id";
  o->request_id_echo = 0;
}

int hr_server_new(hr_server_t **out, hr_router_t *router,
                  const hr_server_options_t *opts) {
  hr__mem_t mem;
  hr_server_t *s;
  hr_server_options_t o;
  hr__detail_clear();
  if (out == NULL) return HR_EINVAL;
  *out = NULL;
  if (router == NULL) return HR_EINVAL;
  if (opts != NULL)
    o = *opts;
  else
    hr_server_options_init(&o);
  if (o.max_header_bytes < 64 || o.max_header_bytes > (1u << 24) ||
      o.max_request_line_bytes == 0 || o.max_header_fields == 0 ||
      o.write_high_water_bytes == 0 || o.backlog <= 0)
    return HR_EINVAL;
  if (o.max_form_pairs == 0) o.max_form_pairs = 1000;
  if (o.body_rate_window_ms == 0) o.body_rate_window_ms = 10000;
  if (o.h2_max_concurrent_streams == 0) o.h2_max_concurrent_streams = 100;
  if (o.h2_initial_window_bytes == 0) o.h2_initial_window_bytes = 65535;
  if (o.h2_max_frame_bytes == 0) o.h2_max_frame_bytes = 16384;
  if (o.h2_reset_burst == 0) o.h2_reset_burst = 200;
  if (o.h2_reset_rate == 0) o.h2_reset_rate = 33;
  if (o.h2_initial_window_bytes > 0x7fffffffu || o.h2_max_frame_bytes < 16384 ||
      o.h2_max_frame_bytes > 16777215)
    return HR_EINVAL;
  if ((unsigned)o.access_format > HR_ACCESS_JSON) return HR_EINVAL;
  hr__mem_init(&mem, o.allocator);
  s = hr__mem_alloc(&mem, sizeof(*s));
  if (s == NULL) return HR_ENOMEM;
  memset(s, 0, sizeof(*s));
  s->mem = mem;
  s->router = router;
  s->opts = o;
  /* The name is copied: the option's string need not outlive this call. */
  if (hr__request_id_setup(s, o.request_id_field) != 0) {
    hr__mem_free(&mem, s);
    return HR_EINVAL;
  }
  s->opts.request_id_field = s->rid_name_len ? s->rid_name : NULL;
  /* Compression: checked and copied, the caller's options need not live. */
  if (o.compress != NULL) {
    const char *why;
    int zrc = hr__zconf_new(&s->mem, o.compress, &s->zconf, &why);
    if (zrc != 0) {
      hr__mem_free(&mem, s);
      if (zrc == HR_EINVAL) hr__detail_set(zrc, "compression settings: %s", why);
      return zrc;
    }
  }
  s->opts.compress = NULL;
  /* The exchange's observers (hr__ex_observer_fn), in the order they run:
   * the after-middleware see the outcome (hr__invoke_end sets it) before
   * the worker counts it and the access log writes it. */
  s->observers[s->nobservers++] = hr__invoke_end;
  s->observers[s->nobservers++] = hr__worker_ended;
  if (o.access_log != NULL) s->observers[s->nobservers++] = hr__access_log;
  s->worker_quiet = hr__worker_quiet;
  s->wire[HR__WIRE_H1] = &hr__h1_wire;
  s->wire[HR__WIRE_H2] = &hr__h2_wire;
  s->head_limits.max_request_line = o.max_request_line_bytes;
  s->head_limits.max_header = o.max_header_bytes;
  s->head_limits.max_fields = o.max_header_fields;
  /* Room for a whole header section plus body data streaming through. */
  s->rbuf_size = (o.max_header_bytes + 8192 + 4095) & ~(size_t)4095;
  atomic_init(&s->active_conns, 0);
  atomic_init(&s->st_rejected, 0);
  atomic_init(&s->st_abandoned, 0);
  atomic_init(&s->draining, 0);
  atomic_init(&s->drain_left, 0);
  atomic_init(&s->drain_go, 0);
  atomic_init(&s->drain_called, 0);
  if (uv_mutex_init(&s->abandon_lock) != 0) {
    hr__mem_free(&mem, s);
    return HR_ENOMEM;
  }
  *out = s;
  return 0;
}

/* Appends an address (it takes a->tls and a->proxy). */
static int push_address(hr_server_t *s, const hr__addr_t *a) {
  hr__addr_t *na = hr__mem_realloc(&s->mem, s->addrs, (s->naddrs + 1) * sizeof(*na));
  if (na == NULL) return HR_ENOMEM;
  s->addrs = na;
  s->addrs[s->naddrs++] = *a;
  if (a->tls != NULL) s->ntls++;
  return 0;
}

void hr_listen_options_init(hr_listen_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->proxy = HR_PROXY_OFF;
}

static void proxyconf_free(hr_server_t *s, hr__proxyconf_t *pc) {
  if (pc == NULL) return;
  hr__mem_free(&s->mem, pc->nets);
  hr__mem_free(&s->mem, pc);
}

/* The PROXY protocol settings of `o` (*out NULL when off).  Returns 0,
 * HR_EINVAL, HR_ENOMEM. */
static int proxyconf_of(hr_server_t *s, const hr_listen_options_t *o, hr__proxyconf_t **out) {
  hr__proxyconf_t *pc;
  size_t n = 0, i;
  *out = NULL;
  if (o->proxy == HR_PROXY_OFF) return 0;
  if ((o->proxy != HR_PROXY_OPTIONAL && o->proxy != HR_PROXY_REQUIRED) ||
      o->proxy_trusted == NULL || o->proxy_trusted[0] == NULL)
    return HR_EINVAL;
  while (o->proxy_trusted[n] != NULL) n++;
  if ((pc = hr__mem_alloc(&s->mem, sizeof(*pc))) == NULL) return HR_ENOMEM;
  pc->mode = o->proxy;
  pc->nnets = n;
  if ((pc->nets = hr__mem_alloc(&s->mem, n * sizeof(*pc->nets))) == NULL) {
    hr__mem_free(&s->mem, pc);
    return HR_ENOMEM;
  }
  for (i = 0; i < n; i++)
    if (hr__cidr_parse(o->proxy_trusted[i], &pc->nets[i]) != 0) {
      proxyconf_free(s, pc);
      return HR_EINVAL;
    }
  *out = pc;
  return 0;
}

static void tlsconf_free(hr_server_t *s, hr__tlsconf_t *conf) {
  if (conf == NULL) return;
  hr__tlsconf_free(conf);
  hr__mem_free(&s->mem, conf);
}

/* The TLS listener of `opts` (*out NULL for none): certificate loaded and
 * checked now.  Returns 0, HR_EINVAL, HR_ETLS, HR_ENOMEM. */
static int tlsconf_of(hr_server_t *s, const hr_tls_options_t *opts, int h2,
                      hr__tlsconf_t **out) {
  SSL_CTX *ctx;
  hr__tlsconf_t *conf;
  int err;
  *out = NULL;
  if (opts == NULL) return 0;
  if ((conf = hr__mem_alloc(&s->mem, sizeof(*conf))) == NULL) return HR_ENOMEM;
  hr__tlsconf_init(conf, &s->mem);
  conf->h2 = h2; /* before the first context: its ALPN callback reads it */
  if ((err = hr__tlsconf_sessions(conf, opts)) == 0 &&
      (err = hr__tlsctx_build(opts, conf, &ctx)) == 0)
    hr__tlsconf_set_default(conf, ctx);
  if (err != 0) {
    tlsconf_free(s, conf);
    return err;
  }
  *out = conf;
  return 0;
}

/* Adds address `a` (its socket address or `given` set) with the settings
 * of `o` (NULL: the defaults). */
static int add_address(hr_server_t *s, hr__addr_t *a, const hr_listen_options_t *o) {
  hr_listen_options_t defaults;
  int err;
  if (o == NULL) {
    hr_listen_options_init(&defaults);
    o = &defaults;
  }
  if (o->reuseport != 0 && o->reuseport != 1) return HR_EINVAL;
  /* A passed socket is one socket: no other can join it. */
  if (o->reuseport && a->given >= 0) return HR_EINVAL;
  a->reuseport = (unsigned)o->reuseport;
  if (o->h2 != HR_H2_AUTO && o->h2 != HR_H2_OFF && o->h2 != HR_H2_ON) return HR_EINVAL;
  a->h2 = (unsigned)(o->h2 == HR_H2_ON || (o->h2 == HR_H2_AUTO && o->tls != NULL));
  if ((err = proxyconf_of(s, o, &a->proxy)) != 0) return err;
  a->group = s->ngroups;
  if ((err = tlsconf_of(s, o->tls, o->h2 != HR_H2_OFF, &a->tls)) == 0 && (err = push_address(s, a)) == 0) {
    s->ngroups++;
    return 0;
  }
  tlsconf_free(s, a->tls);
  proxyconf_free(s, a->proxy);
  return err;
}

/* Most addresses one host name listens on (getaddrinfo's answers beyond
 * are left out). */
#define HR__MAX_RESOLVED 16

/* getaddrinfo's error `rc` as a libuv code, as uv_getaddrinfo reports it. */
static int gai_code(int rc, int saved_errno) {
  switch (rc) {
    case EAI_NONAME: return UV_EAI_NONAME;
    case EAI_AGAIN: return UV_EAI_AGAIN;
    case EAI_FAIL: return UV_EAI_FAIL;
    case EAI_FAMILY: return UV_EAI_FAMILY;
    case EAI_SERVICE: return UV_EAI_SERVICE;
    case EAI_MEMORY: return HR_ENOMEM;
#ifdef EAI_NODATA
    case EAI_NODATA: return UV_EAI_NODATA;
#endif
#ifdef EAI_ADDRFAMILY
    case EAI_ADDRFAMILY: return UV_EAI_ADDRFAMILY;
#endif
    case EAI_SYSTEM: return saved_errno != 0 ? -saved_errno : UV_EAI_FAIL;
    default: return UV_EAI_FAIL;
  }
}

/* Whether `host`, which is no valid IPv4 or IPv6 address, was meant as
 * one: empty, or with a ':' (an IPv6 address), or nothing but digits and
 * dots ("1.2.3": getaddrinfo would take it as inet_aton does, 1.2.0.3).
 * No host name is all digits (RFC 3696 §2: a top-level domain is not). */
static int looks_numeric(const char *host) {
  size_t i;
  if (host[0] == '\0' || strchr(host, ':') != NULL) return 1;
  for (i = 0; host[i] != '\0'; i++)
    if (host[i] != '.' && (host[i] < '0' || host[i] > '9')) return 0;
  return 1;
}

/* The IPv4 and IPv6 addresses of host name `host` with `port`, in
 * getaddrinfo's order (RFC 6724's), without repeats, into out[0..*n).
 * Blocks while the name is looked up (/etc/hosts, DNS).  Returns 0 or a
 * libuv code (UV_EAI_NONAME...), HR_ENOMEM, with the detail recorded. */
static int resolve(const char *host, int port, struct sockaddr_storage *out, size_t *n) {
  struct addrinfo hints, *res = NULL, *ai;
  char service[8];
  size_t i;
  int rc;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  snprintf(service, sizeof service, "%d", port);
  errno = 0;
  if ((rc = getaddrinfo(host, service, &hints, &res)) != 0) {
    int err = gai_code(rc, errno);
    return hr__detail_set(err, "resolve \"%s\": %s", host,
                          rc == EAI_SYSTEM ? hr_strerror(err) : gai_strerror(rc));
  }
  *n = 0;
  for (ai = res; ai != NULL && *n < HR__MAX_RESOLVED; ai = ai->ai_next) {
    if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
        ai->ai_addrlen > sizeof(*out))
      continue;
    memset(&out[*n], 0, sizeof(*out));
    memcpy(&out[*n], ai->ai_addr, ai->ai_addrlen);
    for (i = 0; i < *n && memcmp(&out[i], &out[*n], sizeof(*out)) != 0; i++) {
    }
    if (i == *n) (*n)++;
  }
  freeaddrinfo(res);
  if (*n == 0)
    return hr__detail_set(UV_EAI_NONAME, "resolve \"%s\": no IPv4 or IPv6 address", host);
  return 0;
}

int hr__server_listen_addrs(hr_server_t *s, const struct sockaddr_storage *ss, size_t n,
                            int port, const hr_listen_options_t *o) {
  hr__addr_t a;
  size_t first, i;
  int err;
  if (s == NULL || ss == NULL || n == 0 || port < 0 || port > 65535) return HR_EINVAL;
  if (s->state != HR__SRV_NEW) return HR_EINVAL;
  memset(&a, 0, sizeof(a));
  a.ss = ss[0];
  a.port = port;
  a.any_port = port == 0;
  a.given = -1;
  first = s->naddrs;
  if ((err = add_address(s, &a, o)) != 0) return err;
  for (i = 1; i < n; i++) {
    hr__addr_t b = s->addrs[first];
    b.ss = ss[i];
    b.shares = 1;
    if ((err = push_address(s, &b)) != 0) {
      /* Undo the whole group: the call adds all or nothing. */
      if (s->addrs[first].tls != NULL) s->ntls -= s->naddrs - first;
      tlsconf_free(s, s->addrs[first].tls);
      proxyconf_free(s, s->addrs[first].proxy);
      s->naddrs = first;
      s->ngroups--;
      return err;
    }
  }
  return 0;
}

int hr_server_listen_ex(hr_server_t *s, const char *host, int port,
                        const hr_listen_options_t *o) {
  struct sockaddr_storage ss[HR__MAX_RESOLVED];
  size_t n = 1;
  int err;
  hr__detail_clear();
  if (s == NULL || host == NULL || port < 0 || port > 65535) return HR_EINVAL;
  if (s->state != HR__SRV_NEW) return HR_EINVAL;
  memset(&ss[0], 0, sizeof(ss[0]));
  /* A numeric address as it is; anything else is a name to resolve. */
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss[0]) != 0 &&
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss[0]) != 0) {
    if (looks_numeric(host))
      return hr__detail_set(HR_EINVAL, "\"%s\" is not an IPv4 or IPv6 address", host);
    if ((err = resolve(host, port, ss, &n)) != 0) return err;
  }
  return hr__server_listen_addrs(s, ss, n, port, o);
}

int hr_server_listen(hr_server_t *s, const char *host, int port) {
  return hr_server_listen_ex(s, host, port, NULL);
}

int hr_server_listen_tls(hr_server_t *s, const char *host, int port,
                         const hr_tls_options_t *opts) {
  hr_listen_options_t o;
  if (opts == NULL) return HR_EINVAL;
  hr_listen_options_init(&o);
  o.tls = opts;
  return hr_server_listen_ex(s, host, port, &o);
}

int hr_server_listen_fd(hr_server_t *s, int fd, const hr_listen_options_t *o) {
  hr__addr_t a;
  socklen_t len = sizeof(a.ss);
  int type = 0, listening = 0, flags, err;
  socklen_t ilen = sizeof(int);
  if (s == NULL || fd < 0 || s->state != HR__SRV_NEW) return HR_EINVAL;
  memset(&a, 0, sizeof(a));
  /* A listening TCP socket (systemd's LISTEN_FDS, a parent's hand-over). */
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ilen) != 0 || type != SOCK_STREAM)
    return HR_EINVAL;
  ilen = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) != 0 || !listening)
    return HR_EINVAL;
  if (getsockname(fd, (struct sockaddr *)&a.ss, &len) != 0 ||
      (a.ss.ss_family != AF_INET && a.ss.ss_family != AF_INET6))
    return HR_EINVAL;
  a.port = ntohs(a.ss.ss_family == AF_INET ? ((struct sockaddr_in *)&a.ss)->sin_port
                                           : ((struct sockaddr_in6 *)&a.ss)->sin6_port);
  a.given = fd;
  a.any_port = 0;
  /* Non-blocking for every worker's descriptor of it (they share the open
   * file description).  Set only once the address is taken: on an error
   * the caller keeps fd as it was. */
  if ((flags = fcntl(fd, F_GETFL)) < 0) return -errno;
  if ((err = add_address(s, &a, o)) != 0) return err;
  if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    /* The address is there and will close fd at hr_server_free; fcntl on
     * a descriptor just checked cannot fail short of EBADF. */
    return -errno;
  }
  return 0;
}

/* The first address of listen call `index` (the public index), or NULL.
 * The addresses never change once the server runs. */
static const hr__addr_t *group_first(const hr_server_t *s, size_t index) {
  size_t i;
  for (i = 0; s != NULL && i < s->naddrs; i++)
    if (s->addrs[i].group == index) return &s->addrs[i];
  return NULL;
}

/* The TLS settings of listen call `index` (shared by its addresses), or
 * NULL. */
static hr__tlsconf_t *group_tls(const hr_server_t *s, size_t index) {
  const hr__addr_t *a = group_first(s, index);
  return a != NULL ? a->tls : NULL;
}

int hr_server_tls_update(hr_server_t *s, size_t index,
                         const hr_tls_options_t *opts) {
  hr__tlsconf_t *conf;
  SSL_CTX *ctx;
  int err;
  hr__detail_clear();
  if (opts == NULL || (conf = group_tls(s, index)) == NULL) return HR_EINVAL;
  if ((err = hr__tlsctx_build(opts, conf, &ctx)) != 0) return err;
  hr__tlsconf_replace(conf, ctx);
  return 0;
}

int hr_server_tls_rotate_tickets(hr_server_t *s, size_t index) {
  hr__tlsconf_t *conf = group_tls(s, index);
  if (conf == NULL) return HR_EINVAL;
  return hr__tlsconf_rotate(conf);
}

int hr_server_tls_add_name(hr_server_t *s, size_t index, const char *name,
                           const hr_tls_options_t *opts) {
  hr__tlsconf_t *conf;
  SSL_CTX *ctx;
  int err;
  hr__detail_clear();
  if (opts == NULL || name == NULL || (conf = group_tls(s, index)) == NULL) return HR_EINVAL;
  if ((err = hr__tlsctx_build(opts, conf, &ctx)) != 0) return err;
  return hr__tlsconf_set_name(conf, name, ctx);
}

static void set_port(struct sockaddr_storage *ss, int port) {
  if (ss->ss_family == AF_INET)
    ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

/* A bound, listening, non-blocking socket.  With `reuseport` (the
 * listener asked for it), SO_REUSEPORT lets every worker have its own
 * listener on the same address (the kernel spreads connections over
 * them), and any process of the same user join them; without it, binding
 * a port another socket listens on fails with UV_EADDRINUSE.  Returns 0
 * or a libuv error code; *step names the call that failed ("bind"...). */
static int make_socket(struct sockaddr_storage *ss, int backlog, int reuseport,
                       int *out, const char **step) {
  int one = 1, fd;
  socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                           : sizeof(struct sockaddr_in6);
  *step = "socket";
  fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  *step = "setsockopt";
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      (reuseport &&
       setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) ||
      (ss->ss_family == AF_INET6 &&
       setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
      (*step = "bind", bind(fd, (struct sockaddr *)ss, len) != 0) ||
      (*step = "listen", listen(fd, backlog) != 0)) {
    int err = -errno;
    close(fd);
    return err;
  }
  *out = fd;
  return 0;
}

/* How often a host name's addresses, with port 0, look for a port free on
 * all of them before the start fails (below). */
#define HR__ANY_PORT_TRIES 16

/* Binds the sockets of address `i` for the `n` workers.  The first one
 * resolves port 0; the other workers bind that port.  Returns 0 or a libuv
 * error code, with the detail recorded. */
static int bind_address(hr_server_t *s, size_t i, size_t n) {
  hr__addr_t *a = &s->addrs[i];
  size_t k;
  int err;
  for (k = 0; k < n; k++) {
    int *fd = &s->workers[k].fds[i];
    /* One socket that every worker polls through a descriptor of its own
     * (a passed one, or the first worker's), unless each binds its own
     * with SO_REUSEPORT. */
    int shared = a->given >= 0 ? a->given : (k > 0 && !a->reuseport ? s->workers[0].fds[i] : -1);
    struct sockaddr_storage ss = a->ss;
    const char *step;
    if (shared >= 0) {
      if ((*fd = fcntl(shared, F_DUPFD_CLOEXEC, 0)) < 0) return -errno;
      continue;
    }
    set_port(&ss, a->port);
    if ((err = make_socket(&ss, s->opts.backlog, a->reuseport, fd, &step)) != 0) {
      char at[64];
      hr__detail_addr(&ss, at, sizeof at);
      return hr__detail_set(err, "%s %s: %s", step, at, hr_strerror(err));
    }
    if (a->port == 0) {
      socklen_t len = sizeof(ss);
      if (getsockname(*fd, (struct sockaddr *)&ss, &len) != 0) return -errno;
      a->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                              : ((struct sockaddr_in6 *)&ss)->sin6_port);
    }
  }
  return 0;
}

/* Creates the workers array and binds every socket.  The addresses of one
 * host name (a group) share one port: with port 0 the group's first
 * address picks it and the others bind the same; when one of them finds
 * it taken, the group starts over with a new port, up to
 * HR__ANY_PORT_TRIES times. */
static int create_workers(hr_server_t *s, size_t n) {
  size_t i, k, first = 0;
  int err, tries = 0;
  hr__request_id_draw(s); /* before any worker generates an id */
  s->workers = hr__mem_alloc(&s->mem, n * sizeof(hr__worker_t));
  if (s->workers == NULL) return HR_ENOMEM;
  memset(s->workers, 0, n * sizeof(hr__worker_t));
  s->nworkers = n;
  for (k = 0; k < n; k++) {
    hr__worker_t *w = &s->workers[k];
    w->index = k;
    w->loop_slot = -1;
    w->nlisteners = s->naddrs;
    w->listeners = hr__mem_alloc(&s->mem, s->naddrs * sizeof(hr__listener_t));
    w->fds = hr__mem_alloc(&s->mem, s->naddrs * sizeof(int));
    if (w->listeners == NULL || w->fds == NULL) return HR_ENOMEM;
    for (i = 0; i < s->naddrs; i++) w->fds[i] = -1;
  }
  for (i = 0; i < s->naddrs; i++) {
    hr__addr_t *a = &s->addrs[i];
    if (!a->shares) first = i;
    else a->port = s->addrs[i - 1].port; /* the group's one port */
    err = bind_address(s, i, n);
    if (err == UV_EADDRINUSE && a->shares && a->any_port && tries < HR__ANY_PORT_TRIES) {
      /* The port the group's first address picked is taken here: close
       * the group's sockets and let its first address pick again. */
      size_t j;
      tries++;
      hr__detail_clear();
      for (j = first; j <= i; j++) {
        s->addrs[j].port = 0;
        for (k = 0; k < n; k++)
          if (s->workers[k].fds[j] >= 0) {
            close(s->workers[k].fds[j]);
            s->workers[k].fds[j] = -1;
          }
      }
      i = first - 1; /* the loop's i++ makes it `first` (unsigned wrap for 0) */
      continue;
    }
    if (err != 0) return err;
  }
  return 0;
}

static void free_workers(hr_server_t *s) {
  size_t k;
  if (s->workers == NULL) return;
  for (k = 0; k < s->nworkers; k++) {
    hr__worker_t *w = &s->workers[k];
    size_t i;
    if (w->fds != NULL)
      for (i = 0; i < w->nlisteners; i++)
        if (w->fds[i] >= 0) close(w->fds[i]);
    if (w->loop_slot >= 0) hr__router_loop_release(s->router, w->loop_slot);
    if (w->post_lock_made) uv_mutex_destroy(&w->post_lock);
    hr__mem_free(&s->mem, w->listeners);
    hr__mem_free(&s->mem, w->fds);
  }
  hr__mem_free(&s->mem, s->workers);
  s->workers = NULL;
  s->nworkers = 0;
}

void hr__worker_finished(hr__worker_t *w) {
  hr_server_t *s = w->server;
  /* Worker threads simply end their loop; the thread that joins them does
   * the rest (stop_and_join).  Only an attached server, whose one worker
   * runs on the host's thread, finishes here. */
  if (!w->attached) return;
  s->state = HR__SRV_DONE;
  s->attached_done = 1;
  hr__worker_cleanup(w);
  if (s->shutdown_cb != NULL) s->shutdown_cb(s, s->shutdown_udata);
}

int hr_server_attach(hr_server_t *s, uv_loop_t *loop) {
  int err;
  hr__detail_clear();
  if (s == NULL || loop == NULL) return HR_EINVAL;
  if (s->state != HR__SRV_NEW) return HR_ESTATE;
  if (s->naddrs == 0) return HR_EINVAL;
  err = create_workers(s, 1);
  if (err == 0) {
    s->workers[0].attached = 1;
    err = hr__worker_init(&s->workers[0], s, loop);
  }
  if (err != 0) {
    /* Handles initialised so far must be closed before the memory goes. */
    if (s->workers != NULL && s->workers[0].base_handles) {
      s->state = HR__SRV_CLOSING;
      hr__worker_shutdown(&s->workers[0], 0);
      /* The handles close on the host's next loop iteration; the server
       * stays in CLOSING and hr_server_free() releases it after that. */
      return err;
    }
    free_workers(s);
    return err;
  }
  s->state = HR__SRV_ATTACHED;
  return 0;
}

int hr__server_attach_virtual(hr_server_t *s, uv_loop_t *loop) {
  int err;
  if (s == NULL || loop == NULL) return HR_EINVAL;
  if (s->state != HR__SRV_NEW || s->naddrs != 0) return HR_ESTATE;
  err = create_workers(s, 1);
  if (err == 0) {
    s->workers[0].attached = 1;
    err = hr__worker_init(&s->workers[0], s, loop);
  }
  if (err != 0) {
    free_workers(s);
    return err;
  }
  s->state = HR__SRV_ATTACHED;
  return 0;
}

hr__worker_t *hr__server_worker(hr_server_t *s, size_t index) {
  return s != NULL && index < s->nworkers ? &s->workers[index] : NULL;
}

int hr_server_close(hr_server_t *s, uint64_t deadline_ms, hr_shutdown_cb cb,
                    void *udata) {
  /* A drain in its grace period may be cut short. */
  int grace = s != NULL && s->state == HR__SRV_CLOSING && s->workers != NULL &&
              s->workers[0].draining && !s->workers[0].stopping;
  if (s == NULL || (s->state != HR__SRV_ATTACHED && !grace)) return HR_ESTATE;
  s->state = HR__SRV_CLOSING;
  s->shutdown_cb = cb;
  s->shutdown_udata = udata;
  hr__worker_shutdown(&s->workers[0], deadline_ms);
  return 0;
}

/* ---- worker threads ------------------------------------------------------ */

typedef struct start_ctx_s {
  hr__worker_t *w;
  uv_sem_t *ready;
} start_ctx_t;

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void worker_main(void *arg) {
  hr__worker_t *w = arg;
  hr_server_t *s = w->server;
  uv_sem_t *ready = w->thread_ready;
  int err;
  hr__tcp_block_sigpipe(); /* this thread is ours: see tcp.c */
  err = uv_loop_init(&w->own_loop);
  if (err != 0) {
    w->start_err = err;
    uv_sem_post(ready);
    return;
  }
  err = hr__worker_init(w, s, &w->own_loop);
  w->start_err = err;
  /* A worker that failed to start closes what it opened by itself; the
   * starting thread never signals it. */
  if (err != 0) hr__worker_shutdown(w, 0);
  uv_sem_post(ready); /* `ready` must not be touched after this */
  uv_run(&w->own_loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&w->own_loop) == UV_EBUSY) {
    uv_walk(&w->own_loop, close_walk, NULL);
    uv_run(&w->own_loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->own_loop);
  }
  if (err == 0) hr__server_worker_ended(s);
}

static int is_worker_thread(const hr_server_t *s) {
  size_t k;
  for (k = 0; k < s->nworkers; k++)
    if (hr__thread_is(&s->workers[k].thread)) return 1;
  return 0;
}

static void stop_and_join(hr_server_t *s, size_t started, uint64_t deadline_ms) {
  size_t k;
  for (k = 0; k < started; k++) {
    hr__worker_t *w = &s->workers[k];
    if (w->start_err != 0) continue; /* already shutting itself down */
    w->shutdown_deadline_ms = deadline_ms;
    /* Pairs with the acquire load in on_async(): the deadline is visible
     * before the flag. */
    atomic_store_explicit(&w->stop_requested, 1, memory_order_release);
    hr__worker_wake(w);
  }
  for (k = 0; k < started; k++) {
    uv_thread_join(&s->workers[k].thread);
    hr__worker_cleanup(&s->workers[k]);
  }
}

int hr_server_start(hr_server_t *s, unsigned nthreads) {
  uv_sem_t ready;
  size_t k, started = 0;
  int err;
  hr__detail_clear();
  if (s == NULL || nthreads == 0 || nthreads > 256) return HR_EINVAL;
  if (s->state != HR__SRV_NEW) return HR_ESTATE;
  if (s->naddrs == 0) return HR_EINVAL;
  err = create_workers(s, nthreads);
  if (err != 0) {
    free_workers(s);
    return err;
  }
  atomic_init(&s->drain_left, nthreads);
  s->threaded = 1;
  if ((err = uv_sem_init(&ready, 0)) != 0) {
    free_workers(s);
    return err;
  }
  for (k = 0; k < nthreads; k++) {
    hr__worker_t *w = &s->workers[k];
    w->thread_ready = &ready;
    w->server = s;
    err = uv_thread_create(&w->thread, worker_main, w);
    if (err != 0) break;
    started++;
  }
  for (k = 0; k < started; k++) uv_sem_wait(&ready);
  uv_sem_destroy(&ready);
  for (k = 0; k < started && err == 0; k++)
    if (s->workers[k].start_err != 0) err = s->workers[k].start_err;
  if (err != 0) {
    stop_and_join(s, started, 0);
    free_workers(s);
    return err;
  }
  s->state = HR__SRV_THREADS;
  return 0;
}

int hr_server_stop(hr_server_t *s, uint64_t deadline_ms) {
  if (s == NULL || s->state != HR__SRV_THREADS) return HR_ESTATE;
  /* Joining waits for the workers, and a worker may wait for a grace
   * period on its way out (a context's destroy callback, a post, an
   * after-middleware that calls a writer outside a section), which waits
   * for this thread's read-side section: inside one, both would wait
   * forever. */
  if (is_worker_thread(s) || urcu_bp_read_ongoing()) return HR_ETHREAD;
  stop_and_join(s, s->nworkers, deadline_ms);
  s->state = HR__SRV_DONE;
  return 0;
}

/* Frees the exchanges abandoned at a shutdown deadline, then what the
 * pools kept of them.  Every worker has finished. */
static void release_abandoned(hr_server_t *s) {
  size_t k;
  while (s->abandoned != NULL) {
    hr__exchange_t *ex = s->abandoned;
    s->abandoned = ex->next;
    hr__exchange_release_abandoned(ex);
  }
  for (k = 0; k < s->nworkers; k++) {
    hr__worker_t *w = &s->workers[k];
    if (w->mem.a == NULL) continue; /* never initialised */
    hr__pool_drain(&w->rpool);
    hr__pool_drain(&w->rpool_small);
    hr__pool_drain(&w->apool);
    hr__pool_drain(&w->xpool);
  }
}

void hr_server_free(hr_server_t *s) {
  hr__mem_t mem;
  size_t k;
  if (s == NULL) return;
  if (s->state == HR__SRV_THREADS) hr_server_stop(s, 0);
  /* Still running: on the host's loop, or on worker threads (a handler of
   * this server's, whose stop was refused): freeing would crash them. */
  if (s->state == HR__SRV_THREADS || s->state == HR__SRV_ATTACHED ||
      (s->state == HR__SRV_CLOSING && !s->attached_done))
    return;
  release_abandoned(s);
  free_workers(s);
  for (k = 0; k < s->naddrs; k++) {
    if (s->addrs[k].shares) continue; /* its group's first frees them */
    tlsconf_free(s, s->addrs[k].tls);
    proxyconf_free(s, s->addrs[k].proxy);
    if (s->addrs[k].given >= 0) close(s->addrs[k].given);
  }
  uv_mutex_destroy(&s->abandon_lock);
  hr__mem_free(&s->mem, s->addrs);
  hr__mem_free(&s->mem, s->zconf);
  mem = s->mem;
  hr__mem_free(&mem, s);
}

int hr_server_listener_fd(const hr_server_t *s, size_t index) {
  const hr__addr_t *a = group_first(s, index);
  size_t at;
  int fd;
  if (a == NULL || a->reuseport) return HR_EINVAL;
  at = (size_t)(a - s->addrs);
  /* A host name's several addresses are several sockets: not one to hand. */
  if (at + 1 < s->naddrs && s->addrs[at + 1].shares) return HR_EINVAL;
  if (s->workers == NULL || (s->state != HR__SRV_ATTACHED && s->state != HR__SRV_THREADS))
    return HR_ESTATE;
  /* Worker 0's listener holds the socket (every worker polls a descriptor
   * of it); it closes only at a shutdown, which the caller does not run
   * concurrently (see server.h). */
  fd = s->workers[0].listeners[at].fd;
  if (fd < 0) return HR_ESTATE;
  fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  return fd < 0 ? -errno : fd;
}

int hr_server_port(const hr_server_t *s, size_t index) {
  const hr__addr_t *a = group_first(s, index);
  if (a == NULL || s->workers == NULL) return 0;
  return a->port; /* the group's one port */
}

void hr_server_stats(const hr_server_t *s, hr_server_stats_t *out) {
  size_t k;
  memset(out, 0, sizeof(*out));
  if (s == NULL) return;
  out->allocations = hr__mem_count(&s->mem);
  for (k = 0; k < s->nworkers; k++) {
    const hr__worker_t *w = &s->workers[k];
    out->requests += atomic_load_explicit(&w->st_requests, memory_order_relaxed);
    out->allocations += hr__mem_count(&w->mem);
    out->connections_accepted +=
        atomic_load_explicit(&w->st_accepted, memory_order_relaxed);
    out->bad_requests += atomic_load_explicit(&w->st_bad, memory_order_relaxed);
    out->client_aborts += atomic_load_explicit(&w->st_client_aborts, memory_order_relaxed);
    out->accept_pauses +=
        atomic_load_explicit(&w->st_accept_pauses, memory_order_relaxed);
    out->exchanges_in_use += hr__pool_in_use(&w->xpool);
    out->read_buffers_in_use += hr__pool_in_use(&w->rpool) + hr__pool_in_use(&w->rpool_small);
    out->output_blocks_in_use += hr__pool_in_use(&w->bpool);
    out->arena_blocks_in_use += hr__pool_in_use(&w->apool);
    out->output_queues_in_use += hr__pool_in_use(&w->opool);
    out->bytes_received += atomic_load_explicit(&w->st_bytes_received, memory_order_relaxed);
    out->bytes_sent += atomic_load_explicit(&w->st_bytes_sent, memory_order_relaxed);
  }
  out->connections_active =
      atomic_load_explicit(&s->active_conns, memory_order_relaxed);
  out->connections_rejected =
      atomic_load_explicit(&s->st_rejected, memory_order_relaxed);
  out->responses_abandoned =
      atomic_load_explicit(&s->st_abandoned, memory_order_relaxed);
}
