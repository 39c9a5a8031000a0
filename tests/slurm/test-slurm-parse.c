/* gpusched-slurm's readers of Slurm's strings (integrations/slurm): GPU
 * counts in GRES and TRES strings, and the user's part of a job comment. */
#include <criterion/criterion.h>
#include <string.h>

#include "gss.h"

Test(slurm_parse, gres_gpus)
{
    cr_expect_eq(gss_gres_gpus("gpu:4"), 4);
    cr_expect_eq(gss_gres_gpus("gpu:h100:8(S:0-1)"), 8);
    cr_expect_eq(gss_gres_gpus("gpu:4(IDX:0-3)"), 4);
    cr_expect_eq(gss_gres_gpus("craynetwork:1,gpu:3"), 3);
    cr_expect_eq(gss_gres_gpus("mps:100"), 0);
    cr_expect_eq(gss_gres_gpus(""), 0);
    cr_expect_eq(gss_gres_gpus(NULL), 0);
}

Test(slurm_parse, tres_gpus)
{
    cr_expect_eq(gss_tres_gpus("gres:gpu:6"), 6);
    cr_expect_eq(gss_tres_gpus("gres/gpu:2"), 2);
    cr_expect_eq(gss_tres_gpus("cpu:2;gres:gpu:a100:3"), 3);
    cr_expect_eq(gss_tres_gpus("gres:mps:50"), 0);
}

Test(slurm_parse, comment_user_part)
{
    const char *c = "gpusched: slice=16@rack | gpusched: waits: no";
    cr_expect_eq(gss_comment_user_part(c), strlen("gpusched: slice=16@rack"));
    cr_expect_eq(gss_comment_user_part(" | gpusched: placed on n0"), 0);
    cr_expect_eq(gss_comment_user_part("just a note"), strlen("just a note"));
    cr_expect_eq(gss_comment_user_part(NULL), 0);
}
