// Command k8s-filter-score shows libgpusched behind the extension points of
// a Kubernetes scheduler-framework plugin, without importing Kubernetes:
// the types below have the shape of the framework's (CycleState, Status,
// PreFilter, Filter, Score, Reserve, PostFilter) so that the calls can be
// moved into a real plugin as they are.
//
// The plugin schedules pod groups (gangs) all or nothing:
//   - PreFilter plans the whole group once with Cluster.Place (what-if)
//     and keeps the plan in the cycle state: cost follows the answer,
//     not the number of nodes Filter is then called for;
//   - Filter admits a node only if the plan puts one of the group's pods
//     there, and otherwise says why in the plan's own words;
//   - Score prefers the nodes that hold the most of the group's pods;
//   - Reserve commits the group when its first pod is bound;
//   - PostFilter, for a group that does not fit, plans a preemption and
//     names the victims (the framework would nominate a node).
//
// Usage: k8s-filter-score [TOPOLOGY-FILE]   (default: the "tiny" preset)
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"gpusched"
)

// ---- the framework's shapes ------------------------------------------------

// StatusCode is the outcome of a plugin call.
type StatusCode int

const (
	Success StatusCode = iota
	Unschedulable
	Error
)

// Status is a plugin call's outcome with its reasons.
type Status struct {
	Code    StatusCode
	Reasons []string
}

func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

func (s *Status) String() string {
	if s.IsSuccess() {
		return "Success"
	}
	return [...]string{"Success", "Unschedulable", "Error"}[s.Code] + ": " + strings.Join(s.Reasons, "; ")
}

func unschedulable(reason string, args ...interface{}) *Status {
	return &Status{Code: Unschedulable, Reasons: []string{fmt.Sprintf(reason, args...)}}
}

// CycleState carries data between the extension points of one cycle.
type CycleState map[string]interface{}

// Pod is the part of a pod the plugin reads.
type Pod struct {
	Name     string
	Group    string // the pod group (gang) it belongs to
	Priority int32
}

// PodGroup is a gang: Pods pods of GPUsPerPod GPUs, all or nothing.
type PodGroup struct {
	Name       string
	ID         uint64
	Pods       uint32
	GPUsPerPod uint32
	Required   string // a topology level the whole group must fit in
	Priority   int32
}

// NodeInfo is the part of a node the plugin reads.
type NodeInfo struct{ Name string }

// ---- the plugin ---------------------------------------------------------------

// GangPlugin places pod groups with libgpusched.
type GangPlugin struct {
	cluster *gpusched.Cluster
	topo    *gpusched.Topology
	groups  map[string]PodGroup
	bound   map[string]map[string]int // group -> node -> pods bound there
}

const planKey = "gpusched/plan"

// groupPlan is what PreFilter leaves in the cycle state.
type groupPlan struct {
	group     PodGroup
	placement *gpusched.Placement
	podsOn    map[string]int // node name -> pods of the group there
}

func (g *GangPlugin) Name() string { return "GpuschedGang" }

func (g *GangPlugin) request(group PodGroup, commit bool) gpusched.PlaceRequest {
	return gpusched.PlaceRequest{
		GPUs:     group.Pods * group.GPUsPerPod,
		PodGPUs:  group.GPUsPerPod,
		Required: group.Required,
		Job:      gpusched.Job{ID: group.ID, Priority: group.Priority, Preemptible: true},
		Commit:   commit,
	}
}

// PreFilter plans the pod's whole group once per cycle. A group already
// committed keeps its GPUs: its later pods go where the plan put them.
func (g *GangPlugin) PreFilter(ctx context.Context, state CycleState, pod Pod) *Status {
	group, ok := g.groups[pod.Group]
	if !ok {
		return unschedulable("pod %s: unknown pod group %q", pod.Name, pod.Group)
	}
	if alloc, err := g.cluster.Allocation(group.ID); err == nil {
		plan := &groupPlan{group: group, podsOn: map[string]int{},
			placement: &gpusched.Placement{Fits: true, Nodes: alloc, Message: "committed"}}
		for _, a := range alloc {
			name, _ := g.topo.NodeName(a.Node)
			plan.podsOn[name] = a.GPUs()/int(group.GPUsPerPod) - g.bound[group.Name][name]
		}
		state[planKey] = plan
		return nil
	}
	p, err := g.cluster.Place(g.request(group, false))
	if err != nil {
		return &Status{Code: Error, Reasons: []string{err.Error()}}
	}
	if !p.Fits {
		return unschedulable("pod group %s (%d x %d GPUs): %s", group.Name, group.Pods, group.GPUsPerPod, p.Message)
	}
	plan := &groupPlan{group: group, placement: p, podsOn: map[string]int{}}
	for _, node := range p.Pods {
		name, _ := g.topo.NodeName(node)
		plan.podsOn[name]++
	}
	state[planKey] = plan
	return nil
}

// Filter admits the nodes the group's plan uses.
func (g *GangPlugin) Filter(ctx context.Context, state CycleState, pod Pod, node NodeInfo) *Status {
	plan, ok := state[planKey].(*groupPlan)
	if !ok {
		return &Status{Code: Error, Reasons: []string{"PreFilter did not run"}}
	}
	if plan.podsOn[node.Name] <= 0 {
		return unschedulable("node %s is not in the plan of pod group %s (%s)", node.Name, plan.group.Name,
			plan.placement.Message)
	}
	return nil
}

// Score ranks a feasible node by the share of the group's pods it holds.
func (g *GangPlugin) Score(ctx context.Context, state CycleState, pod Pod, nodeName string) (int64, *Status) {
	plan := state[planKey].(*groupPlan)
	most := 0
	for _, n := range plan.podsOn {
		if n > most {
			most = n
		}
	}
	return int64(100 * plan.podsOn[nodeName] / most), nil
}

