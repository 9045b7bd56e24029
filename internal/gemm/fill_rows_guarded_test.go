//go:build linux

package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gops-dev/gops/internal/guardpage"
)

// guardedSlice is n elements against a PROT_NONE page: ending where it
// begins (tail) or starting right after one (guardpage.Slice).
func guardedSlice[T any](t *testing.T, n int, tail bool) ([]T, func()) {
	s, free, err := guardpage.Slice[T](n, tail)
	if err != nil {
		t.Fatal(err)
	}
	return s, free
}

// TestInterleaveRowsGuarded: every row exactly kb elements and dst exactly
// (kb−1)·st + len(rows) elements, each against a guard page (end, then
// start); the result Interleave's bits.
func TestInterleaveRowsGuarded(t *testing.T) {
	testInterleaveRowsGuarded[float32](t)
	testInterleaveRowsGuarded[float64](t)
}

func testInterleaveRowsGuarded[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tail := range []bool{true, false} {
		for rows := 1; rows <= 20; rows++ {
			for kb := 1; kb <= 41; kb++ {
				st := rows + r.IntN(3)
				var frees []func()
				src := make([][]T, rows)
				for j := range src {
					s, f := guardedSlice[T](t, kb, tail)
					frees = append(frees, f)
					copy(s, randSlice[T](r, kb))
					src[j] = s
				}
				n := (kb-1)*st + rows
				got, f := guardedSlice[T](t, n, tail)
				frees = append(frees, f)
				want := make([]T, n)
				for i := range got {
					got[i], want[i] = 7, 7
				}
				InterleaveRows(got, st, src, kb)
				for j, row := range src {
					Interleave(want[j:], st, row, kb, 1, kb)
				}
				for i := range got {
					if bitsOf(got[i]) != bitsOf(want[i]) {
						t.Fatalf("%T rows %d kb %d st %d tail %v: element %d differs", got[i], rows, kb, st, tail, i)
					}
				}
				for _, f := range frees {
					f()
				}
			}
		}
	}
}

// TestInterleaveRowsShort: a row shorter than kb, or a dst too short,
// panics (before any read past it).
func TestInterleaveRowsShort(t *testing.T) {
	for _, rows := range []int{1, 3, 8, 9, 16} {
		for _, kb := range []int{1, 7, 8, 9, 16, 17} {
			for bad := 0; bad < rows; bad += max(1, rows/3) {
				src := make([][]float32, rows)
				for j := range src {
					src[j] = make([]float32, kb)
				}
				src[bad] = src[bad][:kb-1]
				dst := make([]float32, (kb-1)*rows+rows)
				if !panics(func() { InterleaveRows(dst, rows, src, kb) }) {
					t.Fatalf("rows %d kb %d: short row %d did not panic", rows, kb, bad)
				}
			}
			src := make([][]float64, rows)
			for j := range src {
				src[j] = make([]float64, kb)
			}
			dst := make([]float64, (kb-1)*rows+rows-1)
			if !panics(func() { InterleaveRows(dst, rows, src, kb) }) {
				t.Fatalf("rows %d kb %d: short dst did not panic", rows, kb)
			}
		}
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// TestInterleave6Guarded: the AVX2 kernels' 6-row A panels (interleave
// with st = 6: interleaveS6 for whole blocks of 8 columns, the Go loop for
// the rest), src exactly its 6 rows (ld apart, the last kb long) and dst
// exactly 6·kb elements, each against a guard page (end, then start); every
// element alpha·v as the scalar loop rounds it, NaN payloads, ±Inf and
// −0 among the values.
func TestInterleave6Guarded(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	specials := []float32{float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00123), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
	for _, tail := range []bool{true, false} {
		for kb := 1; kb <= 41; kb++ {
			for _, alpha := range []float32{1, -0.5, 3} {
				ld := kb + r.IntN(3)
				src, f1 := guardedSlice[float32](t, 5*ld+kb, tail)
				copy(src, randSlice[float32](r, len(src)))
				for range 4 {
					src[r.IntN(len(src))] = specials[r.IntN(len(specials))]
				}
				dst, f2 := guardedSlice[float32](t, 6*kb, tail)
				interleave(dst, 6, src, ld, 0, 6, 0, kb, alpha)
				for p := 0; p < kb; p++ {
					for j := 0; j < 6; j++ {
						v := src[j*ld+p]
						want := alpha * v
						if math.Float32bits(dst[p*6+j]) != math.Float32bits(want) {
							t.Fatalf("kb %d ld %d α %v tail %v: dst[%d] = %#x, want %#x", kb, ld, alpha, tail, p*6+j, math.Float32bits(dst[p*6+j]), math.Float32bits(want))
						}
					}
				}
				f1()
				f2()
			}
		}
	}
}

// TestGatherPanelRows: GatherPanelRows copies every row's run bit for bit
// (NaN payloads, −0) and nothing else, on the AVX2 rows (64 and 128 bytes)
// and the Go loop (other widths, and with AVX2 off), float32 and float64,
// with src's runs against a guard page before or after it (the lowest or
// the highest run touching it) and dst's last row against one; a run past
// either end of src panics (as slicing does) rather than reading outside.
func TestGatherPanelRows(t *testing.T) {
	old := gatherAVX2
	defer func() { gatherAVX2 = old }()
	for _, on := range []bool{false, old} {
		gatherAVX2 = on
		t.Run(fmt.Sprintf("avx2=%v", on), func(t *testing.T) {
			testGatherPanelRows[float32](t)
			testGatherPanelRows[float64](t)
		})
	}
}

func testGatherPanelRows[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	size := int(unsafe.Sizeof(T(0)))
	bits := func(v T) uint64 {
		if size == 4 {
			return uint64(math.Float32bits(float32(v)))
		}
		return math.Float64bits(float64(v))
	}
	for _, w := range []int{1, 5, 64 / size, 128 / size, 64/size + 3} {
		for _, ld := range []int{w, w + 3} {
			for _, rows := range []int{1, 2, 7, 33} {
				for _, tail := range []bool{true, false} {
					n := 3*w + 40
					src, f1 := guardedSlice[T](t, n, tail)
					copy(src, randSlice[T](r, n))
					src[r.IntN(n)] = T(math.NaN())
					src[r.IntN(n)] = T(math.Copysign(0, -1))
					offs := make([]int, rows)
					for i := range offs {
						offs[i] = r.IntN(n - w + 1)
					}
					offs[r.IntN(rows)] = 0     // the first element
					offs[r.IntN(rows)] = n - w // the last
					dst, f2 := guardedSlice[T](t, (rows-1)*ld+w, true)
					sentinel := T(-7.5)
					for i := range dst {
						dst[i] = sentinel
					}
					GatherPanelRows(dst, ld, src, NewPanelRows(offs), w)
					for i := range dst {
						row, j := i/ld, i%ld
						want := sentinel
						if j < w {
							want = src[offs[row]+j]
						}
						if bits(dst[i]) != bits(want) {
							t.Fatalf("w %d ld %d rows %d: dst[%d] = %v, want %v", w, ld, rows, i, dst[i], want)
						}
					}
					for _, bad := range []int{-1, n - w + 1} {
						func() {
							defer func() {
								if recover() == nil {
									t.Fatalf("w %d: a run at %d of %d elements did not panic", w, bad, n)
								}
							}()
							o := append([]int(nil), offs...)
							o[rows-1] = bad
							GatherPanelRows(dst, ld, src, NewPanelRows(o), w)
						}()
					}
					f1()
					f2()
				}
			}
		}
	}
}
