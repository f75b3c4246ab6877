/* SPDX-License-Identifier: MIT */
/*
 * Media types (Content-Type, RFC 9110 §8.3.1), media ranges (Accept, RFC
 * 9110 §12.5.1) and content negotiation over them (hr_media_negotiate).
 *
 * Grammar:  media-type  = type "/" subtype parameters
 *           parameters  = *( OWS ";" OWS [ parameter ] )
 *           parameter   = token "=" ( token / quoted-string )
 *           Accept      = #( media-range [ weight ] )
 *           weight      = OWS ";" OWS "q=" qvalue
 *           qvalue      = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3"0" ] )
 * Choices where the RFCs leave room:
 *  - The first "q" parameter of a range is its weight, as RFC 2616 and RFC
 *    7231 put it; parameters after it were Accept extensions there, and are
 *    checked for parameter syntax (name=value) and then ignored (RFC 9110
 *    dropped them).  A weight written as a quoted-string is malformed.
 *  - A range "*" "/" subtype other than "*" is malformed.
 *  - Two spellings that Java's HttpURLConnection sends by default
 *    ("text/html, image/gif, image/jpeg, *; q=.2, *" "/" "*; q=.2") are read
 *    as their evident meaning rather than refused: a range "*" alone is
 *    "*" "/" "*", and a qvalue ".2" is "0.2".  Other qvalues outside the
 *    grammar (q=1.5, q=0.0001) stay malformed.
 *  - Negotiation: a range matches an offer when type and subtype match (or
 *    are "*"; ASCII case-insensitive) and every parameter of the range is on
 *    the offer with an equal value.  Parameter names and values compare
 *    case-insensitively (charset, the parameter that matters in practice,
 *    is case-insensitive), and a quoted value equals the same value as a
 *    token (RFC 9110 §5.6.6).  Specificity: a range naming type and subtype
 *    beats one naming the type only, which beats the match-all range; at
 *    the same level, more parameters beat fewer; between equally specific
 *    ranges, the earlier one in the field wins.
 */
#include "delegate/builtin.h"
#include "delegate/lex.h"

static const hr_span_t star = HR_SPAN_INIT("*");

/* ---- media type --------------------------------------------------------- */

/* Where the parameters of the media types in one field go: one array for
 * the whole field, with room for every parameter counted in it. */
typedef struct pool_s {
  hr_mparam_t *next;
  size_t left;
} pool_t;

/* type "/" subtype parameters.  With q non-NULL (a media range), the first
 * "q" parameter is the weight, stored in *q in thousandths, and the
 * parameters after it are skipped.  The parameters are consecutive items
 * of `pool`. */
static int parse_media(hr__lex_t *lx, hr_media_type_t *mt, int *q, pool_t *pool) {
  hr_mparam_t p;
  int r, have_q = 0;
  mt->nparams = 0;
  mt->params = pool->next;
  if (hr__lex_token(lx, &mt->type) != 0) return HR_EPARSE;
  if (q != NULL && hr_span_eq(mt->type, star) && hr__lex_peek(lx) != '/') {
    mt->subtype = star; /* "*" alone: Java's default Accept */
  } else if (!hr__lex_eat(lx, '/') || hr__lex_token(lx, &mt->subtype) != 0) {
    return HR_EPARSE;
  }
  while ((r = hr__lex_param(lx, &p, HR__PARAM_EMPTY)) == 1) {
    if (have_q) continue; /* an old accept-ext: ignored */
    if (q != NULL && hr_span_eq_nocase(p.name, HR_SPAN_LIT("q"))) {
      /* qvalue: "0" [ "." 0*3DIGIT ] / "1" [ "." 0*3"0" ] */
      size_t i, dot = 1;
      int v = 0, scale = 100;
      if (p.quoted || p.value.len == 0 || p.value.len > 5) return HR_EPARSE;
      if (p.value.ptr[0] == '.') {
        dot = 0; /* ".2": Java's spelling of 0.2 */
        if (p.value.len == 1) return HR_EPARSE;
      } else if (p.value.ptr[0] == '0' || p.value.ptr[0] == '1') {
        v = (p.value.ptr[0] - '0') * 1000;
      } else {
        return HR_EPARSE;
      }
      if (p.value.len > dot && p.value.ptr[dot] != '.') return HR_EPARSE;
      if (dot == 0 && p.value.len > 4) return HR_EPARSE; /* .dddd */
      for (i = dot + 1; i < p.value.len; i++, scale /= 10) {
        char c = p.value.ptr[i];
        if (c < '0' || c > '9') return HR_EPARSE;
        v += (c - '0') * scale;
      }
      if (v > 1000) return HR_EPARSE;
      *q = v;
      have_q = 1;
      continue;
    }
    /* The pool was counted from the same field, so it cannot run out; the
     * check keeps that an invariant, not a hope. */
    if (pool->left == 0) return HR__ROOM_SHORT();
    *pool->next++ = p;
    pool->left--;
    mt->nparams++;
  }
  if (mt->nparams == 0) mt->params = NULL;
  return r;
}

