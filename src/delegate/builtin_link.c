/* SPDX-License-Identifier: MIT */
/*
 * The Link delegate (RFC 8288 §3) for hr_links_t.
 *
 *   Link       = #link-value
 *   link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param )
 *   link-param = token BWS [ "=" BWS ( token / quoted-string ) ]
 *
 * Commas inside "<...>" and inside quoted-strings belong to them, never to
 * the list.  Parameters are kept as written, in order, duplicates included
 * (§3.3 says a second rel is ignored: look parameters up first-match);
 * extended values such as title*=UTF-8'de'... are tokens and stay encoded.
 * A parameter without "=" has an empty, unquoted value and is written back
 * bare.  The target is checked only for the bytes a URI-Reference can hold
 * at all (VCHAR other than "<" and ">"): no spaces, controls or raw
 * non-ASCII; it is not resolved or further validated.  Writing uses "; "
 * between a target and its parameters and ", " between links.
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

static int is_target_char(unsigned char c) {
  return c >= 0x21 && c <= 0x7E && c != '<' && c != '>';
}

/* Where the parameters of the links in one field go: one array, with room
 * for every parameter counted in the field. */
typedef struct pool_s {
  hr_mparam_t *next;
  size_t left;
} pool_t;

static int parse_link_value(hr__lex_t *lx, hr_link_t *l, pool_t *pool) {
  const char *start;
  int r;
  l->nparams = 0;
  l->params = NULL;
  if (!hr__lex_eat(lx, '<')) return HR_EPARSE;
  start = lx->p;
  while (lx->p < lx->end && is_target_char((unsigned char)*lx->p)) lx->p++;
  l->target.ptr = start;
  l->target.len = (size_t)(lx->p - start);
  if (!hr__lex_eat(lx, '>')) return HR_EPARSE;
  for (;;) {
    hr_mparam_t p;
    r = hr__lex_param(lx, &p, HR__PARAM_BWS | HR__PARAM_NOVALUE);
    if (r != 1) return r;
    /* The pool was counted from the same field. */
    if (pool->left == 0) return HR__ROOM_SHORT();
    if (l->params == NULL) l->params = pool->next;
    *pool->next++ = p;
    pool->left--;
    l->nparams++;
  }
}

/* Room for the links and their parameters, counted first (commas and
 * semicolons inside "<...>" or quotes are theirs), in one piece of
 * memory. */
static int parse_links(hr_span_t text, void *value, const hr_mem_t *mem, void *udata) {
  hr_links_t *links = value;
  hr__lex_t lx;
  pool_t pool;
  size_t room;
  void *items, *params;
  (void)udata;
  links->n = 0;
  links->links = NULL;
  if (text.len == 0) return 0;
  hr__count_list(text, ',', HR__COUNT_FIRST | HR__COUNT_QUOTES | HR__COUNT_ANGLE, &room,
                 &pool.left);
  if (hr__mem_items(mem, room, sizeof(hr_link_t), &items, pool.left, sizeof(hr_mparam_t),
                    &params) != 0)
    return HR_ENOMEM;
  links->links = items;
  pool.next = params;
  hr__lex_init(&lx, text);
  while (hr__lex_list_next(&lx)) {
    if (links->n == room) return HR__ROOM_SHORT();
    if (parse_link_value(&lx, &links->links[links->n++], &pool) != 0 ||
        hr__lex_list_after(&lx) != 0)
      return HR_EPARSE;
  }
  return 0;
}

static int format_links(const void *value, char *buf, size_t cap, size_t *len,
                        void *udata) {
  const hr_links_t *links = value;
  hr__tw_t o;
  size_t i, j;
  (void)udata;
  if (links->n > 0 && links->links == NULL) return HR_EINVAL;
  hr__tw_init(&o, buf, cap);
  for (i = 0; i < links->n; i++) {
    const hr_link_t *l = &links->links[i];
    if (l->nparams > 0 && l->params == NULL) return HR_EINVAL;
    for (j = 0; j < l->target.len; j++)
      if (!is_target_char((unsigned char)l->target.ptr[j])) return HR_EINVAL;
    if (i > 0) hr__tw_bytes(&o, ", ", 2);
    hr__tw_char(&o, '<');
    hr__tw_span(&o, l->target);
    hr__tw_char(&o, '>');
    for (j = 0; j < l->nparams; j++) {
      hr__tw_bytes(&o, "; ", 2);
      if (hr__tw_param(&o, &l->params[j], HR__PARAM_NOVALUE) != 0)
        return HR_EINVAL;
    }
  }
  return hr__tw_finish(&o, len);
}

const hr_delegate_t hr__delegate_link = {format_links, parse_links, NULL};
