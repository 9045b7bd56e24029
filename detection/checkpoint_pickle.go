package detection

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// The pickle side of a torch.save file: which classes a state dict's
// pickle may name, what its persistent ids and tensor calls become, and a
// scan of the opcodes that bounds every length before gopickle allocates
// it (gopickle makes a buffer of any length a pickle claims).

// storageClass is one of torch's typed storage classes (torch.FloatStorage
// ...), as pickled in a storage's persistent id.
type storageClass struct {
	name string // "FloatStorage"
	elem int    // bytes per element
}

// storageClasses are the storage classes torch.save writes, by pickled
// name. Only Float, Double and Long storages load; the others are known so
// that a legacy file's storages can be stepped over and a tensor of such
// a dtype named in the error.
var storageClasses = map[string]int{
	"FloatStorage": 4, "DoubleStorage": 8, "LongStorage": 8, "HalfStorage": 2,
	"BFloat16Storage": 2, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1,
	"ByteStorage": 1, "BoolStorage": 1, "ComplexFloatStorage": 8, "ComplexDoubleStorage": 16,
}

// storageRef is a storage as a pickle's persistent id names it: its class,
// its key (a zip record name or a legacy storage key) and its element count.
type storageRef struct {
	class storageClass
	key   string
	numel int64
}

// tensorRef is a tensor as torch._utils._rebuild_tensor_v2 receives it.
type tensorRef struct {
	storage *storageRef
	offset  int64
	size    []int64
	stride  []int64
}

// rebuildTensor stands for torch._utils._rebuild_tensor_v2(storage,
// storage_offset, size, stride, requires_grad, backward_hooks[, metadata]).
type rebuildTensor struct{}

// Call checks the argument types and returns a *tensorRef.
func (rebuildTensor) Call(args ...any) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments, want at least 4", len(args))
	}
	s, ok := args[0].(*storageRef)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2's storage is a %T, not a storage", args[0])
	}
	t := &tensorRef{storage: s}
	var err error
	if t.offset, err = pickleInt(args[1], "storage offset"); err != nil {
		return nil, err
	}
	if t.size, err = pickleInts(args[2], "size"); err != nil {
		return nil, err
	}
	if t.stride, err = pickleInts(args[3], "stride"); err != nil {
		return nil, err
	}
	return t, nil
}

// rebuildParameter stands for torch._utils._rebuild_parameter(data,
// requires_grad, backward_hooks) and torch 2's
// _rebuild_parameter_with_state(data, requires_grad, backward_hooks,
// state): a state dict saved with keep_vars=True.
type rebuildParameter struct{}

// Call returns the tensor data.
func (rebuildParameter) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("_rebuild_parameter without arguments")
	}
	if _, ok := args[0].(*tensorRef); !ok {
		return nil, fmt.Errorf("_rebuild_parameter's data is a %T, not a tensor", args[0])
	}
	return args[0], nil
}

// pickleInt returns v as an int64 (a pickled Python int).
func pickleInt(v any, what string) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case *big.Int:
		if n.IsInt64() {
			return n.Int64(), nil
		}
		return 0, fmt.Errorf("%s %v does not fit in 64 bits", what, n)
	case bool:
		if n {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("%s is a %T, not an int", what, v)
}

