package gpusched

import (
	"bytes"
	"testing"
)

// fill puts one whole-node job on every node of tiny: job 100+n,
// preemptible, priority 0, cost 10 (3 for node 5).
func fill(t *testing.T, c *Cluster) {
	for n := 0; n < 16; n++ {
		cost := uint64(10)
		if n == 5 {
			cost = 3
		}
		must(t, c.Allocate(Job{ID: uint64(100 + n), Preemptible: true, CostHint: cost},
			[]NodeGPUs{{n, AllGPUs(8)}}))
	}
}

func TestFitsAsTheClusterIs(t *testing.T) {
	c := cluster(t, tiny(t))
	plan, err := c.Preempt(PlaceRequest{GPUs: 16, PodGPUs: 8, Job: Job{ID: 1, Priority: 2}})
	must(t, err)
	equal(t, plan.Placement.Fits, true)
	equal(t, len(plan.Victims), 0)
}

func TestCheapestVictim(t *testing.T) {
	c := cluster(t, tiny(t))
	fill(t, c)
	plan, err := c.Preempt(PlaceRequest{GPUs: 8, Job: Job{Priority: 1}})
	must(t, err)
	equal(t, plan.Victims, []uint64{105})
	equal(t, [2]uint64{plan.Cost, plan.GPUs}, [2]uint64{3, 8})
	equal(t, plan.Placement.Nodes, []NodeGPUs{{5, 0xff}})
}

func TestCommitEvictsTheVictims(t *testing.T) {
	c := cluster(t, tiny(t))
	fill(t, c)
	planned, err := c.Preempt(PlaceRequest{GPUs: 16, PodGPUs: 8, Job: Job{ID: 1, Priority: 2}})
	must(t, err)
	done, err := c.Preempt(PlaceRequest{GPUs: 16, PodGPUs: 8, Job: Job{ID: 1, Priority: 2, Tenant: 4},
		Commit: true})
	must(t, err)
	equal(t, done.Victims, planned.Victims)
	equal(t, done.Placement.Committed, true)
	for _, v := range done.Victims {
		if _, err := c.Job(v); err == nil {
			t.Fatalf("victim %d still runs", v)
		}
	}
	job, err := c.Job(1)
	must(t, err)
	equal(t, job.Tenant, uint32(4))
	must(t, c.Check())
}

func TestNoLowerPriority(t *testing.T) {
	c := cluster(t, tiny(t))
	fill(t, c)
	before, _ := c.Snapshot()
	plan, err := c.Preempt(PlaceRequest{GPUs: 8, Job: Job{Priority: 0}, Commit: true})
	must(t, err)
	equal(t, plan.Placement.Fits, false)
	wantCode(t, plan.Placement.Err(), ErrNoSpace, "")
	after, _ := c.Snapshot()
	if !bytes.Equal(before, after) {
		t.Fatal("a failed preemption changed the cluster")
	}
}

// The scenario of tests/python/test_defrag.py: 2 zones x 4 racks x 4 nodes
// x 8 GPUs, every rack's first node holds a job, movable in zone 0.
func fragmented(t *testing.T) *Cluster {
	topo, err := UniformTopology([]string{"zone", "rack"}, []uint32{2, 4, 4}, 8, "")
	must(t, err)
	t.Cleanup(func() { topo.Close() })
	c := cluster(t, topo)
	prio := []int32{5, 6, 7, 9}
	for i := 0; i < 4; i++ {
		must(t, c.Allocate(Job{ID: uint64(100 + i), Priority: prio[i], Movable: true, Tenant: uint32(i)},
			[]NodeGPUs{{i * 4, 0xff}}))
		must(t, c.Allocate(Job{ID: uint64(200 + i), Preemptible: true}, []NodeGPUs{{(4 + i) * 4, 0xff}}))
	}
	return c
}

func TestDefragOneMoveFreesARack(t *testing.T) {
	c := fragmented(t)
	gang := PlaceRequest{GPUs: 32, WholeNodes: true, Required: "rack", Job: Job{ID: 1, Priority: 7}}
	p, err := c.Place(gang)
	must(t, err)
	equal(t, p.Fits, false)
	plan, err := c.Defrag(gang)
	must(t, err)
	equal(t, plan.Placement.Fits, true)
	equal(t, len(plan.Moves), 1)
	equal(t, len(plan.Victims), 0)
	mover, err := c.Job(plan.Moves[0].JobID)
	must(t, err)
	if !mover.Movable || mover.Priority > 7 {
		t.Fatalf("mover %+v is not eligible", mover)
	}
	gang.Commit = true
	done, err := c.Defrag(gang)
	must(t, err)
	equal(t, done.Moves, plan.Moves)
	alloc, _ := c.Allocation(plan.Moves[0].JobID)
	equal(t, alloc, plan.Moves[0].Nodes)
	must(t, c.Check())
}

func TestMoveRepairAfterANodeFails(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Allocate(Job{ID: 3}, []NodeGPUs{{0, 0xff}, {1, 0xff}}))
	_, err := c.SetNodeHealth(1, NodeDown)
	must(t, err)
	p, err := c.Move(3, true)
	must(t, err)
	equal(t, p.Fits, true)
	alloc, _ := c.Allocation(3)
	for _, a := range alloc {
		if a.Node == 1 {
			t.Fatal("the job stayed on the failed node")
		}
	}
	_, err = c.Move(99, false)
	wantCode(t, err, ErrNotFound, "")
}
