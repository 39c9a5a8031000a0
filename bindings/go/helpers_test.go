package gpusched

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// mixed is the topology text the CLI tests use too: mixed classes and labels.
const mixed = `levels block rack
classes h100 a100
labels ib nvme
node b0/r0 n0 gpus=8 class=h100 labels=ib,nvme
node b0/r0 n1 gpus=8 class=h100 labels=ib
node b0/r0 n2 gpus=8 class=h100 labels=ib
node b0/r1 n3 gpus=8 class=h100 labels=ib
node b0/r1 n4 gpus=8 class=h100
node b1/r0 n5 gpus=4 class=a100 labels=nvme
node b1/r0 n6 gpus=4 class=a100
`

func tiny(t *testing.T) *Topology {
	t.Helper()
	topo, err := TopologyPreset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	return topo
}

func cluster(t *testing.T, topo *Topology) *Cluster {
	t.Helper()
	c, err := NewCluster(topo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code Code, msgPart string) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("want %s, got %v", code.Name(), err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("want an *Error with code %s, got %#v", code.Name(), err)
	}
	if msgPart != "" && !strings.Contains(err.Error(), msgPart) {
		t.Fatalf("error %q does not mention %q", err, msgPart)
	}
}

func equal(t *testing.T, got, want interface{}) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}
