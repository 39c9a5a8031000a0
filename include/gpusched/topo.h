/**
 * @file topo.h
 * @brief Topology: levels, domains as node ranges, nodes, GPU classes, labels.
 *
 * @defgroup topo Topology
 * @brief The immutable physical shape of a cluster.
 *
 * A topology has 1 to #GPUSCHED_MAX_LEVELS named levels above the node
 * (for example zone, block, rack), then nodes with 0 to
 * #GPUSCHED_MAX_NODE_GPUS GPUs each (0: cpu and memory only, for pods
 * without GPUs) and, optionally, named resources such as cpu and memory. Level 0 is the top level. Every
 * domain at every level is one contiguous range of node indices; domains are
 * numbered per level in node order.
 *
 * Lifetime and threads: a #gpusched_topo is built once (builder, text,
 * generator or preset), then frozen. It is read-only and reference counted:
 * any number of threads may read it and any number of cluster states may
 * share it. gpusched_topo_ref() and gpusched_topo_unref() are thread-safe.
 * A #gpusched_topo_builder is used by one thread at a time.
 *
 * Because a topology is shared between threads it keeps no last-error
 * message; its accessors return error codes only. Builders and one-shot
 * constructors report messages (with line and column for text).
 *
 * Names: level, domain, node, class and label names are 1 to
 * #GPUSCHED_MAX_NAME bytes of `A-Z a-z 0-9 _ - . : +`. A domain's name
 * is relative to its parent; its full path joins the names with '/'
 * ("z0/b3/r12"). Node names are unique in the topology. Look-ups by name
 * are hash look-ups.
 *
 * Numbering: a built or parsed topology numbers the domains of each level
 * in the order in which they first appear among their siblings, and the
 * nodes of a lowest domain in insertion order. Input already grouped by
 * domain (such as an export) keeps its order.
 * @{
 */
#ifndef GPUSCHED_TOPO_H
#define GPUSCHED_TOPO_H

#include <gpusched/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most levels above the node. */
#define GPUSCHED_MAX_LEVELS 8
/** Most GPUs on one node. */
#define GPUSCHED_MAX_NODE_GPUS 64
/** Most distinct labels in one topology. */
#define GPUSCHED_MAX_LABELS 64
/** Most distinct GPU classes in one topology. */
#define GPUSCHED_MAX_CLASSES 255
/** Longest name of a level, node, domain component, class or label (bytes, without NUL). */
#define GPUSCHED_MAX_NAME 63
/** Most named scalar resources (cpu, memory, ...) one topology declares. */
#define GPUSCHED_MAX_RESOURCES 8
/** "No level", "no domain", "no class": a value no index takes. */
#define GPUSCHED_NONE UINT32_MAX
/**
 * Most nodes a builder may hold after a text parse (2^24 = 16,777,216).
 * A ranged `node` line declares many nodes in a few bytes, so a 50-byte text
 * could otherwise claim 2^32-2 nodes and gigabytes of memory. The limit is
 * 16 times the nodes of the largest preset (258,048); see
 * doc/topology-format.md, "Limits". Nodes added with
 * gpusched_topo_builder_add_node() count towards it but are not limited by it.
 */
#define GPUSCHED_MAX_TEXT_NODES 16777216u
/** Most GPUs a builder may hold after a text parse (2^26 = 67,108,864); see #GPUSCHED_MAX_TEXT_NODES. */
#define GPUSCHED_MAX_TEXT_GPUS 67108864u

/** An immutable topology. */
typedef struct gpusched_topo gpusched_topo;
/** A topology under construction. */
typedef struct gpusched_topo_builder gpusched_topo_builder;

/* ---- building ---------------------------------------------------------- */

/**
 * Creates an empty builder.
 * @param alloc Allocator for the builder and the topology it freezes; NULL: libc.
 * @param[out] out The builder.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `out` is NULL or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_topo_builder_new(const gpusched_allocator *alloc, gpusched_topo_builder **out);

/** Frees a builder; NULL is accepted. Topologies it froze are not affected. */
GPUSCHED_API void gpusched_topo_builder_free(gpusched_topo_builder *b);