static int format_params(hr__tw_t *o, const hr_media_type_t *mt, int range) {
  size_t i;
  if (mt->nparams > 0 && mt->params == NULL) return HR_EINVAL;
  for (i = 0; i < mt->nparams; i++) {
    /* In a range, a "q" parameter would be read back as the weight. */
    if (range && hr_span_eq_nocase(mt->params[i].name, HR_SPAN_LIT("q")))
      return HR_EINVAL;
    hr__tw_char(o, ';');
    if (hr__tw_param(o, &mt->params[i], 0) != 0) return HR_EINVAL;
  }
  return 0;
}

static int format_media(hr__tw_t *o, const hr_media_type_t *mt, int range) {
  if (range && hr_span_eq(mt->type, star) && !hr_span_eq(mt->subtype, star))
    return HR_EINVAL;
  if (hr__tw_token(o, mt->type) != 0) return HR_EINVAL;
  hr__tw_char(o, '/');
  if (hr__tw_token(o, mt->subtype) != 0) return HR_EINVAL;
  return format_params(o, mt, range);
}

static int parse_media_type(hr_span_t text, void *value, const hr_mem_t *mem,
                            void *udata) {
  hr_media_type_t *mt = value;
  hr__lex_t lx;
  pool_t pool;
  void *params;
  (void)udata;
  mt->nparams = 0;
  mt->params = NULL;
  hr__count_list(text, ';', HR__COUNT_QUOTES, &pool.left, NULL);
  if (hr__mem_items(mem, pool.left, sizeof(hr_mparam_t), &params, 0, 0, NULL) != 0)
    return HR_ENOMEM;
  pool.next = params;
  hr__lex_init(&lx, text);
  if (parse_media(&lx, mt, NULL, &pool) != 0 || lx.p != lx.end) return HR_EPARSE;
  return 0;
}

static int format_media_type(const void *value, char *buf, size_t cap,
                             size_t *len, void *udata) {
  hr__tw_t o;
  (void)udata;
  hr__tw_init(&o, buf, cap);
  if (format_media(&o, value, 0) != 0) return HR_EINVAL;
  return hr__tw_finish(&o, len);
}

/* ---- media ranges ------------------------------------------------------- */

/* Accept: room for its ranges and their parameters (q included), counted
 * first, in one piece of memory. */
static int parse_media_ranges(hr_span_t text, void *value, const hr_mem_t *mem,
                              void *udata) {
  hr_media_ranges_t *mr = value;
  hr__lex_t lx;
  pool_t pool;
  size_t room;
  void *ranges, *params;
  (void)udata;
  mr->n = 0;
  mr->ranges = NULL;
  if (text.len == 0) return 0;
  hr__count_list(text, ',', HR__COUNT_FIRST | HR__COUNT_QUOTES, &room, &pool.left);
  if (hr__mem_items(mem, room, sizeof(hr_media_range_t), &ranges, pool.left,
                    sizeof(hr_mparam_t), &params) != 0)
    return HR_ENOMEM;
  mr->ranges = ranges;
  pool.next = params;
  hr__lex_init(&lx, text);
  while (hr__lex_list_next(&lx)) {
    hr_media_range_t *r;
    if (mr->n == room) return HR__ROOM_SHORT();
    r = &mr->ranges[mr->n++];
    r->q = 1000;
    if (parse_media(&lx, &r->media, &r->q, &pool) != 0) return HR_EPARSE;
    if (hr_span_eq(r->media.type, star) && !hr_span_eq(r->media.subtype, star))
      return HR_EPARSE;
    if (hr__lex_list_after(&lx) != 0) return HR_EPARSE;
  }
  return 0;
}

static int format_media_ranges(const void *value, char *buf, size_t cap,
                               size_t *len, void *udata) {
  const hr_media_ranges_t *mr = value;
  hr__tw_t o;
  size_t i;
  (void)udata;
  if (mr->n > 0 && mr->ranges == NULL) return HR_EINVAL;
  hr__tw_init(&o, buf, cap);
  for (i = 0; i < mr->n; i++) {
    int q = mr->ranges[i].q;
    if (i > 0) hr__tw_bytes(&o, ", ", 2);
    if (q < 0 || q > 1000) return HR_EINVAL;
    if (format_media(&o, &mr->ranges[i].media, 1) != 0) return HR_EINVAL;
    if (q == 1000) continue;
    /* The shortest qvalue: 0, 0.5, 0.05, 0.005, 0.25, ... */
    hr__tw_bytes(&o, ";q=0", 4);
    if (q > 0) {
      char d[4] = {'.', (char)('0' + q / 100), (char)('0' + q / 10 % 10),
                   (char)('0' + q % 10)};
      size_t n = 4;
      while (d[n - 1] == '0') n--;
      hr__tw_bytes(&o, d, n);
    }
  }
  return hr__tw_finish(&o, len);
}

