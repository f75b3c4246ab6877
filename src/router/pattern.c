/* SPDX-License-Identifier: MIT */
/*
 * Route compilation: methods, the pattern (into static, parameter and
 * catch-all tokens), and the pre-rendered constant response fields.  Errors
 * say what is wrong and where.
 */
#include <string.h>

#include "codec/zconf.h"
#include "util/text.h"
#include "router/route.h"

static const struct {
  const char *name;
  size_t len;
} std_methods[HR__M_STD] = {
    {"GET", 3},     {"HEAD", 4},    {"POST", 4},    {"PUT", 3},   {"DELETE", 6},
    {"PATCH", 5},   {"OPTIONS", 7}, {"CONNECT", 7}, {"TRACE", 5},
};

int hr__method_id(hr_span_t m) {
  switch (m.len) {
    case 3:
      if (memcmp(m.ptr, "GET", 3) == 0) return HR__M_GET;
      if (memcmp(m.ptr, "PUT", 3) == 0) return HR__M_PUT;
      break;
    case 4:
      if (memcmp(m.ptr, "POST", 4) == 0) return HR__M_POST;
      if (memcmp(m.ptr, "HEAD", 4) == 0) return HR__M_HEAD;
      break;
    case 5:
      if (memcmp(m.ptr, "PATCH", 5) == 0) return HR__M_PATCH;
      if (memcmp(m.ptr, "TRACE", 5) == 0) return HR__M_TRACE;
      break;
    case 6:
      if (memcmp(m.ptr, "DELETE", 6) == 0) return HR__M_DELETE;
      break;
    case 7:
      if (memcmp(m.ptr, "OPTIONS", 7) == 0) return HR__M_OPTIONS;
      if (memcmp(m.ptr, "CONNECT", 7) == 0) return HR__M_CONNECT;
      break;
    default:
      break;
  }
  return -1;
}

hr_span_t hr__method_name(int id) {
  hr_span_t s = {std_methods[id].name, std_methods[id].len};
  return s;
}


static int is_name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

static int fail(hr_route_error_t *err, int code, const char *reason,
                size_t offset) {
  if (err != NULL) {
    err->code = code;
    err->reason = reason;
    err->offset = offset;
    err->conflict[0] = '\0';
    err->conflict_len = 0;
  }
  return code;
}

static void core_free(hr__mem_t *m, hr__core_t *rt) {
  size_t i;
  if (rt == NULL) return;
  for (i = 0; i < HR__MAX_LOOPS; i++) {
    /* Pairs with the release store in hr__core_slot(). */
    hr__slot_t *s = atomic_load_explicit(&rt->slots[i], memory_order_acquire);
    if (s != NULL) rt->slot_alloc->free(rt->slot_alloc->ctx, s);
  }
  hr__mem_free(m, (void *)rt->pattern.ptr); /* one block: pattern, methods,
                                                host, token text */
  hr__mem_free(m, rt->ext_methods);
  hr__mem_free(m, rt->toks);
  hr__mem_free(m, (void *)rt->head.ptr);
  hr__zconf_drop(rt->zconf);
  hr__mem_free(m, rt);
}

void hr__core_unref(hr__mem_t *m, hr__core_t *core) {
  /* acq_rel: the last owner sees every write the others made before they
   * dropped their references. */
  if (core != NULL &&
      atomic_fetch_sub_explicit(&core->refs, 1, memory_order_acq_rel) == 1)
    core_free(m, core);
}

int hr__patterns_equiv(const hr__core_t *a, const hr__core_t *b) {
  size_t i;
  if (a->ntoks != b->ntoks) return 0;
  for (i = 0; i < a->ntoks; i++) {
    if (a->toks[i].kind != b->toks[i].kind) return 0;
    /* literal text is already lower-cased on a case-insensitive router */
    if (a->toks[i].kind == HR__TOK_STATIC && !hr_span_eq(a->toks[i].text, b->toks[i].text))
      return 0;
  }
  return 1;
}