/** The message of the builder's last error ("" if the last call succeeded). */
GPUSCHED_API const char *gpusched_topo_builder_errmsg(const gpusched_topo_builder *b);

/**
 * Names the levels above the node, top first. Must be called once, before
 * any node is added (or be given by the first text parsed).
 * @param b The builder.
 * @param nlevels 1 to #GPUSCHED_MAX_LEVELS.
 * @param names `nlevels` distinct non-empty names.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL Bad names. @retval GPUSCHED_ELIMIT Too many levels.
 * @retval GPUSCHED_ESTATE Levels already set.
 */
GPUSCHED_API int gpusched_topo_builder_levels_set(gpusched_topo_builder *b, uint32_t nlevels,
                                                  const char *const *names);

/**
 * Adds a node, in any order. Atomic: on error the builder is unchanged
 * (no class, label or domain of the failed node remains).
 * @param b The builder.
 * @param path One domain name per level, top first (for example
 *        {"z0", "b3", "r12"}); a name is relative to its parent.
 * @param name The node's name, unique in the topology.
 * @param gpus 0 to #GPUSCHED_MAX_NODE_GPUS (0, added in 0.2.3: a node with
 *        resources only, such as cpu and memory; see
 *        gpusched_topo_builder_resource_add()). A topology needs one GPU at
 *        least.
 * @param gpu_class Class name such as "gb200"; NULL or "" means "default".
 * @param labels `nlabels` label names (NULL if none).
 * @param nlabels Number of labels.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL Bad argument (NULL, an invalid name, GPUs out of range).
 * @retval GPUSCHED_EEXIST Duplicate node name.
 * @retval GPUSCHED_ELIMIT Too many labels or classes. @retval GPUSCHED_ESTATE Levels not set.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_topo_builder_add_node(gpusched_topo_builder *b, const char *const *path,
                                                const char *name, uint32_t gpus,
                                                const char *gpu_class, const char *const *labels,
                                                uint32_t nlabels);

/**
 * Declares a named scalar resource that nodes have besides GPUs, for
 * example `cpu` (milli-cores by convention) or `memory` (MiB), `nic`,
 * `disk`. Resources are indexed in declaration order; declaring a name
 * already declared gives its index and changes nothing. A node's capacity of
 * a resource is 0 until set. The words `gpus`, `class`, `labels` and `count`
 * are the text format's node keys and cannot name a resource.
 * @param b The builder.
 * @param name The resource's name (the name rules of the other names).
 * @param[out] index The resource's index (may be NULL).
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `b` is NULL, or the name is invalid or reserved.
 * @retval GPUSCHED_ELIMIT #GPUSCHED_MAX_RESOURCES already declared.
 * Added in 0.2.3.
 */
GPUSCHED_API int gpusched_topo_builder_resource_add(gpusched_topo_builder *b, const char *name,
                                                    uint32_t *index);

/**
 * Sets a node's capacity of a declared resource. The library never
 * interprets the unit: requests ask in the same unit.
 * @param b The builder.
 * @param node The node's name (added before).
 * @param resource The resource's index.
 * @param amount The node's capacity (any uint32 value).
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `b` or `node` is NULL, or `resource` is not declared.
 * @retval GPUSCHED_ENOENT No node of that name.
 * Added in 0.2.3.
 */
GPUSCHED_API int gpusched_topo_builder_node_resource_set(gpusched_topo_builder *b, const char *node,
                                                         uint32_t resource, uint32_t amount);

