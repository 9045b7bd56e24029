package detection

import (
	"encoding/binary"
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// tensor materialises the state dict entry key from its storage: nil (to
// drop) for a tensor without elements. total adds up the bytes of all
// tensors made so far, bounded by 4 times the file's size.
func (src *ckptSource) tensor(key string, t *tensorRef, total *int64) (*tensor.Dense, error) {
	s := t.storage
	var dt tensor.Dtype
	switch s.class.name {
	case "FloatStorage":
		dt = tensor.Float32
	case "DoubleStorage":
		dt = tensor.Float64
	default:
		return nil, fmt.Errorf("tensor %q is stored in a torch.%s: only float32 (FloatStorage) and float64 (DoubleStorage) tensors load", key, s.class.name)
	}
	if s.numel > src.size {
		return nil, fmt.Errorf("tensor %q: storage %q claims %d elements in a file of %d bytes", key, s.key, s.numel, src.size)
	}
	numel, err := checkGeometry(t)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", key, err)
	}
	if numel == 0 {
		return nil, nil
	}
	elem := int64(s.class.elem)
	if *total += numel * elem; *total > 4*src.size {
		return nil, fmt.Errorf("tensor %q: the tensors so far need %d bytes, more than 4 times the file's %d", key, *total, src.size)
	}
	raw, ok := src.cache[s.key]
	if !ok {
		if raw, err = src.read(s); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", key, err)
		}
		src.cache[s.key] = raw
	}
	if int64(len(raw))/elem < s.numel {
		return nil, fmt.Errorf("tensor %q: storage %q holds %d bytes, its %d elements of %s need %d", key, s.key, len(raw), s.numel, s.class.name, s.numel*elem)
	}
	var order binary.ByteOrder = binary.LittleEndian
	if src.bigEndian {
		order = binary.BigEndian
	}
	shape := make([]int, len(t.size))
	for i, n := range t.size {
		shape[i] = int(n) // n <= numel <= math.MaxInt: checkGeometry
	}
	var backing any
	if dt == tensor.Float32 {
		backing = gather(raw, t, numel, 4, func(b []byte) float32 { return math.Float32frombits(order.Uint32(b)) })
	} else {
		backing = gather(raw, t, numel, 8, func(b []byte) float64 { return math.Float64frombits(order.Uint64(b)) })
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing)), nil
}

// checkGeometry checks that t's storage offset, size and stride address
// elements of its storage only, and returns t's element count, at most
// the storage's (so that a tensor is never larger than the storage's
// bytes in the file: an expanded view, with stride 0, is an error).
func checkGeometry(t *tensorRef) (int64, error) {
	s := t.storage
	if len(t.size) != len(t.stride) {
		return 0, fmt.Errorf("size %v and stride %v differ in length", t.size, t.stride)
	}
	if t.offset < 0 {
		return 0, fmt.Errorf("storage offset %d is negative", t.offset)
	}
	for i := range t.size {
		if t.size[i] < 0 || t.stride[i] < 0 {
			return 0, fmt.Errorf("size %v or stride %v is negative", t.size, t.stride)
		}
		if t.size[i] == 0 {
			return 0, nil
		}
	}
	numel, last := int64(1), t.offset
	if last >= s.numel {
		return 0, fmt.Errorf("storage offset %d is outside storage %q of %d elements", t.offset, s.key, s.numel)
	}
	for i, n := range t.size {
		if numel > s.numel/n || numel*n > int64(math.MaxInt) {
			return 0, fmt.Errorf("size %v has more elements than storage %q's %d", t.size, s.key, s.numel)
		}
		numel *= n
		if n > 1 && t.stride[i] > 0 {
			if n-1 > (s.numel-1-last)/t.stride[i] {
				return 0, fmt.Errorf("storage offset %d, size %v and stride %v reach outside storage %q of %d elements", t.offset, t.size, t.stride, s.key, s.numel)
			}
			last += (n - 1) * t.stride[i]
		}
	}
	return numel, nil
}

// gather reads t's numel elements in row-major order from its storage's
// bytes raw (elements of elem bytes, decoded by at), following its storage
// offset and strides; checkGeometry has checked that they are in raw.
func gather[T float32 | float64](raw []byte, t *tensorRef, numel int64, elem int64, at func([]byte) T) []T {
	out := make([]T, numel)
	idx := make([]int64, len(t.size))
	pos := t.offset
	for k := range out {
		out[k] = at(raw[pos*elem:])
		for d := len(idx) - 1; d >= 0; d-- {
			idx[d]++
			pos += t.stride[d]
			if idx[d] < t.size[d] {
				break
			}
			pos -= t.stride[d] * t.size[d]
			idx[d] = 0
		}
	}
	return out
}
