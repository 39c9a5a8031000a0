/* The binary image of a topology, embedded in cluster snapshots.
 *
 * Little-endian, versioned (GS_TOPO_IMAGE_VERSION), self-delimiting (the
 * header holds the total length) and checksummed (XXH64, gs_checksum64,
 * over the body). Uniform and preset topologies are written as their
 * parameters (a few dozen bytes); others as their arrays and name pool.
 * Reading validates every field, so a truncated, corrupted or hostile
 * image yields GPUSCHED_ECORRUPT (GPUSCHED_EVERSION for an unknown version)
 * and creates nothing. Reading then writing gives the same bytes. Layout:
 * doc/topology-format.md, "Binary image". */
#ifndef GS_TOPO_IMAGE_H
#define GS_TOPO_IMAGE_H

#include "topo-internal.h"

/* 2: the checksum is XXH64 (version 1 had FNV-1a 64); layout unchanged.
 * 3: version 2 plus named resources (their names after the label names,
 * every node's capacities at the end). Written only for a topology that
 * declares resources: any other is written as version 2, byte for byte as
 * before. Both are read. */
#define GS_TOPO_IMAGE_VERSION 3u
#define GS_TOPO_IMAGE_VERSION_PLAIN 2u

/* Exact size of the image of `t`. */
int gs_topo_image_size(const gpusched_topo *t, size_t *size);
/* Writes the image; GPUSCHED_ERANGE (nothing written) if `cap` is short.
 * `*written` gets the image size in both cases. */
int gs_topo_image_write(const gpusched_topo *t, uint8_t *buf, size_t cap, size_t *written);
/* Reads an image at the start of `buf` (which may continue with other
 * data): a new topology with one reference, allocated through `a`, and the
 * bytes it took in `*consumed`. Errors carry a message in `e` (may be NULL).
 *
 * `max_nodes` bounds the nodes the image may declare (ECORRUPT beyond,
 * before anything is allocated). A stored image's size grows with its
 * nodes, but a uniform one is a few dozen bytes whatever its size, so the
 * container must say how many nodes it can justify: a snapshot passes the
 * nodes its state section has room for (one health byte each). Callers
 * with a trusted image pass GS_TOPO_IMAGE_ANY_NODES. */
#define GS_TOPO_IMAGE_ANY_NODES (UINT32_MAX - 1)
int gs_topo_image_read(const uint8_t *buf, size_t len, uint32_t max_nodes, const gs_alloc *a,
                       gpusched_topo **out, size_t *consumed, gs_err *e);

#endif
