package gpusched

/*
#include <gpusched/gpusched.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Param is a fair-queue parameter (gpusched_fairq_param).
type Param uint32

// Fair-queue parameters; Bounds gives each one's range.
const (
	ParamWeightBacklog Param = C.GPUSCHED_FAIRQ_PARAM_W_BACKLOG
	ParamWeightWait    Param = C.GPUSCHED_FAIRQ_PARAM_W_WAIT
	ParamWeightVTime   Param = C.GPUSCHED_FAIRQ_PARAM_W_VTIME
	ParamWeightPred    Param = C.GPUSCHED_FAIRQ_PARAM_W_PRED
	ParamHalfLife      Param = C.GPUSCHED_FAIRQ_PARAM_HALF_LIFE
	ParamPredAlpha     Param = C.GPUSCHED_FAIRQ_PARAM_PRED_ALPHA
	ParamPredDefault   Param = C.GPUSCHED_FAIRQ_PARAM_PRED_DEFAULT
	ParamScan          Param = C.GPUSCHED_FAIRQ_PARAM_SCAN
	ParamLog           Param = C.GPUSCHED_FAIRQ_PARAM_LOG
	ParamExplore       Param = C.GPUSCHED_FAIRQ_PARAM_EXPLORE
	ParamSeed          Param = C.GPUSCHED_FAIRQ_PARAM_SEED
	ParamLagCap        Param = C.GPUSCHED_FAIRQ_PARAM_LAG_CAP
)

// Policy is a preset of the four weights (gpusched_fairq_policy).
type Policy uint32

// Scoring policies.
const (
	PolicyDES      Policy = C.GPUSCHED_FAIRQ_POLICY_DES      // 0.1 backlog + 0.9 wait, memoryless
	PolicyStateful Policy = C.GPUSCHED_FAIRQ_POLICY_STATEFUL // adds the per-tenant virtual time
	PolicyLagCap   Policy = C.GPUSCHED_FAIRQ_POLICY_LAGCAP   // oldest first among tenants within the lag cap
)

// TenantValue names a per-tenant figure (gpusched_fairq_tenant_value).
type TenantValue uint32

// Per-tenant figures.
const (
	TenantWeight  TenantValue = C.GPUSCHED_FAIRQ_TENANT_WEIGHT
	TenantBacklog TenantValue = C.GPUSCHED_FAIRQ_TENANT_BACKLOG
	TenantRunning TenantValue = C.GPUSCHED_FAIRQ_TENANT_RUNNING
	TenantVTime   TenantValue = C.GPUSCHED_FAIRQ_TENANT_VTIME
	TenantService TenantValue = C.GPUSCHED_FAIRQ_TENANT_SERVICE
)

// AllTypes is the worker type mask that accepts every task type.
const AllTypes = ^uint64(0)

// Task is a task to enqueue.
type Task struct {
	ID          uint64
	Tenant      uint32
	Type        uint32  // 0..63
	EnqueueTime float64 // seconds on the caller's clock, never decreasing
	WorkSize    float64 // 0: unknown
	Predicted   float64 // predicted seconds; 0: the library predicts
}

// Decision is what a poll chose and why.
type Decision struct {
	TaskID     uint64
	Tenant     uint32
	Type       uint32
	Time       float64
	Score      float64
	Backlog    float64 // the score's terms, before their weights
	Wait       float64
	VTime      float64
	Pred       float64
	Predicted  float64
	Candidates uint64
	Queued     uint64
}

// FairQueue is a multi-tenant task queue scored on every poll. Its
// methods lock a mutex; the library never reads a clock: times are the
// caller's.
type FairQueue struct {
	mu sync.Mutex
	q  *C.gpusched_fairq
}

// NewFairQueue creates a queue for tenants 0..maxTenants-1 with the DES
// policy.
func NewFairQueue(maxTenants uint32) (*FairQueue, error) {
	var q *C.gpusched_fairq
	if rc := C.gpusched_fairq_new(C.uint32_t(maxTenants), nil, &q); rc != 0 {
		return nil, newError("NewFairQueue", rc, "")
	}
	fq := &FairQueue{q: q}
	runtime.SetFinalizer(fq, (*FairQueue).Close)
	return fq, nil
}

// Close frees the queue. Closing twice is harmless.
func (fq *FairQueue) Close() error {
	fq.mu.Lock()
	defer fq.mu.Unlock()
	if fq.q != nil {
		C.gpusched_fairq_free(fq.q)
		fq.q = nil
		runtime.SetFinalizer(fq, nil)
	}
	return nil
}

func (fq *FairQueue) do(op string, f func(q *C.gpusched_fairq) C.int) error {
	fq.mu.Lock()
	defer fq.mu.Unlock()
	if fq.q == nil {
		return closedError(op)
	}
	if rc := f(fq.q); rc != 0 {
		return newError(op, rc, C.GoString(C.gpusched_fairq_errmsg(fq.q)))
	}
	return nil
}

// ParamBounds returns the accepted range of a parameter.
func ParamBounds(p Param) (lo, hi float64, err error) {
	var l, h C.double
	if rc := C.gpusched_fairq_param_bounds(C.uint32_t(p), &l, &h); rc != 0 {
		return 0, 0, newError("ParamBounds", rc, "")
	}
	return float64(l), float64(h), nil
}

// SetPolicy sets the four weights to a preset.
func (fq *FairQueue) SetPolicy(p Policy) error {
	return fq.do("FairQueue.SetPolicy", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_policy_set(q, C.uint32_t(p))
	})
}

// SetParam sets a parameter.
func (fq *FairQueue) SetParam(p Param, v float64) error {
	return fq.do("FairQueue.SetParam", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_param_set(q, C.uint32_t(p), C.double(v))
	})
}

// Param reads a parameter.
func (fq *FairQueue) Param(p Param) (float64, error) {
	var v C.double
	err := fq.do("FairQueue.Param", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_param_get(q, C.uint32_t(p), &v)
	})
	return float64(v), err
}

// SetTenantWeight sets a tenant's share weight.
func (fq *FairQueue) SetTenantWeight(tenant uint32, w float64) error {
	return fq.do("FairQueue.SetTenantWeight", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_tenant_weight_set(q, C.uint32_t(tenant), C.double(w))
	})
}

// Tenant reads a per-tenant figure.
func (fq *FairQueue) Tenant(tenant uint32, what TenantValue) (float64, error) {
	var v C.double
	err := fq.do("FairQueue.Tenant", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_tenant_get(q, C.uint32_t(tenant), C.uint32_t(what), &v)
	})
	return float64(v), err
}

// Enqueue adds a task.
func (fq *FairQueue) Enqueue(t Task) error {
	ct := C.gpusched_fairq_task{size: C.uint32_t(unsafe.Sizeof(C.gpusched_fairq_task{}))}
	ct.id, ct.tenant, ct._type = C.uint64_t(t.ID), C.uint32_t(t.Tenant), C.uint32_t(t.Type)
	ct.enqueue_time, ct.work_size, ct.predicted = C.double(t.EnqueueTime), C.double(t.WorkSize), C.double(t.Predicted)
	return fq.do("FairQueue.Enqueue", func(q *C.gpusched_fairq) C.int { return C.gpusched_fairq_enqueue(q, &ct) })
}

// Cancel removes a queued task.
func (fq *FairQueue) Cancel(id uint64) error {
	return fq.do("FairQueue.Cancel", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_cancel(q, C.uint64_t(id))
	})
}

func decisionFromC(d *C.gpusched_fairq_decision) Decision {
	return Decision{TaskID: uint64(d.task_id), Tenant: uint32(d.tenant), Type: uint32(d._type), Time: float64(d.time),
		Score: float64(d.score), Backlog: float64(d.term_backlog), Wait: float64(d.term_wait),
		VTime: float64(d.term_vtime), Pred: float64(d.term_pred), Predicted: float64(d.predicted),
		Candidates: uint64(d.candidates), Queued: uint64(d.queued)}
}

// Poll chooses the best task for a worker that runs the types in
// typeMask, removes it from the queue and records it as running. An empty
// queue (or none of the worker's types) gives an error wrapping ErrEmpty.
func (fq *FairQueue) Poll(now float64, typeMask uint64) (Decision, error) {
	d := C.gpusched_fairq_decision{size: C.uint32_t(unsafe.Sizeof(C.gpusched_fairq_decision{}))}
	var id C.uint64_t
	err := fq.do("FairQueue.Poll", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_poll(q, C.double(now), C.uint64_t(typeMask), &id, &d)
	})
	return decisionFromC(&d), err
}

// Peek reports what Poll would choose, changing nothing.
func (fq *FairQueue) Peek(now float64, typeMask uint64) (Decision, error) {
	d := C.gpusched_fairq_decision{size: C.uint32_t(unsafe.Sizeof(C.gpusched_fairq_decision{}))}
	var id C.uint64_t
	err := fq.do("FairQueue.Peek", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_peek(q, C.double(now), C.uint64_t(typeMask), &id, &d)
	})
	return decisionFromC(&d), err
}

// Complete reports that a polled task finished after duration seconds.
func (fq *FairQueue) Complete(id uint64, duration float64) error {
	return fq.do("FairQueue.Complete", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_complete(q, C.uint64_t(id), C.double(duration))
	})
}

// Predict returns the duration enqueue would predict for such a task.
func (fq *FairQueue) Predict(tenant, typ uint32, workSize float64) (float64, error) {
	var s C.double
	err := fq.do("FairQueue.Predict", func(q *C.gpusched_fairq) C.int {
		return C.gpusched_fairq_predict(q, C.uint32_t(tenant), C.uint32_t(typ), C.double(workSize), &s)
	})
	return float64(s), err
}

// Counts returns the queued and running tasks.
func (fq *FairQueue) Counts() (queued, running uint64, err error) {
	var qd, rn C.uint64_t
	err = fq.do("FairQueue.Counts", func(q *C.gpusched_fairq) C.int { return C.gpusched_fairq_count(q, &qd, &rn) })
	return uint64(qd), uint64(rn), err
}
