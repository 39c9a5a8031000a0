-- job_submit/lua rule shipped with gpusched-slurm (doc/slurm.md): every job
-- of the partition gpusched-slurm places is submitted held, so that Slurm
-- never starts it before the daemon has chosen its nodes. Install as
-- job_submit.lua beside slurm.conf with JobSubmitPlugins=lua.
local gpusched_partition = "gpu"

function slurm_job_submit(job_desc, part_list, submit_uid)
    local part = job_desc.partition
    if part == nil or part == gpusched_partition then
        -- Priority 0 is a hold; the daemon releases the job with its node list.
        job_desc.priority = 0
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
