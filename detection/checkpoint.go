package detection

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
	"gorgonia.org/tensor"
)

// Checkpoint is a state dict read from a torch.save file: the tensors of
// torch's model.state_dict() by key, as torch.load returns them, and the
// version metadata that torch's load_state_dict hands to each module's
// _load_from_state_dict (torchvision upgrades old key layouts by it).
//
// Every tensor is a fresh contiguous float32 or float64 *tensor.Dense of
// the saved tensor's shape (a view, a transposed or sliced tensor and
// tensors sharing a storage are materialised element by element from their
// storage offset, size and strides); a 0-d tensor has shape ().
type Checkpoint struct {
	// Keys are the state dict's keys in the file's order, less Dropped.
	Keys []string
	// Tensors holds a tensor for every key of Keys.
	Tensors map[string]*tensor.Dense
	// Versions is the state dict's _metadata: a module's prefix without
	// the trailing dot ("" for the root module, "head.classification_head")
	// to its _version when the file was saved. A prefix not in Versions
	// has no version (torch passes None, which torchvision's upgrades treat
	// as version 1).
	Versions map[string]int
	// Dropped are the keys read but left out of Tensors: every
	// num_batches_tracked (BatchNorm's int64 step counter, which neither
	// torchvision's FrozenBatchNorm2d nor Weights keep) and tensors without
	// elements (gorgonia's tensor package holds no empty dense tensor).
	Dropped []string
}

// maxDeflateRatio bounds a compressed zip record's size: deflate never
// expands more than 1032 to 1, so a larger claimed size is a corrupt file.
const maxDeflateRatio = 1032

// LoadCheckpoint reads the torch.save file at path, as ReadCheckpoint does
// (torch.load(path, map_location="cpu")).
//
// Errors: the file cannot be opened or stat'ed; ReadCheckpoint's errors,
// with the path.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("detection: LoadCheckpoint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("detection: LoadCheckpoint: %w", err)
	}
	ck, err := ReadCheckpoint(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return ck, nil
}

// ReadCheckpoint reads a state dict saved by torch.save from the size
// bytes of r, in either of torch's formats:
//
//   - the zip format (torch >= 1.6's default): an archive with one
//     top-level folder (named after the file, or "archive") holding
//     data.pkl, the pickled state dict whose tensors name their storages
//     by key, the storages' raw bytes as data/<key>, the format's version
//     record, and in torch >= 2.1 a byteorder record ("little" or "big",
//     little if absent);
//   - the legacy format (_use_new_zipfile_serialization=False): pickles of
//     the magic number, the protocol version 1001 and the system info
//     (its little_endian gives the byte order), the state dict, and the
//     list of storage keys, followed by each storage as its element count
//     (8 bytes) and its raw bytes.
//
// The pickles are read by github.com/nlpodyssey/gopickle. The state dict
// is a dict or an OrderedDict of string keys and tensors
// (torch._utils._rebuild_tensor_v2, or _rebuild_parameter around one);
// tensors of float32 (FloatStorage) and float64 (DoubleStorage) are read,
// and num_batches_tracked of any dtype is dropped (see Checkpoint).
//
// No allocation is larger than the file (a compressed zip record aside,
// which is bounded by its decompressed bytes), whatever sizes the file
// claims; the tensors together may be at most 4 times the file's size
// (tensors sharing a storage count once per tensor).
//
// Errors (each names the key or record where there is one): r is nil or
// size negative; the file is neither format, is truncated or corrupt (a
// zip checksum, a malformed pickle, a storage shorter than its tensors
// need, a size or stride that reaches outside the storage or that does not
// fit 64 bits); the pickle is not a dict of tensors, names a class other
// than the above or is a TorchScript archive; a tensor of another dtype;
// a tensor with more elements than its storage (an expanded view).
func ReadCheckpoint(r io.ReaderAt, size int64) (ck *Checkpoint, err error) {
	if r == nil {
		return nil, fmt.Errorf("detection: ReadCheckpoint: the reader is nil")
	}
	if size < 0 {
		return nil, fmt.Errorf("detection: ReadCheckpoint: size %d is negative", size)
	}
	defer func() {
		if p := recover(); p != nil {
			ck, err = nil, fmt.Errorf("detection: ReadCheckpoint: corrupt checkpoint: %v", p)
		}
	}()
	var head [4]byte
	n, _ := r.ReadAt(head[:], 0)
	var src *ckptSource
	if n == 4 && string(head[:]) == "PK\x03\x04" {
		src, err = openZip(r, size)
	} else {
		src, err = openLegacy(r, size)
	}
	if err == nil {
		ck, err = src.checkpoint()
	}
	if err != nil {
		return nil, fmt.Errorf("detection: ReadCheckpoint: %w", err)
	}
	return ck, nil
}

