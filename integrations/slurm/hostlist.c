/* Slurm's compressed host lists ("b0r[0-3]n[0-3]") expanded through
 * libslurm's own parser, so the daemon reads them exactly as Slurm does. */
#include "gss.h"

#include <stdlib.h>

int gss_hostlist_each(const char *list, gss_host_fn fn, void *user)
{
    if (!list || !*list)
        return 0;
    hostlist_t hl = slurm_hostlist_create(list);
    if (!hl)
        return -1;
    int rc = 0;
    uint32_t i = 0;
    char *h;
    while (rc == 0 && (h = slurm_hostlist_shift(hl)) != NULL) {
        rc = fn(user, h, i++);
        free(h);
    }
    slurm_hostlist_destroy(hl);
    return rc;
}

/* "b0r0n0,b0r0n1,b0r0n2" as "b0r0n[0-2]": what the log, the comment and
 * req_nodes carry, so that a gang of thousands of nodes stays one short
 * line. Falls back to the list as given if it does not fit. */
void gss_hostlist_compress(const char *list, char *buf, size_t cap)
{
    hostlist_t hl = slurm_hostlist_create(list);
    if (!hl || slurm_hostlist_ranged_string(hl, cap, buf) < 0)
        snprintf(buf, cap, "%s", list);
    if (hl)
        slurm_hostlist_destroy(hl);
}
