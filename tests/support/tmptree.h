/* SPDX-License-Identifier: MIT */
/*
 * A temporary directory tree for the static file tests: made under /tmp
 * with a "root" directory inside (what the tests serve; the top holds
 * what must stay outside it), files written into the root, and the whole
 * tree removed at the end.
 */
#ifndef HR_TEST_TMPTREE_H
#define HR_TEST_TMPTREE_H

#include <stddef.h>

/* Makes /tmp/<tag>-XXXXXX into top (room `tcap`) and its "root" directory
 * into root (room `rcap`); fails the test when it cannot. */
void tt_make(const char *tag, char *top, size_t tcap, char *root, size_t rcap);
/* Writes n bytes as the file `rel` below root (made or truncated). */
void tt_put(const char *root, const char *rel, const void *data, size_t n);
/* Removes the tree; 0 on success (a cmocka group teardown's answer). */
int tt_remove(const char *top);

#endif /* HR_TEST_TMPTREE_H */
