/* The job's comment carries both the user's gpusched options (before any
 * " | ") and the daemon's status after it ("placed ..." or "waits: ..."), so
 * `squeue -o %k` shows why a gang waits and the options survive rewrites. */
#include "gss.h"

#include <string.h>

/* Length of the user's part of a comment: everything before " | ". */
size_t gss_comment_user_part(const char *comment)
{
    if (!comment)
        return 0;
    const char *bar = strstr(comment, " | ");
    return bar ? (size_t)(bar - comment) : strlen(comment);
}

/* Writes "<user part> | <status>" unless the comment says so already. */
int gss_comment_set(const slurm_job_info_t *j, const char *status)
{
    char buf[4096];
    size_t user = gss_comment_user_part(j->comment);
    snprintf(buf, sizeof buf, "%.*s | gpusched: %s", (int)user, user ? j->comment : "", status);
    if (j->comment && strcmp(j->comment, buf) == 0)
        return 0;
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = j->job_id;
    d.comment = buf;
    if (slurm_update_job(&d) != 0) {
        gss_log("job %u: comment not set: %s", j->job_id, slurm_strerror(slurm_get_errno()));
        return -1;
    }
    return 1;
}
