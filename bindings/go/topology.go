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

// Topology is an immutable cluster topology: named levels of domains
// (zone, block, rack, ...) above nodes with GPUs, GPU classes and labels.
// It is safe for concurrent use. Close drops the Go side's reference; a
// Cluster keeps its own, so the topology lives as long as it is used.
type Topology struct {
	mu sync.RWMutex // guards t against Close while a call runs
	t  *C.gpusched_topo
}

const errbufLen = 512

func newTopology(t *C.gpusched_topo) *Topology {
	topo := &Topology{t: t}
	runtime.SetFinalizer(topo, (*Topology).Close)
	return topo
}

// TopologyPreset builds a built-in topology: "tiny" (2 blocks x 2 racks x 4
// nodes x 8 GPUs), "h100-superpod", "gb200-nvl72-1m" (about a million
// GPUs). Presets lists them.
func TopologyPreset(name string) (*Topology, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var errbuf [errbufLen]C.char
	var t *C.gpusched_topo
	rc := C.gpusched_topo_preset(cname, nil, &t, &errbuf[0], errbufLen)
	if rc != 0 {
		return nil, newError("TopologyPreset", rc, C.GoString(&errbuf[0]))
	}
	return newTopology(t), nil
}

// Presets lists the names TopologyPreset accepts.
func Presets() []string {
	var names []string
	for i := C.uint32_t(0); ; i++ {
		n := C.gpusched_topo_preset_name(i)
		if n == nil {
			return names
		}
		names = append(names, C.GoString(n))
	}
}

// ParseTopology parses the topology text format (doc/topology-format.md).
// A syntax error is an *Error with code ErrParse whose message names the
// line and column.
func ParseTopology(text string) (*Topology, error) {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	var errbuf [errbufLen]C.char
	var t *C.gpusched_topo
	rc := C.gpusched_topo_parse(ctext, C.size_t(len(text)), nil, &t, &errbuf[0], errbufLen)
	if rc != 0 {
		return nil, newError("ParseTopology", rc, C.GoString(&errbuf[0]))
	}
	return newTopology(t), nil
}

