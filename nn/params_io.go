package nn

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nlpodyssey/safetensors"
	"gorgonia.org/tensor"
)

// StateDict returns a copy of every parameter keyed by its name, as
// torch's module.state_dict() (whose tensors share memory with the
// parameters; these do not). Nil for a nil set.
func (p *Params) StateDict() map[string]tensor.Tensor {
	if p == nil {
		return nil
	}
	sd := make(map[string]tensor.Tensor, len(p.names))
	for i, name := range p.names {
		sd[name] = cloneDense(p.values[i])
	}
	return sd
}

// LoadStateDict copies sd's tensors into the parameters of the same names,
// as torch's module.load_state_dict(sd, strict). It returns the
// parameters that sd lacks (missing, in the set's order) and sd's keys
// that name no parameter (unexpected, sorted), as torch's result does.
//
// A key of sd whose tensor does not fit its parameter (nil, not a
// *tensor.Dense, another dtype or shape) is an error whether strict or
// not, as torch's size mismatch; with strict, so is every missing and
// unexpected key. The error names all of them at once, and on error no
// parameter is changed (torch copies the fitting tensors before it
// raises; torch also converts a tensor of another float dtype, which is
// an error here).
//
// Errors: p is nil; the above.
func (p *Params) LoadStateDict(sd map[string]tensor.Tensor, strict bool) (missing, unexpected []string, err error) {
	if p == nil {
		return nil, nil, fmt.Errorf("nn: Params.LoadStateDict: the parameter set is nil")
	}
	entries := make(map[string]loadEntry, len(sd))
	for name, t := range sd {
		var e loadEntry
		if d, ok := t.(*tensor.Dense); ok && d != nil {
			e.value = d
		} else if t == nil || ok {
			e.problem = "the tensor is nil"
		} else {
			e.problem = fmt.Sprintf("the tensor is a %T, not a *tensor.Dense", t)
		}
		entries[name] = e
	}
	return p.load("LoadStateDict", "the state dict", entries, strict)
}

// loadEntry is one tensor offered to load: its value, or why it cannot be
// loaded whatever the parameter.
type loadEntry struct {
	value   *tensor.Dense
	problem string
}

