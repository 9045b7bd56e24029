package ad

import (
	"errors"
	"fmt"
	"strings"

	"gorgonia.org/gorgonia"
)

// RunError is an error a Gorgonia machine returned from running a node,
// with the machine's wrapping removed: Err is the op's own error (for the
// ops of this module's packages, "nn: CrossEntropy: target 12 at row 1
// is …": the op and the argument), Node the node that failed, nil where
// the machine does not say (the LispMachine).
type RunError struct {
	// Node is the node whose op failed; nil where the machine does not
	// say (Gorgonia's LispMachine).
	Node *gorgonia.Node
	// Err is the op's own error, Gorgonia's wrapping removed.
	Err error
}

// Error is "ad: node <name> (inputs <names>): <the op's error>", or
// "ad: <the op's error>" without a node. Gorgonia names an op's node
// after its expression (CheckedLog(%0)); the inputs' names are the ones
// given with gorgonia.WithName.
func (e *RunError) Error() string {
	if e.Node == nil {
		return "ad: " + e.Err.Error()
	}
	var ins []string
	if g := e.Node.Graph(); g != nil {
		for _, c := range children(g, e.Node) {
			ins = append(ins, nodeName(c))
		}
	}
	if len(ins) == 0 {
		return fmt.Sprintf("ad: node %s: %v", nodeName(e.Node), e.Err)
	}
	return fmt.Sprintf("ad: node %s (inputs %s): %v", nodeName(e.Node), strings.Join(ins, ", "), e.Err)
}

// Unwrap is the op's own error, for errors.Is and errors.As.
func (e *RunError) Unwrap() error { return e.Err }

// vmError is what Gorgonia's TapeMachine and LispMachine return when a
// node fails (gorgonia's unexported vmContextualError): the node and the
// wrapped error.
type vmError interface {
	error
	Node() *gorgonia.Node
	Err() error
}

// Unwrap takes a machine's error apart: Gorgonia wraps an op's error as
// "PC 3. Failed to execute instruction … Failed to carry op.Do(): <the
// op's error>" (TapeMachine; the LispMachine: "RunAll: Failed to bindVar:
// Failed to carry op.Do(): …"), github.com/pkg/errors wrappers around it
// and the node, where the machine gives it, in an unexported type. Unwrap
// returns a *RunError holding that node and the innermost error of the
// pkg/errors chain: the op's own, or Gorgonia's own message for its ops.
// nil, and an error without such wrappers, are returned as they are.
func Unwrap(err error) error {
	if err == nil {
		return nil
	}
	var node *gorgonia.Node
	inner, found := err, false
	var vm vmError
	if errors.As(err, &vm) {
		node, inner, found = vm.Node(), vm.Err(), true
	}
	// (bounded: a Cause that returns its own error would loop)
	for range 100 {
		c, ok := inner.(interface{ Cause() error })
		if !ok || c.Cause() == nil {
			break
		}
		inner, found = c.Cause(), true
	}
	if !found || inner == nil {
		return err
	}
	return &RunError{Node: node, Err: inner}
}

// RunAll is m.RunAll() with its error passed through Unwrap: the failing
// op's message first, after the node's name. Errors: m is nil, or as
// m.RunAll.
func RunAll(m gorgonia.VM) error {
	if m == nil {
		return errors.New("ad: RunAll: nil machine")
	}
	return Unwrap(m.RunAll())
}