int hr__methods_equal(const hr__core_t *a, const hr__core_t *b) {
  size_t i, j;
  if (a->any_method != b->any_method || a->std_methods != b->std_methods ||
      a->n_ext != b->n_ext)
    return 0;
  for (i = 0; i < a->n_ext; i++) {
    for (j = 0; j < b->n_ext; j++)
      if (hr_span_eq(a->ext_methods[i], b->ext_methods[j])) break;
    if (j == b->n_ext) return 0;
  }
  return 1;
}

int hr__methods_overlap(const hr__core_t *a, const hr__core_t *b) {
  size_t i, j;
  if (a->any_method || b->any_method) return a->any_method && b->any_method;
  if (a->std_methods & b->std_methods) return 1;
  for (i = 0; i < a->n_ext; i++)
    for (j = 0; j < b->n_ext; j++)
      if (hr_span_eq(a->ext_methods[i], b->ext_methods[j])) return 1;
  return 0;
}

static int parse_methods(hr__mem_t *m, hr__core_t *rt, hr_route_error_t *err) {
  const char *s = rt->methods_text.ptr, *end = s + rt->methods_text.len;
  size_t n = 1;
  const char *c;
  if (rt->methods_text.len == 0)
    return fail(err, HR_EINVAL, "no method given", 0);
  if (rt->methods_text.len == 1 && s[0] == '*') {
    rt->any_method = 1;
    return 0;
  }
  for (c = s; c < end; c++)
    if (*c == ',') n++;
  rt->ext_methods = hr__mem_alloc(m, n * sizeof(hr_span_t));
  if (rt->ext_methods == NULL) return fail(err, HR_ENOMEM, "out of memory", 0);
  while (s <= end) {
    const char *e = memchr(s, ',', (size_t)(end - s));
    hr_span_t tok;
    int id;
    size_t j;
    if (e == NULL) e = end;
    if (e == s) return fail(err, HR_EINVAL, "empty method", 0);
    for (c = s; c < e; c++)
      if (!hr__is_tchar((unsigned char)*c))
        return fail(err, HR_EINVAL, "a method must be a token (RFC 9110 9.1)", 0);
    tok.ptr = s;
    tok.len = (size_t)(e - s);
    if (tok.len == 1 && tok.ptr[0] == '*')
      return fail(err, HR_EINVAL, "\"*\" (every method) cannot be listed with others", 0);
    id = hr__method_id(tok);
    if (id >= 0) {
      if (rt->std_methods & (1u << id))
        return fail(err, HR_EINVAL, "method listed twice", 0);
      rt->std_methods |= (uint16_t)(1u << id);
    } else {
      for (j = 0; j < rt->n_ext; j++)
        if (hr_span_eq(rt->ext_methods[j], tok))
          return fail(err, HR_EINVAL, "method listed twice", 0);
      rt->ext_methods[rt->n_ext++] = tok;
    }
    s = e + 1;
  }
  return 0;
}

static int field_ok(const hr_field_t *f) {
  size_t i;
  if (f->name.len == 0) return 0;
  for (i = 0; i < f->name.len; i++)
    if (!hr__is_tchar((unsigned char)f->name.ptr[i])) return 0;
  for (i = 0; i < f->value.len; i++) {
    char c = f->value.ptr[i];
    if (c == '\r' || c == '\n' || c == '\0') return 0;
  }
  return 1;
}


/* Whether a constant field describes content (RFC 9110 §8.3-8.5:
 * Content-Type, Content-Encoding, Content-Language), which a response
 * without any (204, 304) does not carry. */
static int is_content_field(hr_span_t name) {
  return hr_span_eq_nocase(name, HR_SPAN_LIT("Content-Type")) ||
         hr_span_eq_nocase(name, HR_SPAN_LIT("Content-Encoding")) ||
         hr_span_eq_nocase(name, HR_SPAN_LIT("Content-Language"));
}

/* Renders the fields of `o` as "Name: value\r\n" lines at p, those that
 * describe content only when `content`.  Returns the end. */
