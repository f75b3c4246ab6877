/* SPDX-License-Identifier: MIT */
/*
 * Invokers: a compiled route plus its flattened middleware, the per-loop
 * slots (counters and per-loop contexts), typed parameter conversion, and
 * the reference count that keeps an invoker alive while a table or an
 * unfinished request can reach it.
 */
#include <assert.h>
#include <string.h>

#include "router/route.h"
#include "util/text.h"

/* Whether middleware registration `reg` covers `core`. */
static int covers(const hr__mwreg_t *reg, const hr__core_t *core) {
  size_t n;
  if (reg->group != NULL) return reg->group == core->group;
  if (reg->host != NULL) {
    hr_span_t h = hr_span_cstr(reg->host);
    if (!hr_span_eq_nocase(h, core->host)) return 0;
  }
  n = strlen(reg->prefix);
  if (n == 0) return 1;
  if (core->pattern.len < n || memcmp(core->pattern.ptr, reg->prefix, n) != 0)
    return 0;
  return core->pattern.len == n || core->pattern.ptr[n] == '/';
}

int hr__invoker_new(hr__mem_t *m, hr__core_t *core, const hr__mwlist_t *mws,
                    hr_route_t **out) {
  const hr__mwreg_t *reg;
  size_t nh = 0, nb = 0, na = 0, pass, ih = 0, ib = 0, ia;
  hr_route_t *inv;
  hr__mw_t *head, *before, *after;
  for (reg = mws ? mws->head : NULL; reg != NULL; reg = reg->next)
    if (covers(reg, core)) {
      nh += reg->mw.before != NULL && reg->mw.head;
      nb += reg->mw.before != NULL && !reg->mw.head;
      na += reg->mw.after != NULL;
    }
  inv = hr__mem_alloc(m, sizeof(*inv) + (nh + nb + na) * sizeof(hr__mw_t));
  if (inv == NULL) return HR_ENOMEM;
  memset(inv, 0, sizeof(*inv));
  head = (hr__mw_t *)(inv + 1);
  before = head + nh;
  after = before + nb;
  ia = na;
  /* Router-level registrations first, then the route's group's; afters in
   * the reverse order, so the outermost before is the outermost after. */
  for (pass = 0; pass < 2; pass++)
    for (reg = mws ? mws->head : NULL; reg != NULL; reg = reg->next) {
      if ((reg->group != NULL) != (pass == 1) || !covers(reg, core)) continue;
      if (reg->mw.before != NULL && reg->mw.head) head[ih++] = reg->mw;
      if (reg->mw.before != NULL && !reg->mw.head) before[ib++] = reg->mw;
      if (reg->mw.after != NULL) after[--ia] = reg->mw;
    }
  inv->head_mw = head;
  inv->nhead_mw = nh;
  atomic_fetch_add_explicit(&core->refs, 1, memory_order_relaxed);
  inv->core = core;
  inv->handler = core->handler;
  inv->udata = core->udata;
  inv->head = core->head;
  inv->head_bodiless = core->head_bodiless;
  inv->max_body_bytes = core->max_body_bytes;
  inv->body_mode = core->body_mode;
  inv->ctx_scope = core->ctx_scope;
  inv->typed = core->typed;
  inv->before = before;
  inv->nbefore = nb;
  inv->after = after;
  inv->nafter = na;
  inv->mem = m;
  atomic_init(&inv->refs, 0);
  *out = inv;
  return 0;
}

void hr__invoker_ref(hr_route_t *inv) {
  /* Relaxed: the caller already reaches `inv` through a table it may read
   * (inside a read-side critical section) or through another reference. */
  atomic_fetch_add_explicit(&inv->refs, 1, memory_order_relaxed);
}

void hr__invoker_ref_reader(hr_route_t *inv) {
  assert(urcu_bp_read_ongoing());
  hr__invoker_ref(inv);
}

void hr__invoker_unref(hr_route_t *inv) {
  /* acq_rel: pairs with the other owners' releases, so the one that frees
   * sees everything they did. */
  if (atomic_fetch_sub_explicit(&inv->refs, 1, memory_order_acq_rel) != 1) return;
  hr__core_unref(inv->mem, (hr__core_t *)inv->core);
  hr__mem_free(inv->mem, inv);
}

void hr__core_ref(hr__core_t *core) {
  /* Relaxed: the caller reaches `core` through something it holds. */
  atomic_fetch_add_explicit(&core->refs, 1, memory_order_relaxed);
}

hr__slot_t *hr__core_slot(hr__core_t *core, unsigned loop) {
  const hr_allocator_t *a = core->slot_alloc;
  hr__slot_t *s;
  /* Only loop `loop` stores this pointer; relaxed is enough for it. */
  s = atomic_load_explicit(&core->slots[loop], memory_order_relaxed);
  if (s != NULL) return s;
  /* Straight through the allocator, not a counting hr__mem_t: loops of
   * several threads make slots. */
  s = a->malloc(a->ctx, sizeof(*s));
  if (s == NULL) return NULL;
  memset(s, 0, sizeof(*s));
  /* Pairs with the acquire loads in hr__core_stats() and the core's free:
   * the zeroed slot is visible before its pointer. */
  atomic_store_explicit(&core->slots[loop], s, memory_order_release);
  return s;
}

