/* SPDX-License-Identifier: MIT */
/*
 * The Forwarded delegate (RFC 7239 §4) for hr_forwarded_t.
 *
 *   Forwarded         = 1#forwarded-element
 *   forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
 *   forwarded-pair    = token "=" value
 *   value             = token / quoted-string
 *
 * for, by, host and proto are kept (each at most once per element);
 * other parameters are extensions and skipped.  Writing quotes a value
 * that is not a token (an IPv6 node, a node with a port); a value read
 * from a quoted-string keeps its escapes and is written back as read.
 */
#include <string.h>

#include "delegate/builtin.h"
#include "delegate/lex.h"

/* The element's slot for parameter `name`, or NULL for an extension. */
static hr_span_t *slot_of(hr_forwarded_elem_t *e, hr_span_t name) {
  if (hr_span_eq_nocase(name, HR_SPAN_LIT("for"))) return &e->node_for;
  if (hr_span_eq_nocase(name, HR_SPAN_LIT("by"))) return &e->node_by;
  if (hr_span_eq_nocase(name, HR_SPAN_LIT("host"))) return &e->host;
  if (hr_span_eq_nocase(name, HR_SPAN_LIT("proto"))) return &e->proto;
  return NULL;
}

static int put(hr_forwarded_elem_t *e, hr_span_t name, hr_span_t value, int quoted) {
  hr_span_t *slot = slot_of(e, name);
  if (slot == NULL) return 0;
  if (slot->ptr != NULL) return HR_EPARSE; /* twice in one element */
  /* A quoted empty value is still present: keep a non-NULL pointer. */
  *slot = value.len > 0 ? value : (hr_span_t){"", 0};
  if (quoted) e->quoted |= 1u << (slot - &e->node_for);
  return 0;
}

/* forwarded-element: an optional first pair, then ";"-led ones. */
static int parse_elem(hr__lex_t *lx, hr_forwarded_elem_t *e) {
  hr_mparam_t p;
  int r;
  memset(e, 0, sizeof(*e));
  if (hr__lex_peek(lx) != ';') {
    hr_span_t name, value;
    int quoted;
    if (hr__lex_token(lx, &name) != 0 || !hr__lex_eat(lx, '=')) return HR_EPARSE;
    quoted = hr__lex_peek(lx) == '"';
    if (quoted ? hr__lex_quoted(lx, &value) != 0 : hr__lex_token(lx, &value) != 0)
      return HR_EPARSE;
    if (put(e, name, value, quoted) != 0) return HR_EPARSE;
  }
  while ((r = hr__lex_param(lx, &p, HR__PARAM_EMPTY)) == 1)
    if (put(e, p.name, p.value, p.quoted) != 0) return HR_EPARSE;
  return r;
}

static int parse_forwarded(hr_span_t text, void *value, const hr_mem_t *mem, void *udata) {
  hr_forwarded_t *f = value;
  hr__lex_t lx;
  size_t room, unused;
  void *items;
  (void)udata;
  f->n = 0;
  f->elems = NULL;
  if (text.len == 0) return HR_EPARSE; /* 1#: at least one element */
  hr__count_list(text, ',', HR__COUNT_FIRST | HR__COUNT_QUOTES, &room, &unused);
  if (hr__mem_items(mem, room, sizeof(hr_forwarded_elem_t), &items, 0, 0, NULL) != 0)
    return HR_ENOMEM;
  f->elems = items;
  hr__lex_init(&lx, text);
  while (hr__lex_list_next(&lx)) {
    if (f->n == room) return HR__ROOM_SHORT();
    if (parse_elem(&lx, &f->elems[f->n++]) != 0 || hr__lex_list_after(&lx) != 0)
      return HR_EPARSE;
  }
  return f->n > 0 ? 0 : HR_EPARSE;
}

/* name=value: a token as it is, else a quoted-string (escaped contents
 * when the value came quoted: bit `bit` of the element's quoted). */
static int out_pair(hr__tw_t *o, int *first, const char *name, hr_span_t v, unsigned quoted,
                    unsigned bit) {
  hr_mparam_t p;
  if (v.ptr == NULL) return 0;
  if (!*first) hr__tw_char(o, ';');
  *first = 0;
  p.name = (hr_span_t){name, strlen(name)};
  p.value = v;
  p.quoted = (quoted >> bit) & 1u;
  return hr__tw_param(o, &p, 0);
}

static int format_forwarded(const void *value, char *buf, size_t cap, size_t *len,
                            void *udata) {
  const hr_forwarded_t *f = value;
  hr__tw_t o;
  size_t i;
  (void)udata;
  if (f->n > 0 && f->elems == NULL) return HR_EINVAL;
  hr__tw_init(&o, buf, cap);
  for (i = 0; i < f->n; i++) {
    const hr_forwarded_elem_t *e = &f->elems[i];
    int first = 1;
    if (i > 0) hr__tw_bytes(&o, ", ", 2);
    if (out_pair(&o, &first, "for", e->node_for, e->quoted, 0) != 0 ||
        out_pair(&o, &first, "by", e->node_by, e->quoted, 1) != 0 ||
        out_pair(&o, &first, "host", e->host, e->quoted, 2) != 0 ||
        out_pair(&o, &first, "proto", e->proto, e->quoted, 3) != 0 || first)
      return HR_EINVAL; /* a value no quoted-string holds; an empty element */
  }
  return hr__tw_finish(&o, len);
}

const hr_delegate_t hr__delegate_forwarded = {format_forwarded, parse_forwarded, NULL};
