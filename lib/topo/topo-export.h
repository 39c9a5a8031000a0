/* Text export with a choice of form, for the bench and tests: the public
 * gpusched_topo_export() writes uniform topologies as one ranged line. */
#ifndef GS_TOPO_EXPORT_H
#define GS_TOPO_EXPORT_H

#include "topo-internal.h"

/* Most fields on one line of the text format, the directive included: the
 * parser refuses longer lines, so the export splits its name lists. */
#define GS_TEXT_MAX_FIELDS 16

/* As gpusched_topo_export(); `per_node` forces one line per node. */
int gs_topo_export_text(const gpusched_topo *t, bool per_node, char *buf, size_t cap, size_t *len);

#endif