// ckptSource is an opened checkpoint: the unpickled state dict, its
// storages, and how to read a storage's bytes.
type ckptSource struct {
	root      any
	storages  *storageTable
	bigEndian bool
	size      int64
	read      func(s *storageRef) ([]byte, error)
	cache     map[string][]byte
}

// openZip opens a zip-format checkpoint and unpickles its data.pkl.
func openZip(r io.ReaderAt, size int64) (*ckptSource, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("a corrupt zip archive: %w", err)
	}
	files := make(map[string]*zip.File, len(zr.File))
	prefix := ""
	for _, f := range zr.File {
		files[f.Name] = f
		dir, base, ok := strings.Cut(f.Name, "/")
		switch {
		case ok && base == "constants.pkl":
			return nil, fmt.Errorf("record %s: a TorchScript archive (torch.jit.save), not a torch.save state dict", f.Name)
		case ok && base == "data.pkl" && prefix == "":
			prefix = dir + "/"
		}
	}
	if prefix == "" {
		return nil, fmt.Errorf("a zip archive without a <folder>/data.pkl record: not a torch.save file")
	}
	src := &ckptSource{storages: &storageTable{}, size: size}
	if f, ok := files[prefix+"byteorder"]; ok {
		b, err := readRecord(f, size)
		if err != nil {
			return nil, err
		}
		switch string(b) {
		case "little":
		case "big":
			src.bigEndian = true
		default:
			return nil, fmt.Errorf("record %s is %q, not \"little\" or \"big\"", f.Name, b)
		}
	}
	if f, ok := files[prefix+"version"]; ok {
		b, err := readRecord(f, size)
		if err != nil {
			return nil, err
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32); err != nil || v == 0 {
			return nil, fmt.Errorf("record %s is %q, not a format version", f.Name, b)
		}
	}
	pkl, err := readRecord(files[prefix+"data.pkl"], size)
	if err != nil {
		return nil, err
	}
	n, err := scanPickle(bytes.NewReader(pkl), int64(len(pkl)))
	if err == nil {
		src.root, err = unpickle(pkl[:n], src.storages)
	}
	if err != nil {
		return nil, fmt.Errorf("record %sdata.pkl: %w", prefix, err)
	}
	src.read = func(s *storageRef) ([]byte, error) {
		name := prefix + "data/" + s.key
		f, ok := files[name]
		if !ok {
			return nil, fmt.Errorf("storage %q: no record %s", s.key, name)
		}
		return readRecord(f, size)
	}
	return src, nil
}

// readRecord reads a whole zip record, checking its CRC-32. Its claimed
// size is bounded first: by the file's size for a stored record, by
// deflate's largest ratio for a compressed one.
func readRecord(f *zip.File, size int64) ([]byte, error) {
	limit := uint64(size)
	if f.Method != zip.Store {
		limit = min(f.CompressedSize64, uint64(size)) * maxDeflateRatio
	}
	if f.UncompressedSize64 > limit {
		return nil, fmt.Errorf("record %s claims %d bytes in a file of %d", f.Name, f.UncompressedSize64, size)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", f.Name, err)
	}
	return b, nil
}

