package gpusched

import (
	"bytes"
	"sync"
	"testing"
)

func TestGangInOneRack(t *testing.T) {
	c := cluster(t, tiny(t))
	p, err := c.Place(PlaceRequest{GPUs: 16, PodGPUs: 8, Required: "rack", Commit: true,
		Job: Job{ID: 1, Tenant: 2}})
	must(t, err)
	equal(t, p.Fits, true)
	equal(t, p.Committed, true)
	equal(t, p.Reason, ReasonOK)
	equal(t, p.GPUs(), 16)
	equal(t, len(p.Pods), 2)
	equal(t, len(p.Domains["rack"]), 1)
	equal(t, p.Locality, []uint32{1, 1, 2})
	alloc, err := c.Allocation(1)
	must(t, err)
	equal(t, alloc, p.Nodes)
	job, _ := c.Job(1)
	equal(t, job.Tenant, uint32(2))
	must(t, p.Err())
}

func TestPlanChangesNothing(t *testing.T) {
	c := cluster(t, tiny(t))
	before, _ := c.Snapshot()
	p, err := c.Place(PlaceRequest{GPUs: 24, PodGPUs: 8})
	must(t, err)
	equal(t, p.Fits, true)
	equal(t, p.Committed, false)
	after, _ := c.Snapshot()
	if !bytes.Equal(before, after) {
		t.Fatal("a plan-only placement changed the cluster")
	}
}

func TestDoesNotFitExplains(t *testing.T) {
	c := cluster(t, tiny(t))
	p, err := c.Place(PlaceRequest{GPUs: 40, Required: "rack"})
	must(t, err)
	equal(t, p.Fits, false)
	equal(t, p.Reason, ReasonRequired)
	equal(t, p.Message, "required rack: the largest rack has 32 GPUs, 40 asked")
	equal(t, len(p.Nodes), 0)
	wantCode(t, p.Err(), ErrNoSpace, "40 asked")
}

func TestSlicesOnTheMillionGPUPreset(t *testing.T) {
	topo, err := TopologyPreset("gb200-nvl72-1m")
	must(t, err)
	defer topo.Close()
	c := cluster(t, topo)
	p, err := c.Place(PlaceRequest{GPUs: 144, Slices: []Slice{{72, "rack"}}, Job: Job{ID: 42}, Commit: true})
	must(t, err)
	equal(t, p.Fits, true)
	equal(t, len(p.Nodes), 36)
	equal(t, len(p.Domains["rack"]), 2)
}

func TestConstraints(t *testing.T) {
	topo, err := ParseTopology(mixed)
	must(t, err)
	defer topo.Close()
	c := cluster(t, topo)
	names := func(p *Placement) []string {
		var out []string
		for _, n := range p.Nodes {
			name, _ := topo.NodeName(n.Node)
			out = append(out, name)
		}
		return out
	}
	p, err := c.Place(PlaceRequest{GPUs: 8, GPUClass: "a100"})
	must(t, err)
	equal(t, names(p), []string{"n5", "n6"})
	p, err = c.Place(PlaceRequest{GPUs: 8, PodGPUs: 8, LabelsRequired: []string{"nvme"}})
	must(t, err)
	equal(t, names(p), []string{"n0"})
	p, err = c.Place(PlaceRequest{GPUs: 8, PodGPUs: 8, LabelsForbidden: []string{"ib"}})
	must(t, err)
	equal(t, names(p), []string{"n4"})
	p, err = c.Place(PlaceRequest{GPUs: 16, WholeNodes: true, Avoid: []int{0, 1}})
	must(t, err)
	equal(t, names(p), []string{"n3", "n4"})
	p, err = c.Place(PlaceRequest{GPUs: 8, PodGPUs: 8, LabelsForbidden: []string{"ib"}, Avoid: []int{4}})
	must(t, err)
	equal(t, p.Fits, false)
	equal(t, p.Reason, ReasonSplit) // n5 and n6 are left, too small for a pod of 8
}

func TestArgumentErrors(t *testing.T) {
	c := cluster(t, tiny(t))
	_, err := c.Place(PlaceRequest{GPUs: 8, Required: "row"})
	wantCode(t, err, ErrNotFound, "Required")
	_, err = c.Place(PlaceRequest{GPUs: 8, GPUClass: "b200"})
	wantCode(t, err, ErrNotFound, "b200")
	_, err = c.Place(PlaceRequest{GPUs: 8, LabelsRequired: []string{"ib"}})
	wantCode(t, err, ErrNotFound, "ib")
	_, err = c.Place(PlaceRequest{GPUs: 0})
	wantCode(t, err, ErrInvalid, "")
	_, err = c.Place(PlaceRequest{GPUs: 8, Avoid: []int{99}})
	wantCode(t, err, ErrRange, "")
	_, err = c.Place(PlaceRequest{GPUs: 8, Job: Job{ID: 1}, Commit: true})
	must(t, err)
	_, err = c.Place(PlaceRequest{GPUs: 8, Job: Job{ID: 1}, Commit: true})
	wantCode(t, err, ErrExists, "")
}

func TestReservationAndCommit(t *testing.T) {
	c := cluster(t, tiny(t))
	must(t, c.Reserve(5, []NodeGPUs{{0, 0xff}, {1, 0xff}, {2, 0xff}, {3, 0xff}}))
	p, err := c.Place(PlaceRequest{GPUs: 32, Required: "rack", Job: Job{ID: 6}})
	must(t, err)
	equal(t, p.Domains["rack"], []int{1})
	p, err = c.Place(PlaceRequest{GPUs: 32, Required: "rack", Job: Job{ID: 5}, Commit: true})
	must(t, err)
	equal(t, p.Domains["rack"], []int{0})
	equal(t, len(c.Reservations()), 0)
}

func TestConcurrentPlacementsOnOneCluster(t *testing.T) {
	c := cluster(t, tiny(t))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			p, err := c.Place(PlaceRequest{GPUs: 8, PodGPUs: 8, Job: Job{ID: id}, Commit: true})
			if err == nil {
				err = p.Err()
			}
			errs <- err
		}(uint64(i + 1))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	equal(t, c.FreeGPUs(), uint64(0))
	must(t, c.Check())
}
