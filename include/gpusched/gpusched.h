/**
 * @file gpusched.h
 * @brief Umbrella header: include this one to use libgpusched.
 *
 * @mainpage libgpusched
 *
 * A pure-C scheduling core for GPU clusters: topology modeling, gang
 * placement, preemption planning and fair-share task scoring behind opaque
 * handles with a stable ABI. Start with @ref core, then the module groups.
 */
#ifndef GPUSCHED_H
#define GPUSCHED_H

#include <gpusched/common.h>
#include <gpusched/topo.h>
#include <gpusched/cluster.h>
#include <gpusched/fairq.h>
#include <gpusched/place.h>
#include <gpusched/preempt.h>
#include <gpusched/sched.h>

#endif
