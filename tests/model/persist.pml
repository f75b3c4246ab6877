/*
 * Route tables that share subtrees (src/router/wtree.c and freeze.c, publish.c install,
 * tree.c hr__table_free); run by tests/model/run.sh.
 *
 * A single change freezes only its path into a new block and points the
 * new nodes at the old table's other nodes: successive tables share
 * blocks.  A block is freed when its last node has left the tree (its
 * live count reaches 0), and then not at once: it joins the garbage of
 * the table being replaced, which is freed with that table after a grace
 * period (reclaim_list, hr__table_free).  The rule this model checks: a
 * block lives until the grace period after the publication of the first
 * table that no longer reaches any of its nodes, whoever made it.
 *
 * The scenario.  Table 0 is a whole build, one block B0: its root R0 and
 * a subtree S.  Table 1 changes a route beside S: a new block B1 holds its
 * root R1, which points at S in B0 (shared); R0 dies, B0 keeps one live
 * node (S) and is not garbage.  Table 2 changes a route under S: block B2
 * holds the new root R2 and the new S'; R1 and S die, so B1 and B0 both
 * go to table 1's garbage.  Table 0 is reclaimed after table 1's grace
 * period with nothing, table 1 after table 2's with B1 and B0.  Readers
 * load the table pointer with acquire in a read-side section, read the
 * root in the table's block and then the subtree, in B0 for tables 0 and
 * 1, in B2 for table 2.  Each table's own header and the path nodes made
 * with it are one location, written before the pointer.
 *
 * Accesses before a free are checked as in publish.pml: each reader
 * writes a ghost location (ACC) after the accesses of one lookup, and the
 * thread that frees a block must have it in its view.
 *
 * Properties:
 *   P1 no reader reads a node that was not complete when its table was
 *      published (a new path filled after the store);
 *   P2 no reader touches a freed block, and every access to one happens
 *      before its free (hb_free);
 *   P3 at the end B0 and B1 are freed (nothing leaks) and B2 is not.
 *
 * Mutations, each of which must violate a property:
 *   FIRST_DEATH    a block is garbage when its first node dies, not its
 *                  last (or, the same here, it goes with the table that
 *                  made it, as when each table was one block of its own):
 *                  B0 goes to table 0's garbage with R0, while table 1
 *                  still reaches S in it (P2)
 *   RELAXED_LOAD   the reader's load of the pointer relaxed (P1)
 *   NO_GRACE       garbage freed without waiting for a grace period (P2)
 *   RELAXED_STORE  the table pointer stored relaxed (P1)
 */

#define NL 6   /* locations, below */
#define NT 3   /* threads: the writer, two readers */
#define H  4
#include "ra.pml"
#include "rcu.pml"

#define TP      0         /* the router's table pointer: 0, 1, 2 */
#define BLK(b)  (1 + (b)) /* block b: table b's header and the nodes made with it */
#define ACC(t)  (3 + (t)) /* reader t's accesses (t 1, 2) */

#define GARBAGE  0
#define COMPLETE 1

#ifdef RELAXED_STORE
#define REL 0
#else
#define REL 1
#endif
#ifdef RELAXED_LOAD
#define ACQ 0
#else
#define ACQ 1
#endif

bool bfreed[3];      /* ghost: block b freed */
byte last[NT * 3];   /* ghost: last[t*3+b], reader t's ACC write after its
                        last access to block b (0: none) */

inline accessed(t, b1, b2) {
  ra_store(t, ACC(t), 1, 0);
  d_step {
    last[t * 3 + b1] = hlen[ACC(t)] - 1;
    last[t * 3 + b2] = hlen[ACC(t)] - 1
  }
}

/* The writer frees block b: every reader's last access to it must happen
 * before. */
inline free_block(b) {
  d_step {
    hb_free = view[0 * NL + ACC(1)] >= last[1 * 3 + b] &&
              view[0 * NL + ACC(2)] >= last[2 * 3 + b]
  }
  assert(hb_free);                        /* P2 */
  assert(!bfreed[b]);
  bfreed[b] = 1
}

/* Table i's path block filled, then published. */
inline publish(i) {
  ra_store(0, BLK(i), COMPLETE, 0);
  ra_store(0, TP, i, REL)
}

/* A replaced table reclaimed after its grace period, with its garbage
 * (ga, gb: blocks, 3 for none). */
inline reclaim(ga, gb) {
#ifndef NO_GRACE
  synchronize_rcu(0);
#endif
  if
  :: ga < 3 -> free_block(ga)
  :: else -> skip
  fi;
  if
  :: gb < 3 -> free_block(gb)
  :: else -> skip
  fi
}

proctype writer() {
  byte k, j;
  bool hb_free;
  publish(1);              /* R1 in B1 -> S in B0; R0 dies */
#ifdef FIRST_DEATH
  reclaim(0, 3);           /* table 0 takes B0 */
#else
  reclaim(3, 3);           /* table 0: B0 still has S */
#endif
  publish(2);              /* R2, S' in B2; R1 and S die */
#ifdef FIRST_DEATH
  reclaim(1, 3)            /* B0 went already */
#else
  reclaim(1, 0)            /* table 1: B1 and B0, their last nodes dead */
#endif
}

proctype reader(byte t; byte lookups) {
  byte k, j, p, s, v, n;
  for (n : 1 .. lookups) {
    rcu_read_lock(t);
    ra_load(t, TP, ACQ, p);
    assert(!bfreed[p]);                   /* P2: the root */
    ra_load(t, BLK(p), 0, v);
    assert(v == COMPLETE);                /* P1 */
    s = (p == 2 -> 2 : 0);                /* where the subtree is */
    assert(!bfreed[s]);                   /* P2: the shared subtree */
    ra_load(t, BLK(s), 0, v);
    assert(v == COMPLETE);                /* P1 */
    accessed(t, p, s);
    rcu_read_unlock(t)
  }
}

init {
  byte k, j;
  d_step {
    ra_init(TP, 0);
    ra_init(BLK(0), COMPLETE);
    ra_init(BLK(1), GARBAGE);
    ra_init(BLK(2), GARBAGE);
    ra_init(ACC(1), 0);
    ra_init(ACC(2), 0)
  }
  atomic {
    run writer();
    run reader(1, 1);
    run reader(2, 2)
  }
  (_nr_pr == 1);
  /* P3 */
  assert(bfreed[0] && bfreed[1] && !bfreed[2])
}