/**
 * Adds the content of a topology text (doc/topology-format.md) to the builder.
 * Several texts may be parsed into one builder; a `levels` line must then
 * repeat the levels already set. On error the builder is unchanged and its
 * message names line and column. The text may not bring the builder past
 * #GPUSCHED_MAX_TEXT_NODES nodes or #GPUSCHED_MAX_TEXT_GPUS GPUs:
 * that is checked before a ranged line allocates anything, so the memory a
 * parse takes is bounded whatever the text.
 * @param b The builder.
 * @param text The text (need not be NUL-terminated; NULL if `len` is 0).
 * @param len Its length in bytes.
 * @retval 0 Success.
 * @retval GPUSCHED_EPARSE The text is invalid: syntax, names, duplicates, limits
 *         (including #GPUSCHED_MAX_TEXT_NODES and #GPUSCHED_MAX_TEXT_GPUS).
 * @retval GPUSCHED_EINVAL `b` is NULL, or `text` is NULL with `len` > 0.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_topo_builder_parse(gpusched_topo_builder *b, const char *text, size_t len);

/**
 * Freezes the builder's content into a topology: numbers nodes so that each
 * domain is contiguous (see the numbering rule above), builds the indexes.
 * Linear in nodes and domains. The builder keeps its content: it can be
 * freed, or extended and frozen again into another topology.
 * @param b The builder.
 * @param[out] out The topology, with one reference held by the caller.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `b` or `out` is NULL.
 * @retval GPUSCHED_ESTATE No levels, no nodes, or no node with a GPU.
 * @retval GPUSCHED_ELIMIT More than 2^32-1 GPUs.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_topo_builder_freeze(gpusched_topo_builder *b, gpusched_topo **out);

/**
 * Parses a topology text in one call. At most #GPUSCHED_MAX_TEXT_NODES
 * nodes and #GPUSCHED_MAX_TEXT_GPUS GPUs (checked before allocating),
 * so hostile text costs bounded memory; larger topologies are built with
 * gpusched_topo_builder_add_node() or gpusched_topo_uniform().
 * @param text The text (need not be NUL-terminated).
 * @param len Its length in bytes.
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The topology.
 * @param errbuf Receives the error message (may be NULL).
 * @param errbuf_len Size of `errbuf`.
 * @retval 0 Success.
 * @retval GPUSCHED_EPARSE Invalid text (message has line and column), no
 *         `levels` line, no node, or more nodes or GPUs than the text limits.
 * @retval GPUSCHED_EINVAL `out` is NULL or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_topo_parse(const char *text, size_t len, const gpusched_allocator *alloc,
                                     gpusched_topo **out, char *errbuf, size_t errbuf_len);

/**
 * Builds a uniform topology: every domain of level l has fanout[l+1]
 * children, there are fanout[0] top-level domains, every lowest domain has
 * fanout[nlevels] nodes and every node `gpus_per_node` GPUs of one class.
 * Names are generated, not stored: a domain is the first letter of its
 * level's name plus its index among its siblings (z0/b3/r12 is rack 12 of
 * block 3 of zone 0), a node is "n" plus its node index (n0, n1, ...).
 * Memory is about 18 bytes per node.
 * @param nlevels Number of levels above the node.
 * @param level_names `nlevels` names.
 * @param fanout `nlevels + 1` counts, each at least 1.
 * @param gpus_per_node GPUs on every node.
 * @param gpu_class Class name (NULL: "default").
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The topology.
 * @param errbuf Receives the error message (may be NULL).
 * @param errbuf_len Size of `errbuf`.
 * @retval 0 Success. @retval GPUSCHED_EINVAL Bad argument.
 * @retval GPUSCHED_ELIMIT More than 2^32-1 nodes or GPUs.
 */
GPUSCHED_API int gpusched_topo_uniform(uint32_t nlevels, const char *const *level_names,
                                       const uint32_t *fanout, uint32_t gpus_per_node,
                                       const char *gpu_class, const gpusched_allocator *alloc,
                                       gpusched_topo **out, char *errbuf, size_t errbuf_len);

/**
 * Builds a named preset, a uniform topology (gpusched_topo_preset_name()
 * lists them):
 * - "gb200-nvl72-1m": levels zone, block, rack; 8 zones x 32 blocks x 56
 *   racks x 18 nodes x 4 GPUs of class "gb200" = 1,032,192 GPUs; each rack
 *   is one GB200 NVL72 NVLink domain (72 GPUs).
 * - "h100-superpod": levels pod, su; 16 DGX SuperPODs x 4 scalable units x
 *   32 nodes x 8 GPUs of class "h100" = 16,384 GPUs; a scalable unit (256
 *   GPUs) is the unit of the non-blocking InfiniBand fabric.
 * - "tiny": levels block, rack; 2 x 2 racks x 4 nodes x 8 GPUs of class
 *   "h100" = 128 GPUs.
 * @param name The preset's name.
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The topology.
 * @param errbuf Receives the error message (may be NULL).
 * @param errbuf_len Size of `errbuf`.
 * @retval 0 Success. @retval GPUSCHED_ENOENT No preset of that name.
 * @retval GPUSCHED_EINVAL `name` or `out` is NULL, or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_topo_preset(const char *name, const gpusched_allocator *alloc,
                                      gpusched_topo **out, char *errbuf, size_t errbuf_len);

/** Name of preset number `i`, or NULL when `i` is past the last one. */
GPUSCHED_API const char *gpusched_topo_preset_name(uint32_t i);