// cStrings copies strings to C; free the result with freeCStrings.
func cStrings(s []string) **C.char {
	if len(s) == 0 {
		return nil
	}
	arr := (*[1 << 20]*C.char)(C.malloc(C.size_t(len(s)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	for i, v := range s {
		arr[i] = C.CString(v)
	}
	return &arr[0]
}

func freeCStrings(p **C.char, n int) {
	if p == nil {
		return
	}
	arr := (*[1 << 20]*C.char)(unsafe.Pointer(p))
	for i := 0; i < n; i++ {
		C.free(unsafe.Pointer(arr[i]))
	}
	C.free(unsafe.Pointer(p))
}

// UniformTopology builds a topology where every domain of a level has the
// same number of children: fanout has one count per level (the number of
// top-level domains first) plus the nodes per lowest domain. Names are
// generated: a domain is its level's first letter and index ("b3"), a
// node "n" and its index.
func UniformTopology(levels []string, fanout []uint32, gpusPerNode uint32, gpuClass string) (*Topology, error) {
	if len(fanout) != len(levels)+1 {
		return nil, &Error{Op: "UniformTopology", Code: ErrInvalid,
			Message: fmt.Sprintf("fanout needs %d counts (one per level, then nodes), got %d", len(levels)+1, len(fanout))}
	}
	names := cStrings(levels)
	defer freeCStrings(names, len(levels))
	cfan := (*C.uint32_t)(C.malloc(C.size_t(len(fanout)) * 4))
	defer C.free(unsafe.Pointer(cfan))
	fan := (*[1 << 20]C.uint32_t)(unsafe.Pointer(cfan))
	for i, f := range fanout {
		fan[i] = C.uint32_t(f)
	}
	var cclass *C.char
	if gpuClass != "" {
		cclass = C.CString(gpuClass)
		defer C.free(unsafe.Pointer(cclass))
	}
	var errbuf [errbufLen]C.char
	var t *C.gpusched_topo
	rc := C.gpusched_topo_uniform(C.uint32_t(len(levels)), names, cfan, C.uint32_t(gpusPerNode), cclass, nil, &t,
		&errbuf[0], errbufLen)
	if rc != 0 {
		return nil, newError("UniformTopology", rc, C.GoString(&errbuf[0]))
	}
	return newTopology(t), nil
}

// Close drops this Topology's reference. Clusters made from it keep
// theirs. Closing twice is harmless.
func (t *Topology) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil {
		C.gpusched_topo_unref(t.t)
		t.t = nil
		runtime.SetFinalizer(t, nil)
	}
	return nil
}

// use runs f with the C handle, or returns ErrClosed.
func (t *Topology) use(op string, f func(*C.gpusched_topo) error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.t == nil {
		return closedError(op)
	}
	return f(t.t)
}

// Levels returns the level names, top first.
func (t *Topology) Levels() []string {
	var out []string
	t.use("Topology.Levels", func(h *C.gpusched_topo) error {
		n := C.gpusched_topo_level_count(h)
		for l := C.uint32_t(0); l < n; l++ {
			out = append(out, C.GoString(C.gpusched_topo_level_name(h, l)))
		}
		return nil
	})
	return out
}

// Level finds a level by name; "node" gives the node level (len(Levels())).
func (t *Topology) Level(name string) (int, error) {
	level := -1
	err := t.use("Topology.Level", func(h *C.gpusched_topo) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var l C.uint32_t
		if C.gpusched_topo_level_find(h, cname, &l) == 0 {
			level = int(l)
			return nil
		}
		if name == "node" {
			level = int(C.gpusched_topo_level_count(h))
			return nil
		}
		return &Error{Op: "Topology.Level", Code: ErrNotFound, Message: fmt.Sprintf("no level %q", name)}
	})
	return level, err
}

// NodeCount returns the number of nodes.
func (t *Topology) NodeCount() int {
	n := 0
	t.use("", func(h *C.gpusched_topo) error { n = int(C.gpusched_topo_node_count(h)); return nil })
	return n
}

// GPUCount returns the number of GPUs.
func (t *Topology) GPUCount() uint64 {
	var n uint64
	t.use("", func(h *C.gpusched_topo) error { n = uint64(C.gpusched_topo_gpu_count(h)); return nil })
	return n
}

// DomainCount returns the number of domains of a level.
func (t *Topology) DomainCount(level int) int {
	n := 0
	t.use("", func(h *C.gpusched_topo) error {
		n = int(C.gpusched_topo_domain_count(h, C.uint32_t(level)))
		return nil
	})
	return n
}

// DomainNodes returns the node range of a domain: every domain is one
// contiguous range of nodes.
func (t *Topology) DomainNodes(level, domain int) (first, count int, err error) {
	err = t.use("Topology.DomainNodes", func(h *C.gpusched_topo) error {
		var f, c C.uint32_t
		rc := C.gpusched_topo_domain_nodes(h, C.uint32_t(level), C.uint32_t(domain), &f, &c)
		first, count = int(f), int(c)
		return newError("Topology.DomainNodes", rc, fmt.Sprintf("level %d, domain %d", level, domain))
	})
	return
}

// DomainName returns a domain's full path, for example "z0/b3/r12".
func (t *Topology) DomainName(level, domain int) (string, error) {
	var name string
	err := t.use("Topology.DomainName", func(h *C.gpusched_topo) error {
		var buf [(C.GPUSCHED_MAX_NAME + 1) * C.GPUSCHED_MAX_LEVELS]C.char
		rc := C.gpusched_topo_domain_name(h, C.uint32_t(level), C.uint32_t(domain), &buf[0], C.size_t(len(buf)))
		name = C.GoString(&buf[0])
		return newError("Topology.DomainName", rc, fmt.Sprintf("level %d, domain %d", level, domain))
	})
	return name, err
}

// DomainFind finds a domain of a level by its full path.
func (t *Topology) DomainFind(level int, path string) (int, error) {
	d := -1
	err := t.use("Topology.DomainFind", func(h *C.gpusched_topo) error {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var cd C.uint32_t
		rc := C.gpusched_topo_domain_find(h, C.uint32_t(level), cpath, &cd)
		d = int(cd)
		return newError("Topology.DomainFind", rc, fmt.Sprintf("no domain %q at level %d", path, level))
	})
	return d, err
}

// NodeDomain returns the domain of a node at a level.
func (t *Topology) NodeDomain(node, level int) (int, error) {
	d := -1
	err := t.use("Topology.NodeDomain", func(h *C.gpusched_topo) error {
		var cd C.uint32_t
		rc := C.gpusched_topo_node_domain(h, C.uint32_t(node), C.uint32_t(level), &cd)
		d = int(cd)
		return newError("Topology.NodeDomain", rc, fmt.Sprintf("node %d, level %d", node, level))
	})
	return d, err
}

// NodeName returns a node's name.
func (t *Topology) NodeName(node int) (string, error) {
	var name string
	err := t.use("Topology.NodeName", func(h *C.gpusched_topo) error {
		var buf [C.GPUSCHED_MAX_NAME + 1]C.char
		rc := C.gpusched_topo_node_name(h, C.uint32_t(node), &buf[0], C.size_t(len(buf)))
		name = C.GoString(&buf[0])
		return newError("Topology.NodeName", rc, fmt.Sprintf("node %d", node))
	})
	return name, err
}

// NodeFind finds a node by name.
func (t *Topology) NodeFind(name string) (int, error) {
	n := -1
	err := t.use("Topology.NodeFind", func(h *C.gpusched_topo) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var cn C.uint32_t
		rc := C.gpusched_topo_node_find(h, cname, &cn)
		n = int(cn)
		return newError("Topology.NodeFind", rc, fmt.Sprintf("no node %q", name))
	})
	return n, err
}

