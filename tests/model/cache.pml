/* SPDX-License-Identifier: MIT */
/*
 * The delegate lookup cache (src/delegate/registry.c), model (b) of
 * issue 15; run by tests/model/run.sh.
 *
 * A registration copies the delegate into its own allocation, publishes it
 * with a release store of the type's `delegate` pointer, and bumps the
 * registry's `generation` with release (add_delegate).  A lookup loads
 * `generation` with acquire, then the type's cache word {generation,
 * found} relaxed: a word tagged with that generation is the answer, a hit
 * or a cached miss; otherwise it walks the types (acquire loads of
 * `delegate`) and stores the word tagged with the generation it loaded
 * before walking (hr__registry_lookup).  A found delegate is then loaded
 * with acquire and used.
 *
 * Abstractions: one type, and "the delegate the walk reaches" is one
 * pointer (a delegate on a parent or an interface is found by the same
 * acquire loads, one per type on the path); one registration; the word is
 * one location holding tag and answer together, as the 64-bit word does.
 * The lookups a registration must take effect for are those that happen
 * after it returned: the writer then sets a flag (release), and a lookup
 * that has read it (acquire) is after the registration, as a test thread
 * that registers and then signals another one would be.  Bounds: two
 * readers, two lookups each.
 *
 * Properties (assertions):
 *   P1 a lookup after the registration returned finds the delegate (the
 *      cache never answers the old miss once the new answer is due);
 *   P2 no reader reverts: once a lookup of a thread found the delegate,
 *      no later lookup of that thread answers a miss (DESIGN.md: "a
 *      reader must never revert to the old answer afterwards");
 *   P3 a found delegate is read complete (its copy is published by the
 *      release store of the pointer).
 *
 * Mutations (spin -D...), each of which must violate a property:
 *   NO_GENERATION  a cached miss is trusted without its generation: the
 *                  RESTEasy bug (P1)
 *   GEN_FIRST      the next generation is taken before the delegate is
 *                  published, in one step (P1)
 *   SINGLE_BUMP    the next generation is taken after publication, in one
 *                  step: the code before this model (P2: a reader walks
 *                  and finds the new delegate before the bump, then hits a
 *                  miss another reader cached under the old generation)
 *   ODD_CACHED     words are cached and trusted during a registration too
 *                  (P2: a walk under the odd generation misses, another
 *                  reader that has found the delegate then hits that miss)
 *   RELAXED_WORD   the cache word is stored and loaded relaxed: the code
 *                  before this model (P3: a hit on a word another reader
 *                  stored does not make the delegate it names visible, so
 *                  the pointer can still read NULL)
 *   RELAXED_GEN    the generation is loaded relaxed, not acquire (P1)
 *   RELAXED_PTR    the delegate pointer is stored relaxed, not release (P3)
 */

#define NL 5   /* generation, cache word, delegate pointer, delegate copy, done */
#define NT 3   /* the registering thread, two readers */
#define H  6
#include "ra.pml"

#define GEN   0
#define WORD  1
#define PTR   2
#define COPY  3
#define DONE  4

#define GARBAGE  0
#define COMPLETE 1

/* An even generation: no registration is under way.  An odd one: the
 * answer a walk gives may change before the registration ends, so it is
 * neither cached nor taken from the cache. */
#ifdef ODD_CACHED
#define IN_FORCE(g) 1
#else
#define IN_FORCE(g) ((g) % 2 == 0)
#endif

/* The cache word: 0 empty, else tag * 4 + 2 + found. */
#define WORD_OF(g, f) ((g) * 4 + 2 + (f))
#define WORD_TAG(w)   ((w) / 4)
#define WORD_FOUND(w) ((w) % 2)

#ifdef RELAXED_GEN
#define GEN_ACQ 0
#else
#define GEN_ACQ 1
#endif
#ifdef RELAXED_PTR
#define PTR_REL 0
#else
#define PTR_REL 1
#endif
#ifdef RELAXED_WORD
#define WORD_RA 0
#else
#define WORD_RA 1
#endif

proctype registration() {
  byte k, j, old;
  ra_store(0, COPY, COMPLETE, 0);         /* *copy = *d */
#if defined(GEN_FIRST)
  ra_rmw_add(0, GEN, 2, 1, 0, old);       /* the next generation, then publish */
  ra_store(0, PTR, 1, PTR_REL);
#elif defined(SINGLE_BUMP)
  ra_store(0, PTR, 1, PTR_REL);           /* publish, then the next generation */
  ra_rmw_add(0, GEN, 2, 1, 0, old);
#else
  /* Odd: a registration is under way; what a walk finds from now on may
   * be newer than any word tagged before. */
  ra_rmw_add(0, GEN, 1, 1, 0, old);
  ra_store(0, PTR, 1, PTR_REL);
  ra_rmw_add(0, GEN, 1, 1, 0, old);       /* even again: in force */
#endif
  ra_store(0, DONE, 1, 1)                 /* the registration returned */
}

proctype reader(byte t) {
  byte k, j, n, g, w, p, v, done, found;
  bool seen = 0;
  for (n : 1 .. 2) {
    ra_load(t, DONE, 1, done);
    ra_load(t, GEN, GEN_ACQ, g);
    ra_load(t, WORD, WORD_RA, w);
    if
#ifdef NO_GENERATION
    :: w != 0 -> found = WORD_FOUND(w)
#else
    :: w != 0 && WORD_TAG(w) == g && IN_FORCE(g) -> found = WORD_FOUND(w)
#endif
    :: else ->
      ra_load(t, PTR, 1, p);              /* the walk */
      found = (p != 0);
      if
      :: IN_FORCE(g) -> ra_store(t, WORD, WORD_OF(g, found), WORD_RA)
      :: else -> skip                     /* a registration is under way */
      fi
    fi;
    if
    :: found ->
      ra_load(t, PTR, 1, p);
      assert(p != 0);
      ra_load(t, COPY, 0, v);
      assert(v == COMPLETE)               /* P3 */
    :: else -> skip
    fi;
    assert(!done || found);               /* P1 */
    assert(!seen || found);               /* P2 */
    seen = seen || found
  }
}

init {
  byte k, j;
  d_step {
    ra_init(GEN, 0);
    ra_init(WORD, 0);
    ra_init(PTR, 0);
    ra_init(COPY, GARBAGE);
    ra_init(DONE, 0)
  }
  atomic {
    run registration();
    run reader(1);
    run reader(2)
  }
}