/** Adds a reference; returns `t`. */
GPUSCHED_API gpusched_topo *gpusched_topo_ref(gpusched_topo *t);

/** Drops a reference and frees the topology with the last one; NULL is accepted. */
GPUSCHED_API void gpusched_topo_unref(gpusched_topo *t);

/**
 * Writes the topology in the text format; parsing the output gives an
 * identical topology (same numbering, names, classes, labels, resources) as long as
 * it is within #GPUSCHED_MAX_TEXT_NODES nodes and
 * #GPUSCHED_MAX_TEXT_GPUS GPUs (a larger one exports, but its text is
 * refused by the parser). Uniform and
 * preset topologies are written as one ranged `node` line, others as one
 * line per node. Call with `cap` 0 to learn the size.
 * @param t The topology.
 * @param buf Destination (may be NULL when `cap` is 0).
 * @param cap Size of `buf`.
 * @param[out] len Bytes the full text takes, without a terminating NUL.
 * @retval 0 Success: the text and a NUL fit in `buf`.
 * @retval GPUSCHED_ERANGE `buf` is too small; `*len` says how much is needed
 *         (the content of `buf` is then unspecified).
 * @retval GPUSCHED_EINVAL `t` or `len` is NULL, or `buf` is NULL with `cap` > 0.
 */
GPUSCHED_API int gpusched_topo_export(const gpusched_topo *t, char *buf, size_t cap, size_t *len);

/* ---- reading ----------------------------------------------------------- */

/** Number of levels above the node. */
GPUSCHED_API uint32_t gpusched_topo_level_count(const gpusched_topo *t);
/** Name of a level, or NULL if out of range. */
GPUSCHED_API const char *gpusched_topo_level_name(const gpusched_topo *t, uint32_t level);
/** Finds a level by name. @retval GPUSCHED_ENOENT No such level. */
GPUSCHED_API int gpusched_topo_level_find(const gpusched_topo *t, const char *name, uint32_t *level);
/** Number of nodes. */
GPUSCHED_API uint32_t gpusched_topo_node_count(const gpusched_topo *t);
/** Number of GPUs. */
GPUSCHED_API uint64_t gpusched_topo_gpu_count(const gpusched_topo *t);
/** Number of domains at `level` (0 if out of range). */
GPUSCHED_API uint32_t gpusched_topo_domain_count(const gpusched_topo *t, uint32_t level);

/**
 * The node range of a domain.
 * @retval 0 Success. @retval GPUSCHED_ERANGE Level or domain out of range.
 */
GPUSCHED_API int gpusched_topo_domain_nodes(const gpusched_topo *t, uint32_t level, uint32_t domain,
                                            uint32_t *first, uint32_t *count);
/** The parent of a domain (level - 1); GPUSCHED_ERANGE at level 0 or out of range. */
GPUSCHED_API int gpusched_topo_domain_parent(const gpusched_topo *t, uint32_t level, uint32_t domain,
                                             uint32_t *parent);
/** The domain of `node` at `level`. @retval GPUSCHED_ERANGE Out of range. */
GPUSCHED_API int gpusched_topo_node_domain(const gpusched_topo *t, uint32_t node, uint32_t level,
                                           uint32_t *domain);
/**
 * The full path name of a domain, for example "z0/b3/r12".
 * @retval GPUSCHED_ERANGE Out of range or `cap` too small.
 */
