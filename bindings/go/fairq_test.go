package gpusched

import (
	"math"
	"testing"
)

func queue(t *testing.T, tenants uint32) *FairQueue {
	q, err := NewFairQueue(tenants)
	must(t, err)
	t.Cleanup(func() { q.Close() })
	return q
}

func TestDefaultsAndPolicies(t *testing.T) {
	q := queue(t, 8)
	w, _ := q.Param(ParamWeightBacklog)
	equal(t, w, 0.1)
	w, _ = q.Param(ParamWeightWait)
	equal(t, w, 0.9)
	must(t, q.SetPolicy(PolicyStateful))
	w, _ = q.Param(ParamWeightVTime)
	equal(t, w, 1.0)
	must(t, q.SetParam(ParamWeightPred, 0.5))
	w, _ = q.Param(ParamWeightPred)
	equal(t, w, 0.5)
	lo, hi, err := ParamBounds(ParamWeightWait)
	must(t, err)
	equal(t, [2]float64{lo, hi}, [2]float64{0, 1e6})
	wantCode(t, q.SetParam(ParamWeightWait, -1), ErrRange, "")
}

func TestPollOldestFirstUnderDES(t *testing.T) {
	q := queue(t, 4)
	must(t, q.Enqueue(Task{ID: 10, Tenant: 0, EnqueueTime: 0}))
	must(t, q.Enqueue(Task{ID: 11, Tenant: 1, EnqueueTime: 1}))
	must(t, q.Enqueue(Task{ID: 12, Tenant: 1, EnqueueTime: 2, Type: 3, WorkSize: 100}))
	peek, err := q.Peek(5, AllTypes)
	must(t, err)
	d, err := q.Poll(5, AllTypes)
	must(t, err)
	equal(t, d.TaskID, peek.TaskID)
	equal(t, d.Time, 5.0)
	equal(t, d.Queued, uint64(3))
	equal(t, d.Candidates, uint64(3))
	if math.Abs(d.Score-(0.1*d.Backlog+0.9*d.Wait)) > 1e-12 {
		t.Fatalf("score %v is not 0.1 backlog + 0.9 wait", d)
	}
	queued, running, err := q.Counts()
	must(t, err)
	equal(t, [2]uint64{queued, running}, [2]uint64{2, 1})
	// A worker of type 3 only gets task 12.
	d, err = q.Poll(6, 1<<3)
	must(t, err)
	equal(t, d.TaskID, uint64(12))
}

func TestEmptyPoll(t *testing.T) {
	q := queue(t, 2)
	_, err := q.Poll(0, AllTypes)
	wantCode(t, err, ErrEmpty, "")
}

func TestEnqueueErrors(t *testing.T) {
	q := queue(t, 4)
	must(t, q.Enqueue(Task{ID: 1, EnqueueTime: 10}))
	wantCode(t, q.Enqueue(Task{ID: 1, EnqueueTime: 11}), ErrExists, "")
	wantCode(t, q.Enqueue(Task{ID: 2, EnqueueTime: 9}), ErrRange, "")
	if err := q.Enqueue(Task{ID: 2, Tenant: 4, EnqueueTime: 11}); err == nil {
		t.Fatal("tenant 4 of 4 accepted")
	}
	if err := q.Enqueue(Task{ID: 2, Type: 64, EnqueueTime: 11}); err == nil {
		t.Fatal("type 64 accepted")
	}
	must(t, q.Cancel(1))
	wantCode(t, q.Cancel(1), ErrNotFound, "")
}

func TestPredictorLearnsFromCompletions(t *testing.T) {
	q := queue(t, 4)
	must(t, q.SetParam(ParamPredAlpha, 1))
	for i := 0; i < 5; i++ {
		must(t, q.Enqueue(Task{ID: uint64(i), Tenant: 1, Type: 2, EnqueueTime: float64(i)}))
		d, err := q.Poll(float64(i), AllTypes)
		must(t, err)
		must(t, q.Complete(d.TaskID, 10))
	}
	p, err := q.Predict(1, 2, 0)
	must(t, err)
	if math.Abs(p-10) > 5 {
		t.Fatalf("predicted %v, want about 10", p)
	}
	s, err := q.Tenant(1, TenantService)
	must(t, err)
	if s <= 0 {
		t.Fatal("no service recorded")
	}
}

func TestFairQueueClosed(t *testing.T) {
	q, err := NewFairQueue(2)
	must(t, err)
	must(t, q.Close())
	wantCode(t, q.Enqueue(Task{ID: 1}), ErrState, "closed")
	_, err = NewFairQueue(0)
	wantCode(t, err, ErrRange, "")
}
