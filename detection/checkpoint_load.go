package detection

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/tensor"
)

// LoadOptions are the options of Weights.LoadStateDict; the zero value is
// torch's load_state_dict(sd, strict=True) on a model of the weights'
// dtype.
type LoadOptions struct {
	// NonStrict loads the keys the weights and the state dict share and
	// reports the others instead of failing (torch's strict=False).
	NonStrict bool
	// ConvertDtype converts float32 tensors to float64 weights and float64
	// tensors to float32 weights (rounding to nearest), as torch's
	// load_state_dict does through param.copy_. Off by default, so that a
	// dtype mismatch is reported rather than silently rounded; torchvision's
	// published weights are float32, so a float64 model loads them with
	// ConvertDtype set.
	ConvertDtype bool
	// RetinaNetHeads are the prefixes (ending in ".") of
	// RetinaNetClassificationHead and RetinaNetRegressionHead modules
	// ("head.classification_head.", "head.regression_head."), upgraded
	// first by Checkpoint.UpgradeRetinaNetHead as their
	// _load_from_state_dict does.
	RetinaNetHeads []string
	// RPNHeads are the prefixes of RPNHead modules ("rpn.head."), upgraded
	// first by Checkpoint.UpgradeRPNHead.
	RPNHeads []string
}

// IncompatibleKeys is what Weights.LoadStateDict did not match, as torch's
// _IncompatibleKeys (missing_keys, unexpected_keys); both sorted.
type IncompatibleKeys struct {
	// Missing are the weights' keys the state dict lacks.
	Missing []string
	// Unexpected are the state dict's keys that name no weight
	// (num_batches_tracked aside).
	Unexpected []string
}

// isNumBatchesTracked reports whether key is a BatchNorm's step counter,
// which Weights never hold and loading ignores.
func isNumBatchesTracked(key string) bool {
	return key == "num_batches_tracked" || strings.HasSuffix(key, ".num_batches_tracked")
}

// LoadStateDict copies the checkpoint's tensors into the weights of the
// same keys (both Params and Frozen), as torch's
// model.load_state_dict(state_dict, strict): after the key upgrades of
// opts (on a copy: ck is not changed), every key of the weights and of
// ck.Tensors is matched; num_batches_tracked keys are ignored (Weights do
// not keep them, see Weights). It returns the missing and unexpected keys.
//
// Strict (the default), a missing or unexpected key is an error; in either
// mode a tensor whose shape differs from its weight's, whose dtype differs
// without opts.ConvertDtype, or that is nil, is an error (torch raises for
// a size mismatch whatever strict). The error names every problem at once,
// each list sorted, and on error no weight is changed (torch copies the
// fitting tensors before it raises).
//
// Errors: w or ck is nil; the above.
func (w *Weights) LoadStateDict(ck *Checkpoint, opts LoadOptions) (IncompatibleKeys, error) {
	var ik IncompatibleKeys
	if w == nil || w.Params == nil || w.Frozen == nil {
		return ik, fmt.Errorf("detection: Weights.LoadStateDict: the weights are nil or not made by NewWeights")
	}
	if ck == nil {
		return ik, fmt.Errorf("detection: Weights.LoadStateDict: the checkpoint is nil")
	}
	up := &Checkpoint{Keys: slices.Clone(ck.Keys), Tensors: maps.Clone(ck.Tensors), Versions: ck.Versions}
	for _, p := range opts.RetinaNetHeads {
		up.UpgradeRetinaNetHead(p)
	}
	for _, p := range opts.RPNHeads {
		up.UpgradeRPNHead(p)
	}
	names := slices.Concat(w.Params.Names(), w.Frozen.Names())
	slices.Sort(names)
	var mismatches []string
	for _, name := range names {
		src, ok := up.Tensors[name]
		if !ok {
			ik.Missing = append(ik.Missing, name)
			continue
		}
		dst, err := w.Value(name)
		if err != nil {
			return IncompatibleKeys{}, fmt.Errorf("detection: Weights.LoadStateDict: %w", err)
		}
		if msg := loadProblem(dst, src, opts.ConvertDtype); msg != "" {
			mismatches = append(mismatches, fmt.Sprintf("%q: %s", name, msg))
		}
	}
	for key := range up.Tensors {
		if !w.Has(key) && !isNumBatchesTracked(key) {
			ik.Unexpected = append(ik.Unexpected, key)
		}
	}
	slices.Sort(ik.Unexpected)
	var problems []string
	if !opts.NonStrict && len(ik.Missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d missing keys %s", len(ik.Missing), quoteKeys(ik.Missing)))
	}
	if !opts.NonStrict && len(ik.Unexpected) > 0 {
		problems = append(problems, fmt.Sprintf("%d unexpected keys %s", len(ik.Unexpected), quoteKeys(ik.Unexpected)))
	}
	if len(mismatches) > 0 {
		problems = append(problems, fmt.Sprintf("%d mismatched tensors: %s", len(mismatches), strings.Join(mismatches, ", ")))
	}
	if len(problems) > 0 {
		return ik, fmt.Errorf("detection: Weights.LoadStateDict: %s", strings.Join(problems, "; "))
	}
	for _, name := range names {
		if src, ok := up.Tensors[name]; ok {
			dst, _ := w.Value(name) // looked up above
			copyConverting(dst, src)
		}
	}
	return ik, nil
}