static char *put_fields(char *p, const hr_route_options_t *o, int content) {
  size_t i;
  for (i = 0; i < o->nfields; i++) {
    if (!content && is_content_field(o->fields[i].name)) continue;
    memcpy(p, o->fields[i].name.ptr, o->fields[i].name.len);
    p += o->fields[i].name.len;
    *p++ = ':';
    *p++ = ' ';
    memcpy(p, o->fields[i].value.ptr, o->fields[i].value.len);
    p += o->fields[i].value.len;
    *p++ = '\r';
    *p++ = '\n';
  }
  return p;
}

/* Pre-renders the constant fields as "Name: value\r\n" lines, twice in
 * one block: all of them (head), then without the content fields
 * (head_bodiless, for 204 and 304). */
static int render_head(hr__mem_t *m, hr__core_t *rt,
                       const hr_route_options_t *o, hr_route_error_t *err) {
  size_t i, len = 0;
  char *p, *q;
  if (o->nfields > 0 && o->fields == NULL)
    return fail(err, HR_EINVAL, "nfields without fields", 0);
  for (i = 0; i < o->nfields; i++) {
    if (!field_ok(&o->fields[i]))
      return fail(err, HR_EINVAL,
                  "a constant field needs a token name and a value without CR, LF or NUL",
                  0);
    if (hr__reserved_field(o->fields[i].name))
      return fail(err, HR_EINVAL,
                  "Date, Content-Length, Transfer-Encoding and Connection are the "
                  "server's to send",
                  0);
    len += o->fields[i].name.len + 2 + o->fields[i].value.len + 2;
  }
  if (len == 0) return 0;
  p = hr__mem_alloc(m, 2 * len);
  if (p == NULL) return fail(err, HR_ENOMEM, "out of memory", 0);
  rt->head.ptr = p;
  rt->head.len = len;
  q = put_fields(p, o, 1);
  rt->head_bodiless.ptr = q;
  rt->head_bodiless.len = (size_t)(put_fields(q, o, 0) - q);
  return 0;
}

/* A parameter name after ':' or '*': [A-Za-z0-9_]+.  Inside braces,
 * OpenAPI's names ("{user-id}", "{file.name}") also hold '-' and '.'. */
static int is_brace_name_char(unsigned char c) {
  return is_name_char(c) || c == '-' || c == '.';
}

/* Whether segment [seg, e) is a parameter or catch-all, and where its name
 * is: ":name", "*name", "{name}", "{*name}" or Go's "{name...}".  "::"
 * starts a literal. */
static int param_segment(const char *seg, const char *e, int *catch_all,
                         const char **name, const char **name_end) {
  if (e - seg >= 2 && seg[0] == '{' && e[-1] == '}') {
    *catch_all = seg[1] == '*';
    *name = seg + 1 + *catch_all;
    *name_end = e - 1;
    /* Go 1.22's "{name...}" is "{*name}" */
    if (!*catch_all && *name_end - *name >= 3 && memcmp(*name_end - 3, "...", 3) == 0) {
      *catch_all = 1;
      *name_end -= 3;
    }
    return 1;
  }
  if (e > seg && (seg[0] == '*' || (seg[0] == ':' && !(e - seg >= 2 && seg[1] == ':')))) {
    *catch_all = seg[0] == '*';
    *name = seg + 1;
    *name_end = e;
    return 1;
  }
  return 0;
}

/* Copies literal segment [seg, e) to *w: "::" is ':', "%XX" the byte it
 * encodes, except the escapes a request path keeps opaque (%2F %3F %23
 * %25, see hr__path_decode), which stay escapes with their hex digits in
 * upper case (lower case on a case-insensitive router, like its other
 * literals) so that they match the same escapes in a request. */
