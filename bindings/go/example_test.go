package gpusched_test

import (
	"fmt"

	"gpusched"
)

// Place a gang of 144 GPUs, one slice of 72 per NVL72 rack, on the
// built-in 1M-GPU cluster (the README's first program, in Go).
func Example() {
	topo, err := gpusched.TopologyPreset("gb200-nvl72-1m")
	if err != nil {
		panic(err)
	}
	defer topo.Close()
	cluster, err := gpusched.NewCluster(topo)
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	p, err := cluster.Place(gpusched.PlaceRequest{
		GPUs:   144,
		Slices: []gpusched.Slice{{GPUs: 72, Level: "rack"}},
		Job:    gpusched.Job{ID: 42},
		Commit: true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Fits, len(p.Nodes), p.Domains["rack"])
	// Output: true 36 [0 1]
}

// A gang that does not fit is an answer with an explanation.
func ExampleCluster_Place_doesNotFit() {
	topo, _ := gpusched.TopologyPreset("tiny")
	defer topo.Close()
	cluster, _ := gpusched.NewCluster(topo)
	defer cluster.Close()
	p, _ := cluster.Place(gpusched.PlaceRequest{GPUs: 40, Required: "rack"})
	fmt.Println(p.Fits, p.Reason, p.Message)
	// Output: false required required rack: the largest rack has 32 GPUs, 40 asked
}
