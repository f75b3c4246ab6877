/* SPDX-License-Identifier: MIT */
/*
 * Entity tags (RFC 9110 §8.8.3): the ETag delegate for one hr_etag_t, the
 * If-Match / If-None-Match delegate for hr_etag_list_t, and the strong and
 * weak comparisons (§8.8.3.2).
 *
 *   entity-tag = [ weak ] opaque-tag       weak = %s"W/" (case-sensitive)
 *   opaque-tag = DQUOTE *etagc DQUOTE      etagc = %x21 / %x23-7E / obs-text
 *   If-Match   = "*" / #entity-tag
 *
 * An opaque tag has no escapes, so commas inside it never split the list.
 * A "*" mixed with tags is malformed; an empty list (no elements) is valid
 * syntax and parses as no tags.
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

static int is_etagc(unsigned char c) {
  return c == 0x21 || (c >= 0x23 && c <= 0x7E) || c >= 0x80;
}

static int parse_tag(hr__lex_t *lx, hr_etag_t *e) {
  const char *start;
  e->weak = 0;
  if (lx->end - lx->p >= 2 && lx->p[0] == 'W' && lx->p[1] == '/') {
    e->weak = 1;
    lx->p += 2;
  }
  if (!hr__lex_eat(lx, '"')) return HR_EPARSE;
  start = lx->p;
  while (lx->p < lx->end && is_etagc((unsigned char)*lx->p)) lx->p++;
  e->tag.ptr = start;
  e->tag.len = (size_t)(lx->p - start);
  return hr__lex_eat(lx, '"') ? 0 : HR_EPARSE;
}

static int format_tag(hr__tw_t *o, const hr_etag_t *e) {
  size_t i;
  for (i = 0; i < e->tag.len; i++)
    if (!is_etagc((unsigned char)e->tag.ptr[i])) return HR_EINVAL;
  if (e->weak) hr__tw_bytes(o, "W/", 2);
  hr__tw_char(o, '"');
  hr__tw_span(o, e->tag);
  hr__tw_char(o, '"');
  return 0;
}

static int parse_etag(hr_span_t text, void *value, const hr_mem_t *mem, void *udata) {
  hr__lex_t lx;
  (void)udata;
  (void)mem;
  hr__lex_init(&lx, text);
  if (parse_tag(&lx, value) != 0 || lx.p != lx.end) return HR_EPARSE;
  return 0;
}

static int format_etag(const void *value, char *buf, size_t cap, size_t *len,
                       void *udata) {
  hr__tw_t o;
  (void)udata;
  hr__tw_init(&o, buf, cap);
  if (format_tag(&o, value) != 0) return HR_EINVAL;
  return hr__tw_finish(&o, len);
}

/* Room for the tags, counted first (a comma inside a tag is the tag's). */
static int parse_etag_list(hr_span_t text, void *value, const hr_mem_t *mem,
                           void *udata) {
  hr_etag_list_t *l = value;
  hr__lex_t lx;
  size_t room;
  void *tags;
  (void)udata;
  l->any = 0;
  l->n = 0;
  l->tags = NULL;
  if (text.len == 1 && text.ptr[0] == '*') {
    l->any = 1;
    return 0;
  }
  if (text.len == 0) return 0;
  hr__count_list(text, ',', HR__COUNT_FIRST | HR__COUNT_ETAGS, &room, NULL);
  if (hr__mem_items(mem, room, sizeof(hr_etag_t), &tags, 0, 0, NULL) != 0)
    return HR_ENOMEM;
  l->tags = tags;
  hr__lex_init(&lx, text);
  while (hr__lex_list_next(&lx)) {
    if (l->n == room) return HR__ROOM_SHORT();
    if (parse_tag(&lx, &l->tags[l->n++]) != 0) return HR_EPARSE;
    if (hr__lex_list_after(&lx) != 0) return HR_EPARSE;
  }
  return 0;
}

static int format_etag_list(const void *value, char *buf, size_t cap,
                            size_t *len, void *udata) {
  const hr_etag_list_t *l = value;
  hr__tw_t o;
  size_t i;
  (void)udata;
  if ((l->any && l->n != 0) || (l->n > 0 && l->tags == NULL)) return HR_EINVAL;
  hr__tw_init(&o, buf, cap);
  if (l->any) hr__tw_char(&o, '*');
  for (i = 0; i < l->n; i++) {
    if (i > 0) hr__tw_bytes(&o, ", ", 2);
    if (format_tag(&o, &l->tags[i]) != 0) return HR_EINVAL;
  }
  return hr__tw_finish(&o, len);
}

int hr__etag_match(const hr_etag_t *a, const hr_etag_t *b, int weak) {
  if (!weak && (a->weak || b->weak)) return 0;
  return hr_span_eq(a->tag, b->tag);
}

const hr_delegate_t hr__delegate_etag = {format_etag, parse_etag, NULL};
const hr_delegate_t hr__delegate_etag_list = {format_etag_list, parse_etag_list,
                                              NULL};
