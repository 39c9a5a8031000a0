package gpusched

/*
#include <stdlib.h>
#include <gpusched/gpusched.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// NodeHealth is a node's health (gpusched_node_health).
type NodeHealth uint32

// Node health values; only NodeUp nodes take new work.
const (
	NodeUp       NodeHealth = C.GPUSCHED_NODE_UP
	NodeCordoned NodeHealth = C.GPUSCHED_NODE_CORDONED
	NodeDraining NodeHealth = C.GPUSCHED_NODE_DRAINING
	NodeDown     NodeHealth = C.GPUSCHED_NODE_DOWN
)

func (h NodeHealth) String() string {
	switch h {
	case NodeUp:
		return "up"
	case NodeCordoned:
		return "cordoned"
	case NodeDraining:
		return "draining"
	case NodeDown:
		return "down"
	}
	return fmt.Sprintf("NodeHealth(%d)", uint32(h))
}

// Job describes a running job (gpusched_job).
type Job struct {
	ID          uint64
	Priority    int32 // higher runs first; preemption takes lower ones
	Tenant      uint32
	StartTime   int64  // on the caller's clock
	CostHint    uint64 // cost of preempting it, in the caller's unit
	Preemptible bool
	Movable     bool // may be moved by defragmentation
}

func (j Job) c() C.gpusched_job {
	cj := C.gpusched_job{size: C.uint32_t(unsafe.Sizeof(C.gpusched_job{}))}
	cj.id = C.uint64_t(j.ID)
	cj.priority = C.int32_t(j.Priority)
	cj.tenant = C.uint32_t(j.Tenant)
	cj.start_time = C.int64_t(j.StartTime)
	cj.cost_hint = C.uint64_t(j.CostHint)
	if j.Preemptible {
		cj.flags |= C.GPUSCHED_JOB_FLAG_PREEMPTIBLE
	}
	if j.Movable {
		cj.flags |= C.GPUSCHED_JOB_FLAG_MOVABLE
	}
	return cj
}

func jobFromC(cj *C.gpusched_job) Job {
	return Job{ID: uint64(cj.id), Priority: int32(cj.priority), Tenant: uint32(cj.tenant),
		StartTime: int64(cj.start_time), CostHint: uint64(cj.cost_hint),
		Preemptible: cj.flags&C.GPUSCHED_JOB_FLAG_PREEMPTIBLE != 0,
		Movable:     cj.flags&C.GPUSCHED_JOB_FLAG_MOVABLE != 0}
}

// NodeGPUs is a set of GPUs on one node: bit i of Mask is GPU i.
type NodeGPUs struct {
	Node int
	Mask uint64
}

// GPUs returns the number of GPUs in the set.
func (n NodeGPUs) GPUs() int {
	c := 0
	for m := n.Mask; m != 0; m &= m - 1 {
		c++
	}
	return c
}

// AllGPUs is the mask of a node's g GPUs.
func AllGPUs(g int) uint64 {
	if g >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(g) - 1
}

// NodeState is the state of one node's GPUs.
type NodeState struct {
	Free, Reserved, Allocated uint64 // GPU masks
	Health                    NodeHealth
}

// Frag holds the fragmentation metrics of one level (doc/cluster.md).
type Frag struct {
	FreeDomains  uint32 // domains whose every node is up with every GPU free
	StrandedGPUs uint64 // free usable GPUs outside fully free domains
	GangGPUs     uint64 // GPUs in fully free domains
}

// Cluster is the mutable state of a cluster on a topology: free GPUs,
// node health, jobs, reservations. Its methods lock a mutex, so a Cluster
// may be shared between goroutines; every mutating call is atomic (it
// succeeds or changes nothing).
type Cluster struct {
	mu     sync.Mutex
	c      *C.gpusched_cluster
	topo   *Topology
	placer *C.gpusched_placer
	res    *C.gpusched_place_result
	plan   *C.gpusched_preempt_plan
}

func newCluster(c *C.gpusched_cluster) *Cluster {
	cl := &Cluster{c: c, topo: newTopology(C.gpusched_topo_ref(C.gpusched_cluster_topo(c)))}
	runtime.SetFinalizer(cl, (*Cluster).Close)
	return cl
}

// NewCluster creates an empty cluster on a topology: every GPU free, every
// node up.
func NewCluster(t *Topology) (*Cluster, error) {
	var c *C.gpusched_cluster
	err := t.use("NewCluster", func(h *C.gpusched_topo) error {
		return newError("NewCluster", C.gpusched_cluster_new(h, nil, &c), "")
	})
	if err != nil {
		return nil, err
	}
	return newCluster(c), nil
}

// RestoreCluster restores a cluster, with its own topology, from a
// snapshot (Cluster.Snapshot). A damaged image is an error (ErrCorrupt).
func RestoreCluster(snapshot []byte) (*Cluster, error) {
	var c *C.gpusched_cluster
	var errbuf [errbufLen]C.char
	var p unsafe.Pointer
	if len(snapshot) > 0 {
		p = C.CBytes(snapshot)
		defer C.free(p)
	}
	rc := C.gpusched_cluster_restore(p, C.size_t(len(snapshot)), nil, &c, &errbuf[0], errbufLen)
	if rc != 0 {
		return nil, newError("RestoreCluster", rc, C.GoString(&errbuf[0]))
	}
	return newCluster(c), nil
}

// Close frees the cluster (and its placer). Closing twice is harmless.
func (cl *Cluster) Close() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.c == nil {
		return nil
	}
	C.gpusched_preempt_plan_free(cl.plan)
	C.gpusched_place_result_free(cl.res)
	C.gpusched_placer_free(cl.placer)
	C.gpusched_cluster_unref(cl.c)
	cl.c, cl.placer, cl.res, cl.plan = nil, nil, nil, nil
	cl.topo.Close()
	runtime.SetFinalizer(cl, nil)
	return nil
}

// Topology returns the cluster's topology.
func (cl *Cluster) Topology() *Topology { return cl.topo }

// do runs f under the lock with the C handle; a non-zero code becomes an
// *Error with the cluster's message.
func (cl *Cluster) do(op string, f func(c *C.gpusched_cluster) C.int) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.c == nil {
		return closedError(op)
	}
	rc := f(cl.c)
	if rc != 0 {
		return newError(op, rc, C.GoString(C.gpusched_cluster_errmsg(cl.c)))
	}
	return nil
}

func pairs(alloc []NodeGPUs) ([]C.uint32_t, []C.uint64_t) {
	nodes := make([]C.uint32_t, len(alloc))
	masks := make([]C.uint64_t, len(alloc))
	for i, a := range alloc {
		nodes[i], masks[i] = C.uint32_t(a.Node), C.uint64_t(a.Mask)
	}
	return nodes, masks
}

func pairPointers(nodes []C.uint32_t, masks []C.uint64_t) (*C.uint32_t, *C.uint64_t) {
	if len(nodes) == 0 {
		return nil, nil
	}
	return &nodes[0], &masks[0]
}

func goPairs(nodes *C.uint32_t, masks *C.uint64_t, n C.uint32_t) []NodeGPUs {
	out := make([]NodeGPUs, int(n))
	if n == 0 {
		return out
	}
	ns := unsafe.Slice(nodes, int(n))
	ms := unsafe.Slice(masks, int(n))
	for i := range out {
		out[i] = NodeGPUs{Node: int(ns[i]), Mask: uint64(ms[i])}
	}
	return out
}

// Allocate gives GPUs to a new job, all or nothing: nodes ascending, each
// once, every GPU free (or reserved for this job) on an up node.
func (cl *Cluster) Allocate(job Job, alloc []NodeGPUs) error {
	nodes, masks := pairs(alloc)
	cj := job.c()
	return cl.do("Cluster.Allocate", func(c *C.gpusched_cluster) C.int {
		pn, pm := pairPointers(nodes, masks)
		return C.gpusched_cluster_allocate(c, &cj, C.uint32_t(len(alloc)), pn, pm)
	})
}

// Release ends a job; its GPUs become free.
func (cl *Cluster) Release(jobID uint64) error {
	return cl.do("Cluster.Release", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_release(c, C.uint64_t(jobID))
	})
}

// UpdateJob changes a running job's descriptor (not its GPUs).
func (cl *Cluster) UpdateJob(job Job) error {
	cj := job.c()
	return cl.do("Cluster.UpdateJob", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_job_update(c, &cj)
	})
}

// Job returns a running job's descriptor.
func (cl *Cluster) Job(jobID uint64) (Job, error) {
	cj := C.gpusched_job{size: C.uint32_t(unsafe.Sizeof(C.gpusched_job{}))}
	err := cl.do("Cluster.Job", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_job_find(c, C.uint64_t(jobID), &cj)
	})
	return jobFromC(&cj), err
}

// Jobs returns the ids of the running jobs.
func (cl *Cluster) Jobs() []uint64 {
	var ids []uint64
	cl.do("Cluster.Jobs", func(c *C.gpusched_cluster) C.int {
		n := C.gpusched_cluster_job_count(c)
		for i := C.uint32_t(0); i < n; i++ {
			var id C.uint64_t
			C.gpusched_cluster_job_at(c, i, &id)
			ids = append(ids, uint64(id))
		}
		return 0
	})
	return ids
}

// Allocation returns a running job's GPUs.
func (cl *Cluster) Allocation(jobID uint64) ([]NodeGPUs, error) {
	var out []NodeGPUs
	err := cl.do("Cluster.Allocation", func(c *C.gpusched_cluster) C.int {
		var nodes *C.uint32_t
		var masks *C.uint64_t
		var n C.uint32_t
		rc := C.gpusched_cluster_job_allocation(c, C.uint64_t(jobID), &nodes, &masks, &n, nil)
		if rc == 0 {
			out = goPairs(nodes, masks, n)
		}
		return rc
	})
	return out, err
}

// Reserve keeps GPUs for a job that is not running yet; Allocate (or a
// committed placement) with the same id consumes the reservation.
func (cl *Cluster) Reserve(jobID uint64, alloc []NodeGPUs) error {
	nodes, masks := pairs(alloc)
	return cl.do("Cluster.Reserve", func(c *C.gpusched_cluster) C.int {
		pn, pm := pairPointers(nodes, masks)
		return C.gpusched_cluster_reserve(c, C.uint64_t(jobID), C.uint32_t(len(alloc)), pn, pm)
	})
}

// Unreserve drops a reservation.
func (cl *Cluster) Unreserve(jobID uint64) error {
	return cl.do("Cluster.Unreserve", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_unreserve(c, C.uint64_t(jobID))
	})
}

// ReleaseToReservation ends a job and keeps its GPUs reserved for another.
func (cl *Cluster) ReleaseToReservation(jobID, forJobID uint64) error {
	return cl.do("Cluster.ReleaseToReservation", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_release_to_resv(c, C.uint64_t(jobID), C.uint64_t(forJobID))
	})
}

// Reservations returns the job ids that hold reservations.
func (cl *Cluster) Reservations() []uint64 {
	var ids []uint64
	cl.do("Cluster.Reservations", func(c *C.gpusched_cluster) C.int {
		n := C.gpusched_cluster_resv_count(c)
		for i := C.uint32_t(0); i < n; i++ {
			var id C.uint64_t
			C.gpusched_cluster_resv_at(c, i, &id)
			ids = append(ids, uint64(id))
		}
		return 0
	})
	return ids
}

// NodeState returns a node's GPU masks and health.
func (cl *Cluster) NodeState(node int) (NodeState, error) {
	var f, r, a C.uint64_t
	var h C.uint32_t
	err := cl.do("Cluster.NodeState", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_node_state(c, C.uint32_t(node), &f, &r, &a, &h)
	})
	return NodeState{Free: uint64(f), Reserved: uint64(r), Allocated: uint64(a), Health: NodeHealth(h)}, err
}

// SetNodeHealth changes a node's health and returns the jobs on it (for
// NodeDown they lost their GPUs there; they stay allocated until released
// or moved).
func (cl *Cluster) SetNodeHealth(node int, health NodeHealth) ([]uint64, error) {
	var hit []uint64
	err := cl.do("Cluster.SetNodeHealth", func(c *C.gpusched_cluster) C.int {
		var n C.uint32_t
		if rc := C.gpusched_cluster_node_jobs(c, C.uint32_t(node), nil, 0, &n); rc != 0 && rc != C.GPUSCHED_ERANGE {
			return rc
		}
		ids := make([]C.uint64_t, int(n)+1)
		rc := C.gpusched_cluster_node_health_set(c, C.uint32_t(node), C.uint32_t(health), &ids[0],
			C.uint32_t(len(ids)), &n)
		if rc == 0 {
			for _, id := range ids[:n] {
				hit = append(hit, uint64(id))
			}
		}
		return rc
	})
	return hit, err
}

// FreeGPUs returns the free GPUs usable for new work (on up nodes).
func (cl *Cluster) FreeGPUs() uint64 {
	var g C.uint64_t
	cl.do("Cluster.FreeGPUs", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_domain_free_gpus(c, C.GPUSCHED_NONE, 0, &g)
	})
	return uint64(g)
}

// DomainFreeGPUs returns the free usable GPUs of one domain.
func (cl *Cluster) DomainFreeGPUs(level, domain int) (uint64, error) {
	var g C.uint64_t
	err := cl.do("Cluster.DomainFreeGPUs", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_domain_free_gpus(c, C.uint32_t(level), C.uint32_t(domain), &g)
	})
	return uint64(g), err
}

// Frag returns the fragmentation metrics of a level; the node level is
// len(Topology().Levels()).
func (cl *Cluster) Frag(level int) (Frag, error) {
	var fd C.uint32_t
	var st, gg C.uint64_t
	err := cl.do("Cluster.Frag", func(c *C.gpusched_cluster) C.int {
		return C.gpusched_cluster_frag(c, C.uint32_t(level), &fd, &st, &gg)
	})
	return Frag{FreeDomains: uint32(fd), StrandedGPUs: uint64(st), GangGPUs: uint64(gg)}, err
}

// Check recomputes every aggregate from the jobs and compares (tests).
func (cl *Cluster) Check() error {
	return cl.do("Cluster.Check", func(c *C.gpusched_cluster) C.int { return C.gpusched_cluster_check(c) })
}

// Snapshot writes the cluster (topology and state) as a versioned,
// checksummed image; RestoreCluster reads it back.
func (cl *Cluster) Snapshot() ([]byte, error) {
	var out []byte
	err := cl.do("Cluster.Snapshot", func(c *C.gpusched_cluster) C.int {
		var n C.size_t
		if rc := C.gpusched_cluster_snapshot(c, nil, 0, &n); rc != 0 && rc != C.GPUSCHED_ERANGE {
			return rc
		}
		buf := C.malloc(n)
		defer C.free(buf)
		rc := C.gpusched_cluster_snapshot(c, buf, n, &n)
		if rc == 0 {
			out = C.GoBytes(buf, C.int(n))
		}
		return rc
	})
	return out, err
}
