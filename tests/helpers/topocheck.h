/* Topology checks shared by the topo tests: structural invariants and
 * equality through the public accessors. */
#ifndef GS_TEST_TOPOCHECK_H
#define GS_TEST_TOPOCHECK_H

#include <gpusched/gpusched.h>

/* Asserts every invariant of the numeric layout: contiguous ranges,
 * parents and children agreeing, GPU prefix sums, name round trips. */
void topo_assert_valid(const gpusched_topo *t);
/* Asserts that two topologies answer every accessor identically. */
void topo_assert_equal(const gpusched_topo *a, const gpusched_topo *b);
/* Asserts that export then parse, and image write then read, give an
 * identical topology, and that the image reads back to the same bytes. */
void topo_assert_roundtrips(const gpusched_topo *t);
/* The public export in a malloc'ed string (free() it). */
char *topo_export_string(const gpusched_topo *t, size_t *len);

#endif