static void bump(_Atomic uint64_t *c) {
  /* Single writer (the slot's loop): a load and a store, no RMW. */
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

void hr__slot_count_response(hr__slot_t *s, int status, uint64_t us) {
  size_t b = 0;
  int cls = status >= 100 && status < 600 ? status / 100 : 0;
  bump(&s->responses[cls]);
  if (status == 0) return;
  while (b + 1 < HR_LATENCY_BUCKETS && us >= ((uint64_t)1 << b)) b++;
  bump(&s->latency_us[b]);
  atomic_store_explicit(&s->latency_sum_us,
                        atomic_load_explicit(&s->latency_sum_us, memory_order_relaxed) + us,
                        memory_order_relaxed);
}

void hr__core_stats(const hr__core_t *core, hr_route_stats_t *out) {
  size_t i, j;
  memset(out, 0, sizeof(*out));
  for (i = 0; i < HR__MAX_LOOPS; i++) {
    const hr__slot_t *s = atomic_load_explicit(&core->slots[i], memory_order_acquire);
    if (s == NULL) continue;
    out->requests += atomic_load_explicit(&s->requests, memory_order_relaxed);
    for (j = 0; j < 6; j++)
      out->responses[j] += atomic_load_explicit(&s->responses[j], memory_order_relaxed);
    for (j = 0; j < HR_LATENCY_BUCKETS; j++)
      out->latency_us[j] += atomic_load_explicit(&s->latency_us[j], memory_order_relaxed);
    out->latency_sum_us += atomic_load_explicit(&s->latency_sum_us, memory_order_relaxed);
  }
}

/* ---- typed parameters ---------------------------------------------------- */

static int parse_u64(hr_span_t v, uint64_t *out) {
  uint64_t n = 0;
  size_t i;
  if (v.len == 0) return -1;
  for (i = 0; i < v.len; i++) {
    unsigned d = (unsigned char)v.ptr[i] - '0';
    if (d > 9) return -1;
    if (n > (UINT64_MAX - d) / 10) return -1;
    n = n * 10 + d;
  }
  *out = n;
  return 0;
}

/* Whether digits v are the one canonical spelling of their number: no
 * leading zero but in "0" itself (so that /items/7 and /items/007 are not
 * two names of one resource). */
static int canonical_digits(hr_span_t v) {
  return v.len == 1 || (v.len > 1 && v.ptr[0] != '0');
}

static int parse_i64(hr_span_t v, int64_t *out, int lenient) {
  uint64_t n;
  int neg = 0;
  if (v.len && (v.ptr[0] == '-' || v.ptr[0] == '+')) {
    if (v.ptr[0] == '+' && !lenient) return -1;
    neg = v.ptr[0] == '-';
    v.ptr++;
    v.len--;
  }
  if (parse_u64(v, &n) != 0) return -1;
  if (!lenient && (!canonical_digits(v) || (neg && n == 0))) return -1; /* "-0" */
  if (neg) {
    if (n > (uint64_t)INT64_MAX + 1) return -1;
    *out = n == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)n;
  } else {
    if (n > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)n;
  }
  return 0;
}

static int parse_uuid(hr_span_t v, uint8_t *out) {
  size_t i, k = 0;
  if (v.len != 36) return -1;
  for (i = 0; i < 36;) {
    int h, l;
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (v.ptr[i] != '-') return -1;
      i++;
      continue;
    }
    h = hr__hex_value((unsigned char)v.ptr[i]);
    l = hr__hex_value((unsigned char)v.ptr[i + 1]);
    if (h < 0 || l < 0) return -1;
    out[k++] = (uint8_t)(h * 16 + l);
    i += 2;
  }
  return 0;
}

int hr__invoker_convert(const hr_route_t *inv, const hr_param_t *params,
                        size_t n, hr_value_t *values) {
  size_t i;
  const hr__core_t *c = inv->core;
  for (i = 0; i < n && i < c->nparams; i++) {
    hr_span_t v = params[i].value;
    switch ((int)c->ptypes[i]) {
      case HR_PARAM_STRING:
        break;
      case HR_PARAM_INT64:
        if (parse_i64(v, &values[i].i64, c->lenient_ints) != 0) return -1;
        break;
      case HR_PARAM_UINT64:
        if (parse_u64(v, &values[i].u64) != 0 || (!c->lenient_ints && !canonical_digits(v)))
          return -1;
        break;
      case HR_PARAM_BOOL:
        if (hr_span_eq(v, HR_SPAN_LIT("true")))
          values[i].boolean = 1;
        else if (hr_span_eq(v, HR_SPAN_LIT("false")))
          values[i].boolean = 0;
        else
          return -1;
        break;
      case HR_PARAM_UUID:
        if (parse_uuid(v, values[i].uuid) != 0) return -1;
        break;
      default:
        break; /* HR_PARAM_OF_TYPE: parsed by the server (invoke.c) */
    }
  }
  return 0;
}
