package ad

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"gorgonia.org/gorgonia"
)

// Gorgonia's TapeMachine eliminates common subexpressions by node hash
// alone: Compile (analyze's value numbering) gives every node the register
// of the first node with the same 32-bit Hashcode, without comparing ops,
// shapes or inputs. Two different computations whose hashes collide are
// computed once, and the second one's readers get the first one's value:
// wrong numbers, or a value of another shape. By the birthday bound a graph
// of n distinct nodes holds such a pair with a chance of 1 − exp(−n²/2³³):
// one in ten for 30 000 nodes, four in ten for 69 000, and almost
// certainly for a full detector's MAML step. (The LispMachine does not
// merge.) DistinctHashes removes the pairs before compiling; NewTapeMachine
// calls it, and so does Grad, for graphs compiled by Gorgonia's own
// NewTapeMachine.

// gorgoniaFields are the offsets of the unexported fields DistinctHashes
// writes: a *gorgonia.Node's cached hash (uint32) and hashed (bool), and
// an *ExprGraph's byHash map (AddNode's table of nodes by hash), found by
// name once; ok is false if this Gorgonia has other fields (then
// DistinctHashes reports an error instead of changing anything).
var gorgoniaFields = func() (f struct {
	hash, hashed, byHash uintptr
	ok                   bool
}) {
	nt, gt := reflect.TypeOf(gorgonia.Node{}), reflect.TypeOf(gorgonia.ExprGraph{})
	h, ok1 := nt.FieldByName("hash")
	d, ok2 := nt.FieldByName("hashed")
	m, ok3 := gt.FieldByName("byHash")
	f.hash, f.hashed, f.byHash = h.Offset, d.Offset, m.Offset
	f.ok = ok1 && ok2 && ok3 && h.Type.Kind() == reflect.Uint32 && d.Type.Kind() == reflect.Bool &&
		m.Type == reflect.TypeOf(map[uint32]*gorgonia.Node(nil))
	return f
}()

// byHash is g's table of nodes by hash (AddNode's: a hash's node, or nil
// for a hash two different nodes have).
func byHash(g *gorgonia.ExprGraph) map[uint32]*gorgonia.Node {
	return *(*map[uint32]*gorgonia.Node)(unsafe.Add(unsafe.Pointer(g), gorgoniaFields.byHash))
}

// rehash gives n, a node of a graph whose table is table, a hash that no
// key of table nor of taken has, and enters n in table under it: AddNode,
// which Gorgonia calls again on a node's inputs whenever it builds on them,
// then finds n itself there. It returns the new hash.
func rehash(n *gorgonia.Node, table map[uint32]*gorgonia.Node, taken map[uint32]*gorgonia.Node, next *uint32) uint32 {
	for {
		*next = *next*1664525 + 1013904223
		_, inTable := table[*next]
		_, inTaken := taken[*next]
		if !inTable && !inTaken {
			break
		}
	}
	p := unsafe.Pointer(n)
	*(*uint32)(unsafe.Add(p, gorgoniaFields.hash)) = *next
	*(*bool)(unsafe.Add(p, gorgoniaFields.hashed)) = true
	table[*next] = n
	return *next
}

// rehashSeed is where the fresh hashes' sequence starts.
const rehashSeed = 0x9e3779b9

// ownHash gives n a hash of its own if its graph's table does not hold n
// under its hash: n's hash is another node's too (AddNode kept both and
// entered nil), so an op built on n would hash like the same op on that
// node, and AddNode could merge the two. Apply, Builder and Grad's rules
// call it on their inputs before building on them. Constants keep their
// hash: the node passed may be one Gorgonia copies into the graph.
func ownHash(n *gorgonia.Node) {
	g := n.Graph()
	if g == nil || !gorgoniaFields.ok || isConstant(n) {
		return // Gorgonia adds a copy of a constant to a graph, by name
	}
	table := byHash(g)
	if table == nil || table[n.Hashcode()] == n {
		return
	}
	next := uint32(rehashSeed) ^ uint32(n.ID())
	rehash(n, table, nil, &next)
}

// DistinctHashes gives every node of g a hash of its own, so that
// Gorgonia's TapeMachine computes every node (see above): where two or more
// distinct nodes share a hash, all but one get a fresh value, one no node
// of g has, and g's table of nodes by hash (AddNode's) holds them under it.
// The one that keeps its hash is a node of no graph (Gorgonia's shared
// constants, whose hash every graph sees) or else the oldest (smallest ID).
// It returns how many nodes it changed. Only the hash the node caches
// changes: its op, inputs and value do not, and nodes built later hash from
// the new value (so an op built on it again is not merged with the same op
// built on it before: computed twice, not wrongly). Call it after the last
// node is added and before gorgonia.NewTapeMachine (ad.NewTapeMachine does),
// on the graph or on the subgraph that will be compiled.
//
// It cannot undo a merge Gorgonia made while the graph was built: two
// colliding nodes make the same op on each collide too, and AddNode
// returns the first such node for the second. Apply, Builder and Grad's
// rules give their inputs hashes of their own before building (and check
// the node they get back); Gorgonia's ops called directly do not.
//
// Errors: g is nil, or the Gorgonia in the build keeps node hashes other
// than v0.9.18 does (then nothing is changed).
func DistinctHashes(g *gorgonia.ExprGraph) (int, error) {
	if g == nil {
		return 0, fmt.Errorf("ad: DistinctHashes: graph is nil")
	}
	if !gorgoniaFields.ok {
		return 0, fmt.Errorf("ad: DistinctHashes: this Gorgonia's Node or ExprGraph lacks the fields hash, hashed, byHash")
	}
	// A subgraph lists its nodes by address: order them, nodes of no
	// graph first, then by ID, each once.
	all := slices.Clone(g.AllNodes())
	slices.SortStableFunc(all, func(a, b *gorgonia.Node) int {
		if ga, gb := a.Graph() == nil, b.Graph() == nil; ga != gb {
			if ga {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID(), b.ID())
	})
	all = slices.Compact(all)
	seen := make(map[uint32]*gorgonia.Node, len(all))
	var dup []*gorgonia.Node
	for _, n := range all {
		h := n.Hashcode()
		if o, ok := seen[h]; ok {
			if o != n && n.Graph() != nil {
				dup = append(dup, n)
			}
			continue
		}
		seen[h] = n
	}
	next := uint32(rehashSeed)
	for _, n := range dup {
		seen[rehash(n, byHash(n.Graph()), seen, &next)] = n
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
