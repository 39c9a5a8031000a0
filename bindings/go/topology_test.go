package gpusched

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	major, minor, _ := Version()
	equal(t, [2]int{major, minor}, [2]int{0, 2})
	equal(t, VersionString(), HeaderVersion())
}

func TestPresetList(t *testing.T) {
	equal(t, Presets(), []string{"gb200-nvl72-1m", "h100-superpod", "tiny"})
}

func TestTiny(t *testing.T) {
	topo := tiny(t)
	equal(t, topo.Levels(), []string{"block", "rack"})
	equal(t, topo.NodeCount(), 16)
	equal(t, topo.GPUCount(), uint64(128))
	equal(t, topo.DomainCount(0), 2)
	equal(t, topo.DomainCount(1), 4)
	equal(t, topo.Classes(), []string{"h100"})
	if topo.MemoryBytes() == 0 {
		t.Fatal("no memory reported")
	}
}

func TestUnknownPreset(t *testing.T) {
	_, err := TopologyPreset("nope")
	wantCode(t, err, ErrNotFound, "nope")
}

func TestBigPreset(t *testing.T) {
	topo, err := TopologyPreset("gb200-nvl72-1m")
	must(t, err)
	defer topo.Close()
	equal(t, topo.GPUCount(), uint64(1032192))
	equal(t, topo.Levels(), []string{"zone", "block", "rack"})
}

func TestUniformShape(t *testing.T) {
	topo, err := UniformTopology([]string{"zone", "rack"}, []uint32{2, 4, 4}, 8, "h100")
	must(t, err)
	defer topo.Close()
	equal(t, topo.NodeCount(), 32)
	equal(t, topo.DomainCount(1), 8)
	name, err := topo.DomainName(1, 5)
	must(t, err)
	equal(t, name, "z1/r1")
	_, err = UniformTopology([]string{"zone"}, []uint32{2}, 8, "")
	wantCode(t, err, ErrInvalid, "fanout")
}

func TestNodeAndDomain(t *testing.T) {
	topo := tiny(t)
	name, err := topo.NodeName(5)
	must(t, err)
	equal(t, name, "n5")
	n, err := topo.NodeFind("n5")
	must(t, err)
	equal(t, n, 5)
	_, err = topo.NodeFind("n99")
	wantCode(t, err, ErrNotFound, "n99")
	d, err := topo.DomainFind(1, "b0/r1")
	must(t, err)
	equal(t, d, 1)
	first, count, err := topo.DomainNodes(1, d)
	must(t, err)
	equal(t, [2]int{first, count}, [2]int{4, 4})
	dom, err := topo.NodeDomain(5, 1)
	must(t, err)
	equal(t, dom, 1)
	_, _, err = topo.DomainNodes(1, 99)
	wantCode(t, err, ErrRange, "")
	level, err := topo.Level("rack")
	must(t, err)
	equal(t, level, 1)
	level, err = topo.Level("node")
	must(t, err)
	equal(t, level, 2)
	_, err = topo.Level("row")
	wantCode(t, err, ErrNotFound, "row")
}

func TestClassesAndLabels(t *testing.T) {
	topo, err := ParseTopology(mixed)
	must(t, err)
	defer topo.Close()
	equal(t, topo.Classes(), []string{"h100", "a100"})
	equal(t, topo.Labels(), []string{"ib", "nvme"})
	equal(t, topo.NodeClass(5), "a100")
	equal(t, topo.NodeLabels(0), []string{"ib", "nvme"})
	equal(t, topo.NodeGPUs(6), 4)
}

func TestExportParseRoundTrip(t *testing.T) {
	topo, err := ParseTopology(mixed)
	must(t, err)
	defer topo.Close()
	text, err := topo.Export()
	must(t, err)
	back, err := ParseTopology(text)
	must(t, err)
	defer back.Close()
	again, err := back.Export()
	must(t, err)
	equal(t, again, text)
	equal(t, back.NodeCount(), 7)
}

func TestParseErrorHasPosition(t *testing.T) {
	_, err := ParseTopology("levels block rack\nnode b0/r0 n0 gpus=x\n")
	wantCode(t, err, ErrParse, "line 2")
	if !strings.Contains(err.Error(), "column") {
		t.Fatalf("no column in %q", err)
	}
}

func TestTopologyClosed(t *testing.T) {
	topo, err := TopologyPreset("tiny")
	must(t, err)
	must(t, topo.Close())
	must(t, topo.Close())
	_, err = topo.NodeName(0)
	wantCode(t, err, ErrState, "closed")
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("%v is not ErrClosed", err)
	}
	equal(t, topo.NodeCount(), 0)
	_, err = NewCluster(topo)
	wantCode(t, err, ErrState, "closed")
}

func TestFinalizersFreeHandles(t *testing.T) {
	for i := 0; i < 200; i++ {
		topo, err := TopologyPreset("tiny")
		must(t, err)
		c, err := NewCluster(topo)
		must(t, err)
		if _, err := c.Place(PlaceRequest{GPUs: 8}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
}