static int copy_literal(const char *p, const char *seg, const char *e, int ci,
                        char **wp, hr_route_error_t *err) {
  const char *c;
  char *w = *wp;
  for (c = seg; c < e; c++) {
    unsigned char ch = (unsigned char)*c;
    if (ch == ':') {
      if (c + 1 < e && c[1] == ':') {
        *w++ = ':';
        c++;
        continue;
      }
      return fail(err, HR_EPATTERN,
                  "a parameter must be a whole segment (write \"::\" for a literal ':')",
                  (size_t)(c - p));
    }
    if (ch == '*')
      return fail(err, HR_EPATTERN, "a catch-all must be a whole segment",
                  (size_t)(c - p));
    if (ch == '%') {
      int h = e - c >= 3 ? hr__hex_value((unsigned char)c[1]) : -1;
      int l = h >= 0 ? hr__hex_value((unsigned char)c[2]) : -1;
      int v = h * 16 + l;
      if (h < 0 || l < 0 || v == 0)
        return fail(err, HR_EPATTERN,
                    "'%' in a pattern starts an escape (\"%25\" for '%'); %00 is refused",
                    (size_t)(c - p));
      if (v == '/' || v == '?' || v == '#' || v == '%') {
        /* Upper case, or lower case like every literal of a
         * case-insensitive router (its walk folds the request's bytes). */
        const char *hex = ci ? "0123456789abcdef" : "0123456789ABCDEF";
        *w++ = '%';
        *w++ = hex[v >> 4];
        *w++ = hex[v & 15];
      } else {
        *w++ = (char)(ci && v >= 'A' && v <= 'Z' ? v | 0x20 : v);
      }
      c += 2;
      continue;
    }
    if (ch < 0x21 || ch == 0x7f || ch == '?' || ch == '#')
      return fail(err, HR_EPATTERN, "invalid byte in the pattern", (size_t)(c - p));
    *w++ = (char)(ci && ch >= 'A' && ch <= 'Z' ? ch | 0x20 : ch);
  }
  *wp = w;
  return 0;
}

/*
 * Splits the pattern into tokens.  Literal bytes, '/' included, are copied
 * (unescaped, and for case-insensitive routers lower-cased) into `lit`,
 * which has room for the whole pattern (an escape never grows).
 */