// legacyMagic is torch's legacy format's magic number, in hexadecimal.
const legacyMagic = "1950a86a20f9469cfc6c"

// openLegacy opens a legacy-format checkpoint: its five pickles, and where
// each storage's bytes lie after them.
func openLegacy(r io.ReaderAt, size int64) (*ckptSource, error) {
	var off int64
	next := func(what string, st *storageTable) (any, error) {
		v, n, err := readPickle(r, off, size, st)
		if err != nil {
			return nil, fmt.Errorf("the legacy format's %s pickle at byte %d: %w", what, off, err)
		}
		off += n
		return v, nil
	}
	notCkpt := fmt.Errorf("neither a zip archive nor a legacy torch.save file (no magic number %s)", legacyMagic)
	magic, err := next("magic number", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", notCkpt, err)
	}
	if m, ok := magic.(*big.Int); !ok || m.Text(16) != legacyMagic {
		return nil, notCkpt
	}
	proto, err := next("protocol version", nil)
	if err != nil {
		return nil, err
	}
	if p, ok := proto.(int); !ok || p != 1001 {
		return nil, fmt.Errorf("the legacy format's protocol version is %v, not 1001", proto)
	}
	info, err := next("system info", nil)
	if err != nil {
		return nil, err
	}
	src := &ckptSource{storages: &storageTable{}, size: size}
	if d, ok := info.(*types.Dict); ok {
		if le, ok := d.Get("little_endian"); ok {
			src.bigEndian = le == false
		}
	}
	if src.root, err = next("state dict", src.storages); err != nil {
		return nil, err
	}
	keysV, err := next("storage keys", nil)
	if err != nil {
		return nil, err
	}
	keys, ok := keysV.(*types.List)
	if !ok {
		return nil, fmt.Errorf("the legacy format's storage keys are a %T, not a list", keysV)
	}
	where := map[string]int64{}
	for _, k := range *keys {
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("a legacy storage key is a %T, not a string", k)
		}
		s, ok := src.storages.byKey[key]
		if !ok {
			return nil, fmt.Errorf("storage %q is listed but no tensor names it", key)
		}
		var hdr [8]byte
		if _, err := r.ReadAt(hdr[:], off); err != nil {
			return nil, fmt.Errorf("storage %q at byte %d: the file ends: %w", key, off, err)
		}
		count := binary.LittleEndian.Uint64(hdr[:])
		if src.bigEndian {
			count = binary.BigEndian.Uint64(hdr[:])
		}
		if count != uint64(s.numel) {
			return nil, fmt.Errorf("storage %q at byte %d holds %d elements, its tensors say %d", key, off, count, s.numel)
		}
		n := s.numel * int64(s.class.elem) // numel <= size checked below first
		if s.numel > size || n > size-off-8 {
			return nil, fmt.Errorf("storage %q at byte %d: %d elements of %s need %d bytes, the file has %d left", key, off, s.numel, s.class.name, n, size-off-8)
		}
		where[key] = off + 8
		off += 8 + n
	}
	src.read = func(s *storageRef) ([]byte, error) {
		at, ok := where[s.key]
		if !ok {
			return nil, fmt.Errorf("storage %q is not in the file's storage keys", s.key)
		}
		b := make([]byte, s.numel*int64(s.class.elem)) // in the file: checked above
		if _, err := r.ReadAt(b, at); err != nil {
			return nil, fmt.Errorf("storage %q: %w", s.key, err)
		}
		return b, nil
	}
	return src, nil
}

// readPickle reads the pickle at byte off of r (size bytes) and returns
// its value and length.
func readPickle(r io.ReaderAt, off, size int64, st *storageTable) (any, int64, error) {
	if off >= size {
		return nil, 0, errNoStop
	}
	n, err := scanPickle(io.NewSectionReader(r, off, size-off), size-off)
	if err != nil {
		return nil, 0, err
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, off); err != nil {
		return nil, 0, err
	}
	v, err := unpickle(buf, st)
	return v, n, err
}