// pickleInts returns the tuple v as int64s.
func pickleInts(v any, what string) ([]int64, error) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a tuple", what, v)
	}
	out := make([]int64, t.Len())
	for i := range out {
		n, err := pickleInt(t.Get(i), what)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// findClass resolves the globals a state dict's pickle names (gopickle
// itself resolves collections.OrderedDict); any other class is an error,
// so that a pickled module or arbitrary object is rejected by name.
func findClass(module, name string) (any, error) {
	switch {
	case module == "torch._utils" && name == "_rebuild_tensor_v2":
		return rebuildTensor{}, nil
	case module == "torch._utils" && (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state"):
		return rebuildParameter{}, nil
	case module == "torch":
		if elem, ok := storageClasses[name]; ok {
			return storageClass{name: name, elem: elem}, nil
		}
	}
	return nil, fmt.Errorf("the pickle names %s.%s, which a state dict of tensors does not hold", module, name)
}

// storageTable collects the storages a pickle's persistent ids name.
type storageTable struct {
	byKey map[string]*storageRef
	order []string
}

// persistentLoad turns a persistent id ("storage", class, key, location,
// numel[, view_metadata]) into the *storageRef of key, one per key.
func (st *storageTable) persistentLoad(pid any) (any, error) {
	t, ok := pid.(*types.Tuple)
	if !ok || t.Len() < 5 {
		return nil, fmt.Errorf("a persistent id is a %T, not a storage tuple of 5 or 6", pid)
	}
	if kind, _ := t.Get(0).(string); kind != "storage" {
		return nil, fmt.Errorf("a persistent id of kind %v, not \"storage\"", t.Get(0))
	}
	class, ok := t.Get(1).(storageClass)
	if !ok {
		return nil, fmt.Errorf("a storage's class is a %T, not a torch storage class", t.Get(1))
	}
	key, ok := t.Get(2).(string)
	if !ok {
		return nil, fmt.Errorf("a storage's key is a %T, not a string", t.Get(2))
	}
	numel, err := pickleInt(t.Get(4), fmt.Sprintf("storage %q's element count", key))
	if err != nil {
		return nil, err
	}
	if numel < 0 {
		return nil, fmt.Errorf("storage %q has %d elements", key, numel)
	}
	if t.Len() > 5 && t.Get(5) != nil {
		return nil, fmt.Errorf("storage %q is a view of another storage (torch < 0.4's format), not supported", key)
	}
	if s, ok := st.byKey[key]; ok {
		if s.class != class || s.numel != numel {
			return nil, fmt.Errorf("storage %q is named as %s of %d and as %s of %d elements", key, s.class.name, s.numel, class.name, numel)
		}
		return s, nil
	}
	s := &storageRef{class: class, key: key, numel: numel}
	if st.byKey == nil {
		st.byKey = map[string]*storageRef{}
	}
	st.byKey[key] = s
	st.order = append(st.order, key)
	return s, nil
}

// unpickle runs gopickle on one whole pickle held in buf (checked by
// scanPickle first), with the state dict's classes and, if st is not nil,
// its storages. gopickle panics on some malformed input: that is an error
// here.
func unpickle(buf []byte, st *storageTable) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("malformed pickle: %v", r)
		}
	}()
	u := pickle.NewUnpickler(&byteSliceReader{b: buf})
	u.FindClass = findClass
	if st != nil {
		u.PersistentLoad = st.persistentLoad
	}
	v, err = u.Load()
	if err != nil {
		return nil, fmt.Errorf("malformed pickle: %w", err)
	}
	return v, nil
}

// byteSliceReader reads a byte slice (io.Reader and io.ByteReader, so
// that gopickle reads it as it is).
type byteSliceReader struct {
	b []byte
	i int
}

// Read reads up to len(p) bytes.
func (r *byteSliceReader) Read(p []byte) (int, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.i:])
	r.i += n
	return n, nil
}

// ReadByte reads one byte.
func (r *byteSliceReader) ReadByte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	r.i++
	return r.b[r.i-1], nil
}

// Argument kinds of pickle opcodes (Python's pickletools).
const (
	argNone   = iota
	argFixed1 // 1 byte
	argFixed2
	argFixed4
	argFixed8
	argLine  // up to '\n'
	argLine2 // two lines (GLOBAL, INST)
	argLen1  // a 1-byte length, then that many bytes
	argLen4  // a 4-byte little-endian length, then that many bytes
	argLen8  // an 8-byte little-endian length, then that many bytes
	argFrame // an 8-byte frame length (the frame's opcodes follow)
)

