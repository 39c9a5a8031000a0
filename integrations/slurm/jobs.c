/* The jobs the daemon holds in the cluster, and what it reads of a Slurm
 * job's priority and hold. A linear table: a partition's running and
 * placed jobs number in the thousands at most, and a poll already reads
 * every job from slurmctld. */
#include "gss.h"

#include <stdlib.h>

gss_job *gss_jobs_find(gss_state *s, uint32_t id)
{
    for (uint32_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].id == id)
            return &s->jobs[i];
    return NULL;
}

int gss_jobs_add(gss_state *s, uint32_t id, int seen_running)
{
    if (s->njobs == s->capjobs) {
        uint32_t cap = s->capjobs ? 2 * s->capjobs : 64;
        gss_job *j = realloc(s->jobs, cap * sizeof *j);
        if (!j)
            return -1;
        s->jobs = j;
        s->capjobs = cap;
    }
    s->jobs[s->njobs++] = (gss_job){id, seen_running};
    return 0;
}

void gss_jobs_drop(gss_state *s, uint32_t id)
{
    gss_job *j = gss_jobs_find(s, id);
    if (j)
        *j = s->jobs[--s->njobs];
}

/* A held job's Slurm priority is 0 until it is released, so the order among
 * held jobs comes from their nice value (sbatch --nice; negative values are
 * for operators): the lower the nice, the higher the priority. */
int32_t gss_job_priority(const slurm_job_info_t *j)
{
    int64_t nice = (int64_t)j->nice - (int64_t)NICE_OFFSET;
    return (int32_t)-nice;
}

/* Held by the user (sbatch -H) or by an operator or the job_submit rule. */
int gss_job_is_held(const slurm_job_info_t *j)
{
    return (j->job_state & JOB_STATE_BASE) == JOB_PENDING && j->priority == 0 &&
           (j->state_reason == WAIT_HELD || j->state_reason == WAIT_HELD_USER);
}

/* Puts a job back on hold (priority 0, as `scontrol hold` does): a placed
 * job that Slurm has not started yet goes back to the daemon's queue. */
int gss_job_hold(uint32_t id)
{
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.priority = 0;
    return slurm_update_job(&d);
}