static int compile_pattern(hr__mem_t *m, hr__core_t *rt, char *lit, int ci,
                           hr_route_error_t *err) {
  const char *p = rt->pattern.ptr, *end = p + rt->pattern.len, *s;
  size_t ntok = 0, nseg = 0, cap;
  hr__tok_t *toks;
  char *w = lit, *lit_start = lit;
  if (rt->pattern.len == 0 || p[0] != '/')
    return fail(err, HR_EPATTERN, "a pattern starts with '/'", 0);
  for (s = p; s < end; s++)
    if (*s == '/') nseg++;
  if (nseg > HR_MAX_SEGMENTS)
    return fail(err, HR_EPATTERN, "too many segments", 0);
  cap = 2 * nseg + 1;
  toks = hr__mem_alloc(m, cap * sizeof(*toks));
  if (toks == NULL) return fail(err, HR_ENOMEM, "out of memory", 0);
  rt->toks = toks;
  s = p;
  while (s < end) {
    const char *seg = s + 1, *e, *name, *name_end;
    size_t off = (size_t)(seg - p);
    int catch_all, rc;
    /* s points at '/' */
    e = memchr(seg, '/', (size_t)(end - seg));
    if (e == NULL) e = end;
    *w++ = '/';
    if (e == seg && e != end)
      return fail(err, HR_EPATTERN, "empty segment (\"//\") in the pattern", off);
    if ((e - seg == 1 && seg[0] == '.') ||
        (e - seg == 2 && seg[0] == '.' && seg[1] == '.'))
      return fail(err, HR_EPATTERN, "dot segment in the pattern", off);
    if (param_segment(seg, e, &catch_all, &name, &name_end)) {
      hr__tok_t *t;
      const char *n;
      int braced = seg[0] == '{';
      for (n = name; n < name_end; n++)
        if (!(braced ? is_brace_name_char((unsigned char)*n)
                     : is_name_char((unsigned char)*n))) {
          if (*n == ':' || *n == '*' || ((*n == '{' || *n == '}') && n > name))
            return fail(err, HR_EPATTERN, "two parameters in one segment",
                        (size_t)(n - p));
          return fail(err, HR_EPATTERN,
                      braced ? "a parameter name in braces is [A-Za-z0-9_.-]+"
                             : "a parameter name is [A-Za-z0-9_]+ and fills its segment",
                      (size_t)(n - p));
        }
      if (name == name_end)
        return fail(err, HR_EPATTERN, "empty parameter name", off);
      if (catch_all && e != end)
        return fail(err, HR_EPATTERN, "a catch-all must be the last segment", off);
      if (rt->nparams == HR_MAX_PARAMS)
        return fail(err, HR_EPATTERN, "too many parameters", off);
      {
        size_t k;
        hr_span_t nm = {name, (size_t)(name_end - name)};
        for (k = 0; k < rt->nparams; k++)
          if (hr_span_eq(rt->pnames[k], nm))
            return fail(err, HR_EPATTERN, "a parameter name used twice in the pattern", off);
      }
      /* flush the literal bytes before it (they end with '/') */
      toks[ntok].kind = HR__TOK_STATIC;
      toks[ntok].text.ptr = lit_start;
      toks[ntok].text.len = (size_t)(w - lit_start);
      toks[ntok].offset = (size_t)(lit_start - lit);
      ntok++;
      t = &toks[ntok++];
      t->kind = catch_all ? HR__TOK_CATCH : HR__TOK_PARAM;
      t->text.ptr = name;
      t->text.len = (size_t)(name_end - name);
      t->offset = off;
      rt->pnames[rt->nparams++] = t->text;
      lit_start = w;
    } else {
      char *seg_lit = w;
      if ((rc = copy_literal(p, seg, e, ci, &w, err)) != 0) return rc;
      /* "%2E%2E" is ".." too: a request for it is always cleaned away */
      if ((w - seg_lit == 1 && seg_lit[0] == '.') ||
          (w - seg_lit == 2 && seg_lit[0] == '.' && seg_lit[1] == '.'))
        return fail(err, HR_EPATTERN, "dot segment in the pattern", off);
    }
    s = e;
  }
  if (w > lit_start) {
    toks[ntok].kind = HR__TOK_STATIC;
    toks[ntok].text.ptr = lit_start;
    toks[ntok].text.len = (size_t)(w - lit_start);
    toks[ntok].offset = 0;
    ntok++;
  }
  rt->ntoks = ntok;
  return 0;
}