// load checks entries against the parameters (torch's load_state_dict
// rules, see LoadStateDict) and copies them in when nothing is wrong. from
// names the source in the error ("the state dict", "the file").
func (p *Params) load(fn, from string, entries map[string]loadEntry, strict bool) (missing, unexpected []string, err error) {
	var mismatches []string
	for i, name := range p.names {
		e, ok := entries[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if msg := fitProblem(p.values[i], e, from); msg != "" {
			mismatches = append(mismatches, fmt.Sprintf("%q: %s", name, msg))
		}
	}
	for name := range entries {
		if _, ok := p.index[name]; !ok {
			unexpected = append(unexpected, name)
		}
	}
	slices.Sort(unexpected)
	var problems []string
	if strict && len(missing) > 0 {
		problems = append(problems, "missing keys "+quoteAll(missing))
	}
	if strict && len(unexpected) > 0 {
		problems = append(problems, "unexpected keys "+quoteAll(unexpected))
	}
	problems = append(problems, mismatches...)
	if len(problems) > 0 {
		return missing, unexpected, fmt.Errorf("nn: Params.%s: %s", fn, strings.Join(problems, "; "))
	}
	for i, name := range p.names {
		if e, ok := entries[name]; ok {
			if err := copyInto(p.values[i], e.value); err != nil { // checked by fitProblem
				return missing, unexpected, fmt.Errorf("nn: Params.%s: %q: %w", fn, name, err)
			}
		}
	}
	return missing, unexpected, nil
}

// fitProblem says why e cannot be copied into the parameter value dst,
// or "" if it can.
func fitProblem(dst *tensor.Dense, e loadEntry, from string) string {
	switch {
	case e.problem != "":
		return e.problem
	case e.value.Dtype() != dst.Dtype():
		return fmt.Sprintf("dtype %v in %s, %v in the parameter set", e.value.Dtype(), from, dst.Dtype())
	case !slices.Equal([]int(e.value.Shape()), []int(dst.Shape())):
		return fmt.Sprintf("shape %v in %s, %v in the parameter set", e.value.Shape(), from, dst.Shape())
	case e.value.IsMasked() || flatData(e.value) == nil:
		return "the tensor is masked or its backing array is shorter than its shape"
	}
	return ""
}

// quoteAll formats names as "a", "b".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Save writes every parameter to w in the safetensors format, which torch
// reads with safetensors.torch.load_file (and a module then with
// load_state_dict): an 8-byte little-endian header length, a JSON header
// {name: {"dtype": "F32" or "F64", "shape": [...], "data_offsets": [begin,
// end]}, "__metadata__": {"format": "pt"}} padded with spaces to a multiple
// of 8 bytes, then the tensors' raw little-endian bytes, ordered as
// safetensors orders them (float64 first, then by name). Written by
// github.com/nlpodyssey/safetensors.
//
// Errors: p is nil; w fails.
func (p *Params) Save(w io.Writer) error {
	if p == nil {
		return fmt.Errorf("nn: Params.Save: the parameter set is nil")
	}
	views := make(map[string]stView, len(p.names))
	for i, name := range p.names {
		views[name] = stView{p.values[i]}
	}
	if err := safetensors.SerializeToWriter(views, map[string]string{"format": "pt"}, w); err != nil {
		return fmt.Errorf("nn: Params.Save: %w", err)
	}
	return nil
}

// SaveFile writes the parameters to the file at path as Save does, through
// a temporary file in the same directory renamed over path at the end, so
// that a failed save leaves an earlier file at path intact (torch's
// safetensors.torch.save_file(module.state_dict(), path)).
//
// Errors: p is nil; the file cannot be written or renamed.
func (p *Params) SaveFile(path string) (err error) {
	if p == nil {
		return fmt.Errorf("nn: Params.SaveFile: the parameter set is nil")
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("nn: Params.SaveFile: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = p.Save(f); err != nil {
		return fmt.Errorf("nn: Params.SaveFile: %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil { // os.CreateTemp's 0600, as os.Create's file would be under umask 022
		return fmt.Errorf("nn: Params.SaveFile: %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("nn: Params.SaveFile: %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("nn: Params.SaveFile: %w", err)
	}
	return nil
}

// Load reads a safetensors file (as Save or torch's
// safetensors.torch.save_file writes it) from r and copies its tensors into
// the parameters of the same names, with LoadStateDict's rules for strict
// and for tensors that do not fit (a tensor of a dtype other than F32 and
// F64 fits no parameter; under strict = false such a tensor that names no
// parameter, like a BatchNorm's I64 num_batches_tracked, is skipped). On
// error no parameter is changed.
//
// Errors: p is nil; r fails; the file is not a valid safetensors file
// (truncated, a header over 100 MB or not JSON, an unknown dtype, data
// offsets that overlap, leave gaps or do not match a tensor's shape, bytes
// after the last tensor); LoadStateDict's errors.
func (p *Params) Load(r io.Reader, strict bool) error {
	if p == nil {
		return fmt.Errorf("nn: Params.Load: the parameter set is nil")
	}
	if r == nil {
		return fmt.Errorf("nn: Params.Load: the reader is nil")
	}
	buf, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("nn: Params.Load: %w", err)
	}
	entries, err := p.decode(buf)
	if err != nil {
		return fmt.Errorf("nn: Params.Load: %w", err)
	}
	_, _, err = p.load("Load", "the file", entries, strict)
	return err
}

// LoadFile reads the safetensors file at path into the parameters as Load
// does (torch's module.load_state_dict(safetensors.torch.load_file(path),
// strict)).
//
// Errors: p is nil; the file cannot be opened; Load's errors.
func (p *Params) LoadFile(path string, strict bool) error {
	if p == nil {
		return fmt.Errorf("nn: Params.LoadFile: the parameter set is nil")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("nn: Params.LoadFile: %w", err)
	}
	defer f.Close()
	if err := p.Load(f, strict); err != nil {
		return fmt.Errorf("%w (file %s)", err, path)
	}
	return nil
}

// decode parses a whole safetensors file and decodes the tensors that name
// a parameter and have its dtype and shape; the others are entries with
// a problem or, if they name no parameter, without a value. The library
// is called under recover: its slicing trusts offsets whose sum can wrap
// around.
func (p *Params) decode(buf []byte) (entries map[string]loadEntry, err error) {
	defer func() {
		if r := recover(); r != nil {
			entries, err = nil, fmt.Errorf("corrupt safetensors file: %v", r)
		}
	}()
	st, err := safetensors.Deserialize(buf)
	if err != nil {
		return nil, fmt.Errorf("not a valid safetensors file: %w", err)
	}
	entries = make(map[string]loadEntry, st.Len())
	for _, nt := range st.Tensors() {
		var e loadEntry
		if i, ok := p.index[nt.Name]; ok {
			e = decodeTensor(nt.TensorView, p.values[i])
		}
		entries[nt.Name] = e
	}
	return entries, nil
}

// decodeTensor decodes v if it has the dtype and shape of the parameter
// value dst, or says why not.
func decodeTensor(v safetensors.TensorView, dst *tensor.Dense) loadEntry {
	var dt tensor.Dtype
	switch v.DType() {
	case safetensors.F32:
		dt = tensor.Float32
	case safetensors.F64:
		dt = tensor.Float64
	default:
		return loadEntry{problem: fmt.Sprintf("dtype %v in the file, %v in the parameter set", v.DType(), dst.Dtype())}
	}
	shape := v.Shape()
	same := len(shape) == dst.Dims()
	for k := 0; same && k < len(shape); k++ {
		same = shape[k] == uint64(dst.Shape()[k])
	}
	switch {
	case dt != dst.Dtype():
		return loadEntry{problem: fmt.Sprintf("dtype %v in the file, %v in the parameter set", dt, dst.Dtype())}
	case !same:
		return loadEntry{problem: fmt.Sprintf("shape %v in the file, %v in the parameter set", shape, dst.Shape())}
	}
	n, data := dst.Shape().TotalSize(), v.Data()
	if uint64(len(data)) != uint64(n)*uint64(dt.Size()) {
		return loadEntry{problem: fmt.Sprintf("%d data bytes for shape %v", len(data), shape)}
	}
	var backing any
	if dt == tensor.Float32 {
		f := make([]float32, n)
		for k := range f {
			f[k] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*k:]))
		}
		backing = f
	} else {
		f := make([]float64, n)
		for k := range f {
			f[k] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*k:]))
		}
		backing = f
	}
	return loadEntry{value: tensor.New(tensor.WithShape(dst.Shape().Clone()...), tensor.WithBacking(backing))}
}

// stView presents a parameter value to the safetensors writer.
type stView struct{ d *tensor.Dense }

// DType is F32 or F64.
func (v stView) DType() safetensors.DType {
	if v.d.Dtype() == tensor.Float32 {
		return safetensors.F32
	}
	return safetensors.F64
}

// Shape is the value's shape.
func (v stView) Shape() []uint64 {
	s := make([]uint64, v.d.Dims())
	for k, n := range v.d.Shape() {
		s[k] = uint64(n)
	}
	return s
}

// DataLen is the size of Data in bytes.
func (v stView) DataLen() uint64 {
	return uint64(v.d.Shape().TotalSize()) * uint64(v.d.Dtype().Size())
}

// Data is the elements as little-endian bytes.
func (v stView) Data() []byte {
	switch s := flatData(v.d).(type) {
	case []float32:
		b := make([]byte, 4*len(s))
		for k, x := range s {
			binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(x))
		}
		return b
	case []float64:
		b := make([]byte, 8*len(s))
		for k, x := range s {
			binary.LittleEndian.PutUint64(b[8*k:], math.Float64bits(x))
		}
		return b
	}
	return nil
}