// pickleArgs is the argument kind of every opcode of protocols 0 to 5;
// an opcode not in it is not a pickle opcode.
var pickleArgs = map[byte]int{
	'(': argNone, '.': argNone, '0': argNone, '1': argNone, '2': argNone, 'N': argNone,
	'Q': argNone, 'R': argNone, 'a': argNone, 'b': argNone, 'd': argNone, '}': argNone,
	'e': argNone, 'l': argNone, ']': argNone, 'o': argNone, 's': argNone, 't': argNone,
	')': argNone, 'u': argNone, 0x81: argNone, 0x85: argNone, 0x86: argNone, 0x87: argNone,
	0x88: argNone, 0x89: argNone, 0x8f: argNone, 0x90: argNone, 0x91: argNone, 0x92: argNone,
	0x93: argNone, 0x94: argNone, 0x97: argNone, 0x98: argNone,
	'K': argFixed1, 'h': argFixed1, 'q': argFixed1, 0x82: argFixed1, 0x80: argFixed1,
	'M': argFixed2, 0x83: argFixed2,
	'J': argFixed4, 'j': argFixed4, 'r': argFixed4, 0x84: argFixed4,
	'G': argFixed8,
	'I': argLine, 'L': argLine, 'S': argLine, 'V': argLine, 'P': argLine, 'g': argLine,
	'p': argLine, 'F': argLine,
	'c': argLine2, 'i': argLine2,
	'U': argLen1, 'C': argLen1, 0x8c: argLen1, 0x8a: argLen1,
	'T': argLen4, 'X': argLen4, 'B': argLen4, 0x8b: argLen4,
	0x8d: argLen8, 0x8e: argLen8, 0x96: argLen8,
	0x95: argFrame,
}

// errNoStop is scanPickle's error for a pickle cut off before STOP.
var errNoStop = errors.New("the pickle ends before its STOP opcode")

// pickleScanner steps over a pickle's opcodes, counting the bytes read.
type pickleScanner struct {
	br    *bufio.Reader
	n     int64 // bytes read
	avail int64 // bytes in the stream
}

// claim checks that k more bytes are left.
func (s *pickleScanner) claim(k int64) error {
	if k < 0 || k > s.avail-s.n {
		return fmt.Errorf("an opcode before byte %d claims %d bytes, %d are left", s.n, k, s.avail-s.n)
	}
	return nil
}

// skip steps over k bytes.
func (s *pickleScanner) skip(k int64) error {
	if err := s.claim(k); err != nil {
		return err
	}
	for k > 0 {
		d, err := s.br.Discard(int(min(k, 1<<20))) // int may be 32 bits
		s.n += int64(d)
		k -= int64(d)
		if err != nil {
			return errNoStop
		}
	}
	return nil
}

// uint reads a little-endian unsigned integer of width bytes.
func (s *pickleScanner) uint(width int) (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(s.br, b[:width]); err != nil {
		return 0, errNoStop
	}
	s.n += int64(width)
	return binary.LittleEndian.Uint64(b[:]), nil
}

// line steps over bytes up to and including a newline.
func (s *pickleScanner) line() error {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return errNoStop
		}
		s.n++
		if c == '\n' {
			return nil
		}
	}
}

// scanPickle reads the opcodes of one pickle from r, which holds avail
// bytes, up to its STOP, and returns the pickle's length. Every length
// an opcode claims must fit in the bytes left, so that unpickling the
// returned span allocates no more than the span's size.
func scanPickle(r io.Reader, avail int64) (int64, error) {
	s := &pickleScanner{br: bufio.NewReader(io.LimitReader(r, avail)), avail: avail}
	for {
		op, err := s.br.ReadByte()
		if err != nil {
			return 0, errNoStop
		}
		at := s.n
		s.n++
		kind, ok := pickleArgs[op]
		switch {
		case !ok:
			return 0, fmt.Errorf("byte %d: 0x%02x is not a pickle opcode", at, op)
		case op == '.':
			return s.n, nil
		}
		switch kind {
		case argFixed1:
			err = s.skip(1)
		case argFixed2:
			err = s.skip(2)
		case argFixed4:
			err = s.skip(4)
		case argFixed8:
			err = s.skip(8)
		case argLine:
			err = s.line()
		case argLine2:
			if err = s.line(); err == nil {
				err = s.line()
			}
		case argLen1, argLen4, argLen8, argFrame:
			width := map[int]int{argLen1: 1, argLen4: 4, argLen8: 8, argFrame: 8}[kind]
			var k uint64
			if k, err = s.uint(width); err != nil {
				break
			}
			if k > math.MaxInt64 {
				err = fmt.Errorf("byte %d: an opcode claims %d bytes", at, k)
			} else if kind == argFrame {
				err = s.claim(int64(k)) // the frame's opcodes are scanned as they come
			} else {
				err = s.skip(int64(k))
			}
		}
		if err != nil {
			return 0, err
		}
	}
}