// quoteKeys formats keys as "a", "b".
func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// loadProblem says why src cannot be loaded into the weight dst, or "".
func loadProblem(dst, src *tensor.Dense, convert bool) string {
	switch {
	case src == nil:
		return "the tensor is nil"
	case src.Dtype() != tensor.Float32 && src.Dtype() != tensor.Float64:
		return fmt.Sprintf("dtype %v in the checkpoint is not float32 or float64", src.Dtype())
	case src.Dtype() != dst.Dtype() && !convert:
		return fmt.Sprintf("dtype %v in the checkpoint, %v in the weights (LoadOptions.ConvertDtype converts)", src.Dtype(), dst.Dtype())
	case !slices.Equal([]int(src.Shape()), []int(dst.Shape())):
		return fmt.Sprintf("shape %v in the checkpoint, %v in the weights", src.Shape(), dst.Shape())
	case src.IsMasked():
		return "the tensor is masked"
	}
	if _, n := flatValues(src); n < dst.Shape().TotalSize() {
		return "the tensor's backing array is shorter than its shape"
	}
	return ""
}

// flatValues returns src's elements in row-major order ([]float32 or
// []float64, a materialised copy for a view) and their number.
func flatValues(src *tensor.Dense) (any, int) {
	if src.IsView() || src.RequiresIterator() {
		if m, ok := src.Materialize().(*tensor.Dense); ok {
			src = m
		}
	}
	switch s := src.Data().(type) {
	case []float32:
		return s, len(s)
	case []float64:
		return s, len(s)
	}
	return nil, 0
}

// copyConverting copies src's elements into dst, converting the dtype;
// loadProblem has checked the shapes and lengths.
func copyConverting(dst, src *tensor.Dense) {
	vals, _ := flatValues(src)
	switch d := dst.Data().(type) {
	case []float32:
		switch s := vals.(type) {
		case []float32:
			copy(d, s)
		case []float64:
			for i := range d {
				d[i] = float32(s[i])
			}
		}
	case []float64:
		switch s := vals.(type) {
		case []float32:
			for i := range d {
				d[i] = float64(s[i])
			}
		case []float64:
			copy(d, s)
		}
	}
}

// UpgradeRetinaNetHead renames the version-1 keys of a
// RetinaNetClassificationHead or RetinaNetRegressionHead at prefix (ending
// in ".", e.g. "head.classification_head.") to version 2's, as
// torchvision 0.14's _v1_to_v2_weights in the heads' _load_from_state_dict:
// prefix+"conv.{2i}.weight" and ".bias" become prefix+"conv.{i}.0.weight"
// and ".bias" for i < 4 (v1 held Conv2d and ReLU alternately in one
// Sequential; v2 holds one Conv2dNormActivation per layer). Applied only
// when Versions has no version for the prefix (without its dot) or one
// below 2, as torchvision does. It returns the renamed (old) keys; a
// renamed key keeps its place in Keys.
func (c *Checkpoint) UpgradeRetinaNetHead(prefix string) []string {
	var renames [][2]string
	for i := range 4 {
		for _, kind := range []string{"weight", "bias"} {
			renames = append(renames, [2]string{fmt.Sprintf("conv.%d.%s", 2*i, kind), fmt.Sprintf("conv.%d.0.%s", i, kind)})
		}
	}
	return c.upgrade(prefix, renames)
}

// UpgradeRPNHead renames the version-1 keys of an RPNHead at prefix (e.g.
// "rpn.head.") to version 2's, as torchvision 0.14's
// RPNHead._load_from_state_dict: prefix+"conv.weight" and ".bias" become
// prefix+"conv.0.0.weight" and ".bias" (v2 holds conv_depth
// Conv2dNormActivation layers). Applied only when Versions has no version
// for the prefix or one below 2. It returns the renamed (old) keys.
func (c *Checkpoint) UpgradeRPNHead(prefix string) []string {
	return c.upgrade(prefix, [][2]string{{"conv.weight", "conv.0.0.weight"}, {"conv.bias", "conv.0.0.bias"}})
}