func (g *GangPlugin) bind(group, node string) {
	if g.bound[group] == nil {
		g.bound[group] = map[string]int{}
	}
	g.bound[group][node]++
}

// Reserve commits the whole group when its first pod is bound.
func (g *GangPlugin) Reserve(ctx context.Context, state CycleState, pod Pod, nodeName string) *Status {
	plan := state[planKey].(*groupPlan)
	if _, err := g.cluster.Job(plan.group.ID); err == nil {
		g.bind(plan.group.Name, nodeName) // an earlier pod of the group committed it
		return nil
	}
	p, err := g.cluster.Place(g.request(plan.group, true))
	if err != nil {
		return &Status{Code: Error, Reasons: []string{err.Error()}}
	}
	if !p.Fits {
		return unschedulable("pod group %s no longer fits: %s", plan.group.Name, p.Message)
	}
	g.bind(plan.group.Name, nodeName)
	return nil
}

// PostFilter plans the preemption that would let an unschedulable group in.
func (g *GangPlugin) PostFilter(ctx context.Context, state CycleState, pod Pod) (string, *Status) {
	group := g.groups[pod.Group]
	plan, err := g.cluster.Preempt(g.request(group, false))
	if err != nil {
		return "", &Status{Code: Error, Reasons: []string{err.Error()}}
	}
	if !plan.Placement.Fits {
		return "", unschedulable("no preemption helps pod group %s: %s", group.Name, plan.Placement.Message)
	}
	first, _ := g.topo.NodeName(plan.Placement.Pods[0])
	return first, &Status{Code: Unschedulable, Reasons: []string{fmt.Sprintf(
		"preempting jobs %v (%d GPUs, cost %d) makes room for pod group %s", plan.Victims, plan.GPUs, plan.Cost,
		group.Name)}}
}

// ---- one scheduling cycle per pod, as the framework would run it -------------

func scheduleOne(ctx context.Context, g *GangPlugin, nodes []NodeInfo, pod Pod) {
	state := CycleState{}
	if s := g.PreFilter(ctx, state, pod); !s.IsSuccess() {
		fmt.Printf("%s: PreFilter %s\n", pod.Name, s)
		if nominated, s := g.PostFilter(ctx, state, pod); nominated != "" {
			fmt.Printf("%s: PostFilter nominates %s: %s\n", pod.Name, nominated, strings.Join(s.Reasons, "; "))
		} else {
			fmt.Printf("%s: PostFilter %s\n", pod.Name, s)
		}
		return
	}
	var feasible []string
	rejected := 0
	for _, n := range nodes {
		if g.Filter(ctx, state, pod, n).IsSuccess() {
			feasible = append(feasible, n.Name)
		} else {
			rejected++
		}
	}
	type scored struct {
		node  string
		score int64
	}
	var ranked []scored
	for _, n := range feasible {
		s, _ := g.Score(ctx, state, pod, n)
		ranked = append(ranked, scored{n, s})
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].score > ranked[j].score })
	best := ranked[0].node
	if s := g.Reserve(ctx, state, pod, best); !s.IsSuccess() {
		fmt.Printf("%s: Reserve %s\n", pod.Name, s)
		return
	}
	fmt.Printf("%s: %d of %d nodes feasible; scores %v; bound to %s\n", pod.Name, len(feasible),
		len(feasible)+rejected, ranked, best)
}

func main() {
	var topo *gpusched.Topology
	var err error
	if len(os.Args) > 1 {
		text, rerr := os.ReadFile(os.Args[1])
		if rerr != nil {
			fmt.Fprintln(os.Stderr, rerr)
			os.Exit(1)
		}
		topo, err = gpusched.ParseTopology(string(text))
	} else {
		topo, err = gpusched.TopologyPreset("tiny")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer topo.Close()
	cluster, err := gpusched.NewCluster(topo)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cluster.Close()
	var nodes []NodeInfo
	for i := 0; i < topo.NodeCount(); i++ {
		name, _ := topo.NodeName(i)
		nodes = append(nodes, NodeInfo{Name: name})
	}
	g := &GangPlugin{cluster: cluster, topo: topo, bound: map[string]map[string]int{}, groups: map[string]PodGroup{
		"train": {Name: "train", ID: 1, Pods: 4, GPUsPerPod: 8, Required: "rack", Priority: 1},
		"eval":  {Name: "eval", ID: 2, Pods: 2, GPUsPerPod: 4, Required: "rack", Priority: 1},
		"batch": {Name: "batch", ID: 3, Pods: 4, GPUsPerPod: 8, Required: "rack", Priority: 0},
		"big":   {Name: "big", ID: 4, Pods: 8, GPUsPerPod: 8, Required: "block", Priority: 5},
		"huge":  {Name: "huge", ID: 5, Pods: 20, GPUsPerPod: 8, Priority: 5},
	}}
	ctx := context.Background()
	fmt.Printf("libgpusched %s: %d nodes, %d GPUs\n", gpusched.VersionString(), topo.NodeCount(), topo.GPUCount())
	for _, pod := range []Pod{
		{Name: "train-0", Group: "train"}, {Name: "train-1", Group: "train"},
		{Name: "eval-0", Group: "eval"}, {Name: "batch-0", Group: "batch"},
		{Name: "big-0", Group: "big", Priority: 5},
		{Name: "huge-0", Group: "huge", Priority: 5},
	} {
		scheduleOne(ctx, g, nodes, pod)
	}
	fmt.Printf("free GPUs: %d of %d\n", cluster.FreeGPUs(), topo.GPUCount())
}