// checkpoint builds the Checkpoint of the unpickled state dict.
func (src *ckptSource) checkpoint() (*Checkpoint, error) {
	keys, values, meta, err := stateDictEntries(src.root)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Tensors: make(map[string]*tensor.Dense, len(keys)), Versions: map[string]int{}}
	if err := readVersions(meta, ck.Versions); err != nil {
		return nil, err
	}
	src.cache = map[string][]byte{}
	var total int64
	for i, key := range keys {
		t, ok := values[i].(*tensorRef)
		if !ok {
			return nil, fmt.Errorf("state dict entry %q is a %s, not a tensor", key, pyTypeName(values[i]))
		}
		if key == "num_batches_tracked" || strings.HasSuffix(key, ".num_batches_tracked") {
			ck.Dropped = append(ck.Dropped, key)
			continue
		}
		d, err := src.tensor(key, t, &total)
		if err != nil {
			return nil, err
		}
		if d == nil {
			ck.Dropped = append(ck.Dropped, key)
			continue
		}
		ck.Keys = append(ck.Keys, key)
		ck.Tensors[key] = d
	}
	return ck, nil
}

// pyTypeName names a gopickle value's Python type, for errors.
func pyTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case *types.Dict, *types.OrderedDict:
		return "dict"
	case *types.List:
		return "list"
	case *types.Tuple:
		return "tuple"
	case string:
		return "str"
	case int, *big.Int:
		return "int"
	case float64:
		return "float"
	}
	return fmt.Sprintf("%T", v)
}

// stateDictEntries returns the keys and values of a dict or OrderedDict
// (a plain dict's repeated key keeps its first place and last value, as
// Python's dict does) and the OrderedDict's _metadata attribute.
func stateDictEntries(root any) (keys []string, values []any, meta any, err error) {
	index := map[string]int{}
	add := func(k, v any) error {
		key, ok := k.(string)
		if !ok {
			return fmt.Errorf("the state dict has a key of type %s, not str", pyTypeName(k))
		}
		if i, ok := index[key]; ok {
			values[i] = v
			return nil
		}
		index[key] = len(keys)
		keys = append(keys, key)
		values = append(values, v)
		return nil
	}
	switch d := root.(type) {
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			entry := e.Value.(*types.OrderedDictEntry)
			if err := add(entry.Key, entry.Value); err != nil {
				return nil, nil, nil, err
			}
		}
		meta = d.PyDict["_metadata"]
	case *types.Dict:
		for _, entry := range *d {
			if err := add(entry.Key, entry.Value); err != nil {
				return nil, nil, nil, err
			}
		}
	default:
		return nil, nil, nil, fmt.Errorf("the file holds a %s, not a state dict (a dict of tensors)", pyTypeName(root))
	}
	return keys, values, meta, nil
}

// readVersions reads a state dict's _metadata ({prefix: {"version": n,
// ...}}) into versions; entries without a version are skipped.
func readVersions(meta any, versions map[string]int) error {
	if meta == nil {
		return nil
	}
	prefixes, values, _, err := stateDictEntries(meta)
	if err != nil {
		return fmt.Errorf("_metadata: %w", err)
	}
	for i, prefix := range prefixes {
		var v any
		var ok bool
		switch d := values[i].(type) {
		case *types.Dict:
			v, ok = d.Get("version")
		case *types.OrderedDict:
			v, ok = d.Get("version")
		default:
			return fmt.Errorf("_metadata[%q] is a %s, not a dict", prefix, pyTypeName(values[i]))
		}
		if !ok || v == nil {
			continue
		}
		n, err := pickleInt(v, fmt.Sprintf("_metadata[%q][\"version\"]", prefix))
		if err != nil {
			return err
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return fmt.Errorf("_metadata[%q][\"version\"] is %d", prefix, n)
		}
		versions[prefix] = int(n)
	}
	return nil
}