// upgrade renames prefix+old to prefix+new for each pair present, when the
// prefix's version is absent or below 2. A new key already present is
// overwritten and the old key removed (Python's
// state_dict[new] = state_dict.pop(old)).
func (c *Checkpoint) upgrade(prefix string, renames [][2]string) []string {
	if c == nil || c.Tensors == nil {
		return nil
	}
	if prefix != "" && !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	if v, ok := c.Versions[strings.TrimSuffix(prefix, ".")]; ok && v >= 2 {
		return nil
	}
	var done []string
	for _, r := range renames {
		old, key := prefix+r[0], prefix+r[1]
		t, ok := c.Tensors[old]
		if !ok {
			continue
		}
		_, had := c.Tensors[key]
		delete(c.Tensors, old)
		c.Tensors[key] = t
		if i := slices.Index(c.Keys, old); i >= 0 {
			if had {
				c.Keys = slices.Delete(c.Keys, i, i+1)
			} else {
				c.Keys[i] = key
			}
		}
		done = append(done, old)
	}
	return done
}

// merged returns one parameter set holding a copy of every tensor of
// Params and Frozen, for the safetensors functions of nn.Params.
func (w *Weights) merged(fn string) (*nn.Params, error) {
	if w == nil || w.Params == nil || w.Frozen == nil {
		return nil, fmt.Errorf("detection: Weights.%s: the weights are nil or not made by NewWeights", fn)
	}
	all := nn.NewParams()
	for _, s := range []*nn.Params{w.Params, w.Frozen} {
		values := s.Values()
		for i, name := range s.Names() {
			if err := all.Add(name, values[i]); err != nil {
				return nil, fmt.Errorf("detection: Weights.%s: %w", fn, err)
			}
		}
	}
	return all, nil
}

// Save writes every tensor of the weights, Params and Frozen alike, to wr
// as one safetensors file by nn.Params.Save (its format is documented
// there: an 8-byte header length, a JSON header of names, dtypes "F32" or
// "F64", shapes and data offsets, then the raw little-endian bytes),
// under the state dict keys. A torch user reads it with
// safetensors.torch.load_file and model.load_state_dict(...,
// strict=False) (num_batches_tracked is not saved); the safetensors Python
// package was not installable where this was written, so the tests read
// the files back with this package only.
//
// Errors: w is nil; wr fails.
func (w *Weights) Save(wr io.Writer) error {
	return w.viaMerged("Save", false, func(all *nn.Params) error { return all.Save(wr) })
}

// SaveFile writes the weights to the file at path as Save does, through a
// temporary file renamed over path (nn.Params.SaveFile).
//
// Errors: w is nil; the file cannot be written.
func (w *Weights) SaveFile(path string) error {
	return w.viaMerged("SaveFile", false, func(all *nn.Params) error { return all.SaveFile(path) })
}

// Load reads a safetensors file (as Save writes it) from r into the
// weights of the same keys, whichever of Params and Frozen holds each
// (the file does not say). Strict, every key of the weights and of the
// file must match; non-strict, the shared keys load and a tensor of
// another dtype that names no weight is skipped. A tensor of the wrong
// dtype or shape is an error either way (no conversion), and on error no
// weight is changed.
//
// Errors: w is nil; r fails; nn.Params.Load's errors.
func (w *Weights) Load(r io.Reader, strict bool) error {
	return w.viaMerged("Load", true, func(all *nn.Params) error { return all.Load(r, strict) })
}

// LoadFile reads the safetensors file at path into the weights as Load
// does.
//
// Errors: w is nil; the file cannot be opened; Load's errors.
func (w *Weights) LoadFile(path string, strict bool) error {
	return w.viaMerged("LoadFile", true, func(all *nn.Params) error { return all.LoadFile(path, strict) })
}

// viaMerged runs do on a merged copy of the weights (see merged) and, if
// load, copies the copy's tensors back into the weights.
func (w *Weights) viaMerged(fn string, load bool, do func(all *nn.Params) error) error {
	all, err := w.merged(fn)
	if err != nil {
		return err
	}
	if err := do(all); err != nil {
		return fmt.Errorf("detection: Weights.%s: %w", fn, err)
	}
	if load {
		return w.setAll(fn, all)
	}
	return nil
}

// setAll copies every tensor of all into the weight of its name.
func (w *Weights) setAll(fn string, all *nn.Params) error {
	values := all.Values()
	for i, name := range all.Names() {
		s, err := w.set(name)
		if err == nil {
			err = s.SetValue(name, values[i])
		}
		if err != nil {
			return fmt.Errorf("detection: Weights.%s: %w", fn, err)
		}
	}
	return nil
}