/* ---- negotiation -------------------------------------------------------- */

static unsigned char lower(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* The next byte of a parameter value, quoted-pairs undone. */
static unsigned char value_byte(const hr_mparam_t *p, size_t *i) {
  unsigned char c = (unsigned char)p->value.ptr[(*i)++];
  if (p->quoted && c == '\\' && *i < p->value.len)
    c = (unsigned char)p->value.ptr[(*i)++];
  return c;
}

static int value_eq(const hr_mparam_t *a, const hr_mparam_t *b) {
  size_t i = 0, j = 0;
  while (i < a->value.len && j < b->value.len)
    if (lower(value_byte(a, &i)) != lower(value_byte(b, &j))) return 0;
  return i == a->value.len && j == b->value.len;
}

/* How specific a matching range is: compared level first, then whether no
 * parameter of the range is missing from the offer, then how many matched. */
typedef struct rank_s {
  int level;   /* -1: no match; 0 "*" alone, 1 type with "*", 2 both named */
  int full;    /* 1 when the offer has every parameter of the range */
  size_t matched;
} rank_t;

static int rank_above(const rank_t *a, const rank_t *b) {
  if (a->level != b->level) return a->level > b->level;
  if (a->full != b->full) return a->full > b->full;
  return a->matched > b->matched;
}

/* How specific `range` is for `offer`, or level -1 when it does not match
 * (RFC 9110 §12.5.1).  A parameter of the range matches the offer's of
 * that name, case-insensitively; one the offer has with another value
 * rules the range out; one the offer does not have is no conflict
 * ("Accept: application/json; charset=utf-8" accepts the offer
 * application/json), but a range the offer meets without such parameters
 * is more specific, so that with "text/html;level=1, text/html;q=0.7" a
 * plain text/html gets 0.7, as in the RFC's example. */
static rank_t specificity(const hr_media_type_t *range, const hr_media_type_t *offer) {
  rank_t no = {-1, 0, 0}, r = {0, 1, 0};
  size_t i, j;
  if (range->nparams > 0 && range->params == NULL) return no; /* not a value */
  if (hr_span_eq(range->type, star)) {
    r.level = 0;
  } else if (!hr_span_eq_nocase(range->type, offer->type)) {
    return no;
  } else if (hr_span_eq(range->subtype, star)) {
    r.level = 1;
  } else if (!hr_span_eq_nocase(range->subtype, offer->subtype)) {
    return no;
  } else {
    r.level = 2;
  }
  for (i = 0; i < range->nparams; i++) {
    const hr_mparam_t *rp = &range->params[i];
    for (j = 0; j < offer->nparams; j++)
      if (hr_span_eq_nocase(rp->name, offer->params[j].name)) break;
    if (j == offer->nparams)
      r.full = 0;
    else if (value_eq(rp, &offer->params[j]))
      r.matched++;
    else
      return no;
  }
  return r;
}

int hr_media_negotiate(const hr_media_ranges_t *ranges,
                       const hr_media_type_t *offers, size_t n) {
  size_t i, k;
  int best = -1, best_q = 0;
  if (offers == NULL || n == 0) return -1;
  if (ranges == NULL || ranges->n == 0) return 0;
  if (ranges->ranges == NULL) return -1;
  for (i = 0; i < n && i <= (size_t)INT32_MAX; i++) {
    rank_t spec = {-1, 0, 0};
    int q = 0;
    if (offers[i].nparams > 0 && offers[i].params == NULL) continue;
    for (k = 0; k < ranges->n; k++) {
      rank_t s = specificity(&ranges->ranges[k].media, &offers[i]);
      if (s.level >= 0 && rank_above(&s, &spec)) {
        spec = s;
        q = ranges->ranges[k].q;
      }
    }
    if (q > best_q) { /* strictly greater: ties keep the earlier offer */
      best = (int)i;
      best_q = q;
    }
  }
  return best;
}

const hr_delegate_t hr__delegate_media_type = {format_media_type,
                                               parse_media_type, NULL};
const hr_delegate_t hr__delegate_media_ranges = {format_media_ranges,
                                                 parse_media_ranges, NULL};
