package ad

import (
	"fmt"
	"reflect"
	"unsafe"

	"gorgonia.org/gorgonia"
)

// Gorgonia's TapeMachine eliminates common subexpressions by node hash
// alone: Compile (analyze's value numbering) gives every node the register
// of the first node with the same 32-bit Hashcode, without comparing ops,
// shapes or inputs. Two different computations whose hashes collide are
// computed once, and the second one's readers get the first one's value:
// wrong numbers, or a value of another shape. By the birthday bound a graph
// of n distinct nodes holds such a pair with a chance of about n²/2³³: one
// in two for the 69 000 nodes of a tiny detector's third-order graph, and
// certainly for a full detector's MAML step. (The LispMachine does not
// merge.) DistinctHashes removes the pairs before compiling; NewTapeMachine
// calls it, and so does Grad, for graphs compiled by Gorgonia's own
// NewTapeMachine.

// nodeHash is where a *gorgonia.Node caches its hash: the offsets of its
// unexported fields hash (uint32) and hashed (bool), found by name once,
// -1 if this Gorgonia has no such fields (then DistinctHashes reports an
// error instead of changing anything).
var nodeHash = func() struct {
	hash, hashed uintptr
	ok           bool
} {
	t := reflect.TypeOf(gorgonia.Node{})
	h, ok1 := t.FieldByName("hash")
	d, ok2 := t.FieldByName("hashed")
	ok := ok1 && ok2 && h.Type.Kind() == reflect.Uint32 && d.Type.Kind() == reflect.Bool
	return struct {
		hash, hashed uintptr
		ok           bool
	}{h.Offset, d.Offset, ok}
}()

// DistinctHashes gives every node of g a hash of its own, so that
// Gorgonia's TapeMachine computes every node (see above): where two or more
// distinct nodes share a hash, all but the oldest (smallest ID) get a
// fresh value, one no node of g has. It returns how many nodes it changed.
// Only the hash the node caches changes: its op, inputs and value do not,
// and nodes built later hash from it as from any other. Gorgonia's own
// merging of equal nodes (ExprGraph.AddNode) has happened by then, so no
// node computed once before is computed twice after. Call it after the last
// node is added and before gorgonia.NewTapeMachine (ad.NewTapeMachine does),
// on the graph or on the subgraph that will be compiled.
//
// Errors: g is nil, or the Gorgonia in the build keeps node hashes other
// than v0.9.18 does (then nothing is changed).
func DistinctHashes(g *gorgonia.ExprGraph) (int, error) {
	if g == nil {
		return 0, fmt.Errorf("ad: DistinctHashes: graph is nil")
	}
	if !nodeHash.ok {
		return 0, fmt.Errorf("ad: DistinctHashes: this Gorgonia's Node has no uint32 hash and bool hashed fields")
	}
	all := g.AllNodes()
	seen := make(map[uint32]struct{}, len(all))
	var dup []*gorgonia.Node
	for _, n := range all { // in ID order: the oldest keeps its hash
		h := n.Hashcode()
		if _, ok := seen[h]; ok {
			dup = append(dup, n)
			continue
		}
		seen[h] = struct{}{}
	}
	next := uint32(0x9e3779b9)
	for _, n := range dup {
		for {
			next = next*1664525 + 1013904223
			if _, ok := seen[next]; !ok {
				break
			}
		}
		seen[next] = struct{}{}
		p := unsafe.Pointer(n)
		*(*uint32)(unsafe.Add(p, nodeHash.hash)) = next
		*(*bool)(unsafe.Add(p, nodeHash.hashed)) = true
	}
	return len(dup), nil
}

// NewTapeMachine is gorgonia.NewTapeMachine(g, opts...) after
// DistinctHashes(g): a machine that computes every node of g. Gorgonia's
// NewTapeMachine panics on graphs it cannot compile (no inputs, no nodes);
// this one returns the panic as an error.
func NewTapeMachine(g *gorgonia.ExprGraph, opts ...gorgonia.VMOpt) (m gorgonia.VM, err error) {
	if _, err := DistinctHashes(g); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("ad: NewTapeMachine: %v", r)
		}
	}()
	return gorgonia.NewTapeMachine(g, opts...), nil
}