GPUSCHED_API int gpusched_topo_domain_name(const gpusched_topo *t, uint32_t level, uint32_t domain,
                                           char *buf, size_t cap);
/** Finds a domain by full path name. @retval GPUSCHED_ENOENT Not found. */
GPUSCHED_API int gpusched_topo_domain_find(const gpusched_topo *t, uint32_t level, const char *path,
                                           uint32_t *domain);
/** GPUs on `node` (0 if out of range). */
GPUSCHED_API uint32_t gpusched_topo_node_gpus(const gpusched_topo *t, uint32_t node);
/** GPU class index of `node` (#GPUSCHED_NONE if out of range). */
GPUSCHED_API uint32_t gpusched_topo_node_class(const gpusched_topo *t, uint32_t node);
/** Label bit mask of `node` (bit i: label i). */
GPUSCHED_API uint64_t gpusched_topo_node_labels(const gpusched_topo *t, uint32_t node);
/**
 * GPU counts, classes and labels of nodes `first` .. `first + count - 1`
 * in one call, into arrays of `count` entries. Every output may be NULL.
 * @param t The topology.
 * @param first The first node.
 * @param count The number of nodes (0 is valid and writes nothing).
 * @param[out] gpus GPUs per node.
 * @param[out] classes GPU class index per node.
 * @param[out] labels Label bit mask per node.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `t` is NULL.
 * @retval GPUSCHED_ERANGE The range goes past the last node; nothing is written.
 */
GPUSCHED_API int gpusched_topo_nodes_info(const gpusched_topo *t, uint32_t first, uint32_t count, uint32_t *gpus,
                                          uint32_t *classes, uint64_t *labels);
/** The node's name. @retval GPUSCHED_ERANGE Out of range or `cap` too small. */
GPUSCHED_API int gpusched_topo_node_name(const gpusched_topo *t, uint32_t node, char *buf, size_t cap);
/** Finds a node by name. @retval GPUSCHED_ENOENT Not found. */
GPUSCHED_API int gpusched_topo_node_find(const gpusched_topo *t, const char *name, uint32_t *node);
/** Number of GPU classes. */
GPUSCHED_API uint32_t gpusched_topo_class_count(const gpusched_topo *t);
/** Name of a GPU class, or NULL if out of range. */
GPUSCHED_API const char *gpusched_topo_class_name(const gpusched_topo *t, uint32_t cls);
/** Finds a GPU class by name. @retval GPUSCHED_ENOENT Not found. */
GPUSCHED_API int gpusched_topo_class_find(const gpusched_topo *t, const char *name, uint32_t *cls);
/** Number of labels. */
GPUSCHED_API uint32_t gpusched_topo_label_count(const gpusched_topo *t);
/** Name of label bit `label`, or NULL if out of range. */
GPUSCHED_API const char *gpusched_topo_label_name(const gpusched_topo *t, uint32_t label);
/** Finds a label by name. @retval GPUSCHED_ENOENT Not found. */
GPUSCHED_API int gpusched_topo_label_find(const gpusched_topo *t, const char *name, uint32_t *label);
/** Number of declared resources (0 .. #GPUSCHED_MAX_RESOURCES). Added in 0.2.3. */
GPUSCHED_API uint32_t gpusched_topo_resource_count(const gpusched_topo *t);
/** Name of resource `resource`, or NULL if out of range. Added in 0.2.3. */
GPUSCHED_API const char *gpusched_topo_resource_name(const gpusched_topo *t, uint32_t resource);
/** Finds a resource by name. @retval GPUSCHED_ENOENT Not found. Added in 0.2.3. */
GPUSCHED_API int gpusched_topo_resource_find(const gpusched_topo *t, const char *name, uint32_t *resource);
/** `node`'s capacity of `resource` (0 if either is out of range). Added in 0.2.3. */
GPUSCHED_API uint32_t gpusched_topo_node_resource(const gpusched_topo *t, uint32_t node, uint32_t resource);
/** Bytes of memory the topology holds (arrays, names and indexes). */
GPUSCHED_API size_t gpusched_topo_memory_bytes(const gpusched_topo *t);

#ifdef __cplusplus
}
#endif

/** @} */
#endif