int hr__core_compile(hr__mem_t *m, int ci, const hr_group_t *group,
                     const char *host, const char *prefix, const char *methods,
                     const char *pattern, hr_handler_cb handler, void *udata,
                     const hr_route_options_t *o, hr__core_t **out,
                     hr_route_error_t *err) {
  hr__core_t *rt;
  size_t prelen = prefix ? strlen(prefix) : 0, plen = strlen(pattern);
  size_t mlen = strlen(methods), hlen = host ? strlen(host) : 0, total, i;
  char *block, *p;
  int rc;
  *out = NULL;
  if (err != NULL) memset(err, 0, sizeof(*err));
  if (plen == 0 || pattern[0] != '/')
    return fail(err, HR_EPATTERN, "a pattern starts with '/'", 0);
  if (o->body_mode != HR_BODY_BUFFER && o->body_mode != HR_BODY_STREAM)
    return fail(err, HR_EINVAL, "unknown body mode", 0);
  if (o->context_scope != HR_CONTEXT_ROUTE && o->context_scope != HR_CONTEXT_LOOP &&
      o->context_scope != HR_CONTEXT_REQUEST)
    return fail(err, HR_EINVAL, "unknown context scope", 0);
  if (o->context_scope != HR_CONTEXT_ROUTE && o->context_create == NULL)
    return fail(err, HR_EINVAL, "per-loop and per-request contexts need context_create", 0);
  if (o->nparam_types > 0 && o->param_types == NULL)
    return fail(err, HR_EINVAL, "nparam_types without param_types", 0);
  for (i = 0; i < o->nparam_types; i++)
    if ((unsigned)o->param_types[i] > HR_PARAM_UUID &&
        (unsigned)o->param_types[i] <= 0x10000)
      return fail(err, HR_EINVAL, "unknown parameter type", 0);
  /* A group prefix "/api" plus "/" is "/api/"; plus "/x" is "/api/x". */
  total = prelen + plen + 1 + mlen + 1 + hlen + 1 + (prelen + plen) + 1;
  rt = hr__mem_alloc(m, sizeof(*rt));
  if (rt == NULL) return fail(err, HR_ENOMEM, "out of memory", 0);
  memset(rt, 0, sizeof(*rt));
  atomic_init(&rt->refs, 1);
  atomic_init(&rt->retired, 0);
  rt->slot_alloc = m->a;
  rt->group = group;
  block = hr__mem_alloc(m, total);
  if (block == NULL) {
    hr__mem_free(m, rt);
    return fail(err, HR_ENOMEM, "out of memory", 0);
  }
  p = block;
  memcpy(p, prefix ? prefix : "", prelen);
  memcpy(p + prelen, pattern, plen + 1);
  rt->pattern.ptr = p;
  rt->pattern.len = prelen + plen;
  p += prelen + plen + 1;
  memcpy(p, methods, mlen + 1);
  rt->methods_text.ptr = p;
  rt->methods_text.len = mlen;
  p += mlen + 1;
  for (i = 0; i < hlen; i++) {
    unsigned char c = (unsigned char)host[i];
    p[i] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
  }
  p[hlen] = '\0';
  rt->host.ptr = p;
  rt->host.len = hlen;
  p += hlen + 1;
  rt->handler = handler;
  rt->udata = udata;
  rt->max_body_bytes = o->max_body_bytes;
  rt->body_mode = o->body_mode;
  rt->ctx_scope = o->context_scope;
  rt->ctx_create = o->context_create;
  rt->ctx_destroy = o->context_destroy;
  rc = parse_methods(m, rt, err);
  if (rc == 0) rc = compile_pattern(m, rt, p, ci, err);
  if (rc == 0 && o->nparam_types > rt->nparams)
    rc = fail(err, HR_EINVAL, "more parameter types than parameters", 0);
  if (rc == 0) rc = render_head(m, rt, o, err);
  if (rc == 0 && o->compress != NULL) {
    hr__zconf_t *z;
    const char *why;
    rc = hr__zconf_new(m, o->compress, &z, &why);
    if (rc == HR_EINVAL) rc = fail(err, HR_EINVAL, why, 0);
    rt->zconf = z;
  }
  if (rc != 0) {
    core_free(m, rt);
    return rc;
  }
  rt->lenient_ints = o->lenient_integers != 0;
  rt->no_compress = o->no_compress != 0;
  for (i = 0; i < o->nparam_types; i++) {
    rt->ptypes[i] = o->param_types[i];
    if (o->param_types[i] != HR_PARAM_STRING) rt->typed = 1;
  }
  *out = rt;
  return 0;
}

int hr__core_fallback(hr__mem_t *m, hr_span_t host, hr__core_t **out) {
  hr__core_t *rt = hr__mem_alloc(m, sizeof(*rt));
  char *block;
  *out = NULL;
  if (rt == NULL) return HR_ENOMEM;
  memset(rt, 0, sizeof(*rt));
  /* One block, as core_free expects: the empty pattern and methods, then
   * the host. */
  block = hr__mem_alloc(m, host.len + 3);
  if (block == NULL) {
    hr__mem_free(m, rt);
    return HR_ENOMEM;
  }
  memset(block, 0, host.len + 3);
  if (host.len) memcpy(block + 2, host.ptr, host.len);
  rt->pattern.ptr = block;
  rt->methods_text.ptr = block + 1;
  rt->host.ptr = block + 2;
  rt->host.len = host.len;
  rt->any_method = 1;
  atomic_init(&rt->refs, 1);
  atomic_init(&rt->retired, 0);
  rt->slot_alloc = m->a;
  *out = rt;
  return 0;
}
