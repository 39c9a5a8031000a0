package gpusched

import (
	"bytes"
	"testing"
)

func TestEmpty(t *testing.T) {
	c := cluster(t, tiny(t))
	equal(t, c.FreeGPUs(), uint64(128))
	equal(t, len(c.Jobs()), 0)
	must(t, c.Check())
	s, err := c.NodeState(3)
	must(t, err)
	equal(t, s, NodeState{Free: 0xff, Health: NodeUp})
}

func TestAllocateAndRelease(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Allocate(Job{ID: 7, Priority: 3, Tenant: 2, Preemptible: true},
		[]NodeGPUs{{0, 0xff}, {1, 0x0f}}))
	equal(t, c.FreeGPUs(), uint64(116))
	equal(t, c.Jobs(), []uint64{7})
	job, err := c.Job(7)
	must(t, err)
	equal(t, job, Job{ID: 7, Priority: 3, Tenant: 2, Preemptible: true})
	alloc, err := c.Allocation(7)
	must(t, err)
	equal(t, alloc, []NodeGPUs{{0, 0xff}, {1, 0x0f}})
	job.Priority = 9
	must(t, c.UpdateJob(job))
	job, _ = c.Job(7)
	equal(t, job.Priority, int32(9))
	must(t, c.Release(7))
	equal(t, c.FreeGPUs(), uint64(128))
	_, err = c.Job(7)
	wantCode(t, err, ErrNotFound, "")
}

func TestAllocateErrorsChangeNothing(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Allocate(Job{ID: 1}, []NodeGPUs{{0, 0x3}}))
	before, _ := c.Snapshot()
	wantCode(t, c.Allocate(Job{ID: 2}, []NodeGPUs{{1, 0xff}, {0, 0x1}}), ErrInvalid, "")
	wantCode(t, c.Allocate(Job{ID: 2}, []NodeGPUs{{1, 0xff}, {0, 0x4}}), ErrInvalid, "")
	wantCode(t, c.Allocate(Job{ID: 2}, []NodeGPUs{{0, 0x2}}), ErrBusy, "")
	wantCode(t, c.Allocate(Job{ID: 1}, []NodeGPUs{{2, 0x1}}), ErrExists, "")
	wantCode(t, c.Allocate(Job{ID: 2}, []NodeGPUs{{99, 0x1}}), ErrRange, "")
	after, _ := c.Snapshot()
	if !bytes.Equal(before, after) {
		t.Fatal("a failed allocation changed the cluster")
	}
}

func TestNodeHealth(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Allocate(Job{ID: 5}, []NodeGPUs{{2, 0x1}}))
	hit, err := c.SetNodeHealth(2, NodeDown)
	must(t, err)
	equal(t, hit, []uint64{5})
	s, _ := c.NodeState(2)
	equal(t, s.Health, NodeDown)
	equal(t, c.FreeGPUs(), uint64(120))
	hit, err = c.SetNodeHealth(2, NodeUp)
	must(t, err)
	equal(t, c.FreeGPUs(), uint64(127))
	equal(t, NodeDraining.String(), "draining")
}

func TestReservations(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Reserve(9, []NodeGPUs{{4, 0xff}}))
	equal(t, c.Reservations(), []uint64{9})
	s, _ := c.NodeState(4)
	equal(t, s.Reserved, uint64(0xff))
	wantCode(t, c.Allocate(Job{ID: 8}, []NodeGPUs{{4, 0x1}}), ErrBusy, "")
	must(t, c.Allocate(Job{ID: 9}, []NodeGPUs{{4, 0x1}}))
	equal(t, len(c.Reservations()), 0)
	must(t, c.ReleaseToReservation(9, 10))
	equal(t, c.Reservations(), []uint64{10})
	must(t, c.Unreserve(10))
	equal(t, c.FreeGPUs(), uint64(128))
}

func TestFrag(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Allocate(Job{ID: 1}, []NodeGPUs{{0, 0x1}}))
	f, err := c.Frag(0)
	must(t, err)
	equal(t, f, Frag{FreeDomains: 1, StrandedGPUs: 63, GangGPUs: 64})
	f, err = c.Frag(2)
	must(t, err)
	equal(t, f, Frag{FreeDomains: 15, StrandedGPUs: 7, GangGPUs: 120})
	_, err = c.Frag(3)
	wantCode(t, err, ErrRange, "")
}

func TestSnapshotRestore(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Allocate(Job{ID: 3, Movable: true}, []NodeGPUs{{5, 0xf0}}))
	snap, err := c.Snapshot()
	must(t, err)
	r, err := RestoreCluster(snap)
	must(t, err)
	defer r.Close()
	again, err := r.Snapshot()
	must(t, err)
	if !bytes.Equal(snap, again) {
		t.Fatal("a restored cluster snapshots to other bytes")
	}
	job, _ := r.Job(3)
	equal(t, job.Movable, true)
	equal(t, r.Topology().NodeCount(), 16)
}

func TestRestoreRejectsBadImages(t *testing.T) {
	c := cluster(t, tiny(t))
	snap, _ := c.Snapshot()
	snap[40] ^= 0xff
	_, err := RestoreCluster(snap)
	wantCode(t, err, ErrCorrupt, "")
	_, err = RestoreCluster(nil)
	if err == nil {
		t.Fatal("an empty image restored")
	}
}

func TestClusterOutlivesTopologyClose(t *testing.T) {
	topo, err := TopologyPreset("tiny")
	must(t, err)
	c, err := NewCluster(topo)
	must(t, err)
	defer c.Close()
	topo.Close()
	p, err := c.Place(PlaceRequest{GPUs: 8, PodGPUs: 8})
	must(t, err)
	equal(t, p.Fits, true)
	equal(t, c.Topology().NodeCount(), 16)
}

func TestClusterClosed(t *testing.T) {
	topo := tiny(t)
	c, err := NewCluster(topo)
	must(t, err)
	must(t, c.Close())
	must(t, c.Close())
	wantCode(t, c.Release(1), ErrState, "closed")
	_, err = c.Place(PlaceRequest{GPUs: 8})
	wantCode(t, err, ErrState, "closed")
}