// NodeGPUs returns the GPUs of a node (0 if out of range).
func (t *Topology) NodeGPUs(node int) int {
	n := 0
	t.use("", func(h *C.gpusched_topo) error { n = int(C.gpusched_topo_node_gpus(h, C.uint32_t(node))); return nil })
	return n
}

// Classes returns the GPU class names; a class's index is its position.
func (t *Topology) Classes() []string {
	var out []string
	t.use("", func(h *C.gpusched_topo) error {
		for c := C.uint32_t(0); c < C.gpusched_topo_class_count(h); c++ {
			out = append(out, C.GoString(C.gpusched_topo_class_name(h, c)))
		}
		return nil
	})
	return out
}

// Labels returns the label names; label i is bit i of a node's mask.
func (t *Topology) Labels() []string {
	var out []string
	t.use("", func(h *C.gpusched_topo) error {
		for c := C.uint32_t(0); c < C.gpusched_topo_label_count(h); c++ {
			out = append(out, C.GoString(C.gpusched_topo_label_name(h, c)))
		}
		return nil
	})
	return out
}

// NodeClass returns the GPU class name of a node.
func (t *Topology) NodeClass(node int) string {
	var s string
	t.use("", func(h *C.gpusched_topo) error {
		if p := C.gpusched_topo_class_name(h, C.gpusched_topo_node_class(h, C.uint32_t(node))); p != nil {
			s = C.GoString(p)
		}
		return nil
	})
	return s
}

// NodeLabels returns the label names of a node.
func (t *Topology) NodeLabels(node int) []string {
	var out []string
	t.use("", func(h *C.gpusched_topo) error {
		mask := uint64(C.gpusched_topo_node_labels(h, C.uint32_t(node)))
		for b := 0; b < 64; b++ {
			if mask>>b&1 != 0 {
				out = append(out, C.GoString(C.gpusched_topo_label_name(h, C.uint32_t(b))))
			}
		}
		return nil
	})
	return out
}

// Export writes the topology in the text format; ParseTopology of the
// result gives an identical topology.
func (t *Topology) Export() (string, error) {
	var text string
	err := t.use("Topology.Export", func(h *C.gpusched_topo) error {
		var n C.size_t
		C.gpusched_topo_export(h, nil, 0, &n)
		buf := C.malloc(n + 1)
		defer C.free(buf)
		rc := C.gpusched_topo_export(h, (*C.char)(buf), n+1, &n)
		text = C.GoStringN((*C.char)(buf), C.int(n))
		return newError("Topology.Export", rc, "")
	})
	return text, err
}

// MemoryBytes returns the bytes of memory the topology holds.
func (t *Topology) MemoryBytes() uint64 {
	var n uint64
	t.use("", func(h *C.gpusched_topo) error { n = uint64(C.gpusched_topo_memory_bytes(h)); return nil })
	return n
}
