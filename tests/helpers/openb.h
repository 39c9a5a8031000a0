/* The Alibaba OpenB GPU node list (tests/data/openb, cite Weng et al.,
 * "Beware of Fragmentation", USENIX ATC'23) as a topology, for tests and
 * trace replays that need the same grouping:
 *
 * - one level, "rack": nodes in file order, 16 per rack (rack0 holds the
 *   first 16 nodes, rack1 the next 16, ...; the last rack holds the rest);
 * - node name: the `sn` column; GPUs: the `gpu` column; class: the `model`
 *   column (P100, T4, V100M16, ...); no labels;
 * - nodes with 0 GPUs are skipped (the published list has none) and do not
 *   count toward a rack's 16.
 *
 * Node index i is then the i-th kept row, rack i / 16. */
#ifndef GS_TEST_OPENB_H
#define GS_TEST_OPENB_H

#include <stddef.h>

#include <gpusched/gpusched.h>

#define OPENB_RACK_NODES 16

/* Builds the topology from the CSV. Returns 0, GPUSCHED_EIO if the file
 * cannot be read, GPUSCHED_EPARSE for a malformed row, or the builder's
 * error; a message goes to stderr. */
int openb_load_topology(const char *csv_path, gpusched_topo **out);

/* $GPUSCHED_DATA_DIR/openb/openb_node_list_gpu_node.csv into `buf`;
 * GPUSCHED_ENOENT if the variable is unset, GPUSCHED_ERANGE if too long. */
int openb_node_list_path(char *buf, size_t cap);

#endif
