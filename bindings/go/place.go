package gpusched

/*
#include <stdlib.h>
#include <gpusched/gpusched.h>

// The request is assembled here, on the C side, so that no Go memory
// holds a pointer the C call reads (cgo's pointer rules): the job and the
// avoided nodes are passed as arguments. op: 0 place, 1 preempt, 2 defrag.
static int gs_go_place(gpusched_placer *p, int op, const gpusched_job *job, uint32_t flags,
                       uint32_t gpus, uint32_t split, uint32_t pod_gpus, uint32_t required,
                       uint32_t preferred, uint32_t s0, uint32_t l0, uint32_t s1, uint32_t l1,
                       uint32_t cls, uint64_t labels_required, uint64_t labels_forbidden,
                       const uint32_t *avoid, uint32_t navoid, gpusched_place_result *res,
                       gpusched_preempt_plan *plan)
{
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    r.job = job;
    r.flags = flags;
    r.gpus = gpus;
    r.split = split;
    r.pod_gpus = pod_gpus;
    r.required_level = required;
    r.preferred_level = preferred;
    r.slice_gpus[0] = s0, r.slice_level[0] = l0;
    r.slice_gpus[1] = s1, r.slice_level[1] = l1;
    r.gpu_class = cls;
    r.labels_required = labels_required;
    r.labels_forbidden = labels_forbidden;
    r.avoid_nodes = avoid;
    r.avoid_count = navoid;
    switch (op) {
    case 1: return gpusched_placer_preempt(p, &r, res, plan);
    case 2: return gpusched_placer_defrag(p, &r, res, plan);
    default: return gpusched_placer_place(p, &r, res);
    }
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Reason says why a gang did not fit (gpusched_place_reason).
type Reason uint32

// Placement reasons.
const (
	ReasonOK       Reason = C.GPUSCHED_REASON_OK
	ReasonNoGPUs   Reason = C.GPUSCHED_REASON_NO_GPUS
	ReasonEligible Reason = C.GPUSCHED_REASON_ELIGIBLE
	ReasonSplit    Reason = C.GPUSCHED_REASON_SPLIT
	ReasonSlices   Reason = C.GPUSCHED_REASON_SLICES
	ReasonRequired Reason = C.GPUSCHED_REASON_REQUIRED
	ReasonNotRun   Reason = C.GPUSCHED_REASON_NOT_RUN
)

func (r Reason) String() string {
	names := []string{"ok", "no_gpus", "eligible", "split", "slices", "required", "not_run"}
	if int(r) < len(names) {
		return names[r]
	}
	return fmt.Sprintf("Reason(%d)", uint32(r))
}

// Slice asks for slices of GPUs GPUs, each inside one domain of Level
// (for example {72, "rack"}: one NVL72 rack per 72 GPUs).
type Slice struct {
	GPUs  uint32
	Level string
}

// PlaceRequest is a gang: GPUs, how they split over nodes and the
// topology constraints. Levels are given by name; the zero value of every
// field means "no constraint".
type PlaceRequest struct {
	GPUs            uint32
	PodGPUs         uint32   // pods of PodGPUs GPUs, each on one node
	WholeNodes      bool     // whole, fully free nodes (of PodGPUs GPUs if set)
	Required        string   // the whole gang inside one domain of this level
	Preferred       string   // optimize locality down to this level only
	Slices          []Slice  // up to 2, nested
	GPUClass        string   // GPUs of this class only
	LabelsRequired  []string // every node used has these labels
	LabelsForbidden []string // no node used has any of these
	Avoid           []int    // nodes not to use
	Job             Job      // its id is the job's when committed
	Commit          bool     // make it a running job (else a what-if)
}

// Placement is where a gang goes, or why it does not fit. Its fields are
// copies: it stays valid after the cluster changes or closes.
type Placement struct {
	Fits      bool
	Reason    Reason
	Message   string // where it went, or which constraint failed and by how much
	Committed bool
	Nodes     []NodeGPUs
	Pods      []int            // node of each pod (pod requests)
	Domains   map[string][]int // domains used per level name, ascending
	Locality  []uint32         // domains used per level, top first, then nodes
	JobID     uint64
}

// GPUs returns the GPUs of the placement.
func (p *Placement) GPUs() int {
	n := 0
	for _, a := range p.Nodes {
		n += a.GPUs()
	}
	return n
}

// Err returns nil when the gang fits, else an *Error with code ErrNoSpace
// and the explanation, for callers that treat "does not fit" as an error.
func (p *Placement) Err() error {
	if p.Fits {
		return nil
	}
	return &Error{Op: "Placement", Code: ErrNoSpace, Message: p.Message}
}

// PreemptPlan is a preemption (victims) or a defragmentation (moves) plan
// and the placement the gang gets once it is carried out.
type PreemptPlan struct {
	Placement *Placement
	Victims   []uint64 // jobs to evict, ascending
	Moves     []Move   // jobs to move (Defrag)
	Cost      uint64   // the victims' or movers' cost hints
	GPUs      uint64   // GPUs they hold
}

// Move is one job moved by a defragmentation plan, and where to.
type Move struct {
	JobID uint64
	Nodes []NodeGPUs
}

// ensurePlacer makes the placer, result and plan on first use (under the
// cluster's lock).
func (cl *Cluster) ensurePlacer() C.int {
	if cl.placer == nil {
		if rc := C.gpusched_placer_new(cl.c, nil, &cl.placer); rc != 0 {
			return rc
		}
	}
	if cl.res == nil {
		if rc := C.gpusched_place_result_new(nil, &cl.res); rc != 0 {
			return rc
		}
	}
	if cl.plan == nil {
		if rc := C.gpusched_preempt_plan_new(nil, &cl.plan); rc != 0 {
			return rc
		}
	}
	return 0
}

func (cl *Cluster) placerError(op string, rc C.int) error {
	msg := ""
	if cl.placer != nil {
		msg = C.GoString(C.gpusched_placer_errmsg(cl.placer))
	}
	return newError(op, rc, msg)
}

// levelIndex maps a level name to its index ("" is none).
func levelIndex(t *C.gpusched_topo, name, field string) (C.uint32_t, error) {
	if name == "" {
		return C.GPUSCHED_NONE, nil
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var l C.uint32_t
	if C.gpusched_topo_level_find(t, cname, &l) != 0 {
		return 0, &Error{Op: "Cluster.Place", Code: ErrNotFound, Message: fmt.Sprintf("%s: no level %q", field, name)}
	}
	return l, nil
}

func labelMask(t *C.gpusched_topo, names []string, field string) (C.uint64_t, error) {
	var mask C.uint64_t
	for _, n := range names {
		cname := C.CString(n)
		var b C.uint32_t
		rc := C.gpusched_topo_label_find(t, cname, &b)
		C.free(unsafe.Pointer(cname))
		if rc != 0 {
			return 0, &Error{Op: "Cluster.Place", Code: ErrNotFound, Message: fmt.Sprintf("%s: no label %q", field, n)}
		}
		mask |= 1 << b
	}
	return mask, nil
}

// place runs one request (op 0, 1, 2) under the lock and copies the result.
func (cl *Cluster) place(op int, name string, req PlaceRequest) (*Placement, *PreemptPlan, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.c == nil {
		return nil, nil, closedError(name)
	}
	t := C.gpusched_cluster_topo(cl.c)
	required, err := levelIndex(t, req.Required, "Required")
	if err != nil {
		return nil, nil, err
	}
	preferred, err := levelIndex(t, req.Preferred, "Preferred")
	if err != nil {
		return nil, nil, err
	}
	if len(req.Slices) > C.GPUSCHED_MAX_SLICES {
		return nil, nil, &Error{Op: name, Code: ErrInvalid, Message: "at most 2 slices"}
	}
	var sg, sl [2]C.uint32_t
	sl[0], sl[1] = C.GPUSCHED_NONE, C.GPUSCHED_NONE
	for i, s := range req.Slices {
		if sl[i], err = levelIndex(t, s.Level, "Slices"); err != nil {
			return nil, nil, err
		}
		sg[i] = C.uint32_t(s.GPUs)
	}
	cls := C.uint32_t(C.GPUSCHED_NONE)
	if req.GPUClass != "" {
		cname := C.CString(req.GPUClass)
		rc := C.gpusched_topo_class_find(t, cname, &cls)
		C.free(unsafe.Pointer(cname))
		if rc != 0 {
			return nil, nil, &Error{Op: name, Code: ErrNotFound, Message: fmt.Sprintf("GPUClass: no class %q", req.GPUClass)}
		}
	}
	lreq, err := labelMask(t, req.LabelsRequired, "LabelsRequired")
	if err != nil {
		return nil, nil, err
	}
	lforb, err := labelMask(t, req.LabelsForbidden, "LabelsForbidden")
	if err != nil {
		return nil, nil, err
	}
	split := C.uint32_t(C.GPUSCHED_SPLIT_ANY)
	if req.WholeNodes {
		split = C.GPUSCHED_SPLIT_WHOLE_NODES
	} else if req.PodGPUs > 0 {
		split = C.GPUSCHED_SPLIT_PODS
	}
	var avoid []C.uint32_t
	for _, n := range req.Avoid {
		avoid = append(avoid, C.uint32_t(n))
	}
	var pavoid *C.uint32_t
	if len(avoid) > 0 {
		pavoid = &avoid[0]
	}
	var flags C.uint32_t
	if req.Commit {
		flags |= C.GPUSCHED_PLACE_FLAG_COMMIT
	}
	if rc := cl.ensurePlacer(); rc != 0 {
		return nil, nil, newError(name, rc, "")
	}
	cj := req.Job.c()
	rc := C.gs_go_place(cl.placer, C.int(op), &cj, flags, C.uint32_t(req.GPUs), split, C.uint32_t(req.PodGPUs),
		required, preferred, sg[0], sl[0], sg[1], sl[1], cls, lreq, lforb, pavoid, C.uint32_t(len(avoid)),
		cl.res, cl.plan)
	if rc != 0 && rc != C.GPUSCHED_ENOSPC {
		return nil, nil, cl.placerError(name, rc)
	}
	p := cl.copyResult(t, rc == 0, req.Job.ID)
	if op == 0 {
		return p, nil, nil
	}
	plan := &PreemptPlan{Placement: p}
	if rc == 0 {
		var ids *C.uint64_t
		var n C.uint32_t
		C.gpusched_preempt_plan_victims(cl.plan, &ids, &n)
		for _, id := range unsafe.Slice(ids, int(n)) {
			plan.Victims = append(plan.Victims, uint64(id))
		}
		var cost, gpus C.uint64_t
		C.gpusched_preempt_plan_totals(cl.plan, &cost, &gpus)
		plan.Cost, plan.GPUs = uint64(cost), uint64(gpus)
		for m := C.uint32_t(0); m < C.gpusched_preempt_plan_move_count(cl.plan); m++ {
			var id C.uint64_t
			var nodes *C.uint32_t
			var masks *C.uint64_t
			var k C.uint32_t
			C.gpusched_preempt_plan_move(cl.plan, m, &id, &nodes, &masks, &k)
			plan.Moves = append(plan.Moves, Move{JobID: uint64(id), Nodes: goPairs(nodes, masks, k)})
		}
	}
	return p, plan, nil
}

func (cl *Cluster) copyResult(t *C.gpusched_topo, fits bool, jobID uint64) *Placement {
	res := cl.res
	p := &Placement{Fits: fits, Reason: Reason(C.gpusched_place_result_reason(res)),
		Message: C.GoString(C.gpusched_place_result_message(res)), Committed: C.gpusched_place_result_committed(res) != 0,
		Domains: map[string][]int{}, JobID: jobID}
	var nodes *C.uint32_t
	var masks *C.uint64_t
	var n C.uint32_t
	C.gpusched_place_result_nodes(res, &nodes, &masks, &n)
	p.Nodes = goPairs(nodes, masks, n)
	var pods *C.uint32_t
	C.gpusched_place_result_pods(res, &pods, &n)
	for _, x := range unsafe.Slice(pods, int(n)) {
		p.Pods = append(p.Pods, int(x))
	}
	if fits {
		nl := C.gpusched_topo_level_count(t)
		for l := C.uint32_t(0); l < nl; l++ {
			var d *C.uint32_t
			C.gpusched_place_result_domains(res, l, &d, &n)
			var ds []int
			for _, x := range unsafe.Slice(d, int(n)) {
				ds = append(ds, int(x))
			}
			p.Domains[C.GoString(C.gpusched_topo_level_name(t, l))] = ds
		}
		var loc *C.uint32_t
		C.gpusched_place_result_locality(res, &loc, &n)
		for _, x := range unsafe.Slice(loc, int(n)) {
			p.Locality = append(p.Locality, uint32(x))
		}
	}
	return p
}

// Place finds where a gang goes (and with Commit makes it a running job).
// A gang that does not fit is not an error: Fits is false and Message
// says why. Errors are for invalid requests (unknown level, bad split,
// an id already running with Commit).
func (cl *Cluster) Place(req PlaceRequest) (*Placement, error) {
	p, _, err := cl.place(0, "Cluster.Place", req)
	return p, err
}

// Preempt plans the evictions that let a gang fit: eligible victims are
// preemptible jobs of lower priority than req.Job.Priority. With Commit
// the victims are released and the gang committed, atomically. When no
// set of victims makes room, the plan's Placement has Fits false.
func (cl *Cluster) Preempt(req PlaceRequest) (*PreemptPlan, error) {
	_, plan, err := cl.place(1, "Cluster.Preempt", req)
	return plan, err
}

// Defrag plans moves of movable jobs (priority not above the gang's) that
// make room for a gang without evicting anyone; with Commit they are
// carried out and the gang committed.
func (cl *Cluster) Defrag(req PlaceRequest) (*PreemptPlan, error) {
	_, plan, err := cl.place(2, "Cluster.Defrag", req)
	return plan, err
}

// Move plans moving a running job to the best GPUs for its shape now (a
// job on a failed node moves off it); with commit it moves.
func (cl *Cluster) Move(jobID uint64, commit bool) (*Placement, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.c == nil {
		return nil, closedError("Cluster.Move")
	}
	if rc := cl.ensurePlacer(); rc != 0 {
		return nil, newError("Cluster.Move", rc, "")
	}
	var flags C.uint32_t
	if commit {
		flags = C.GPUSCHED_PLACE_FLAG_COMMIT
	}
	rc := C.gpusched_placer_move(cl.placer, C.uint64_t(jobID), flags, cl.res)
	if rc != 0 && rc != C.GPUSCHED_ENOSPC {
		return nil, cl.placerError("Cluster.Move", rc)
	}
	return cl.copyResult(C.gpusched_cluster_topo(cl.c), rc == 0, jobID), nil
}
