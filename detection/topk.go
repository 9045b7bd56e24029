package detection

import "math"

// torch.topk(largest=True, sorted=True) of a 1-D tensor on the CPU, with
// torch's order among equal values. torch 1.13's topk_impl_loop pairs
// every value with its index and then, with the comparator "x is NaN and
// y is not, or x > y", runs libstdc++'s std::partial_sort over the first k
// when k·64 <= n, and otherwise std::nth_element at k−1 followed by
// std::sort of the first k−1. Those algorithms are not stable, and which
// of equal values come first is whatever they leave; the functions below
// are libstdc++'s (bits/stl_algo.h, bits/stl_heap.h: introsort with a
// median-of-three pivot and a final insertion sort, threshold 16;
// introselect; heap select and sort_heap), so the indices of ties are
// torch's.

// topkElem is a value and its index.
type topkElem struct {
	v float64
	i int
}

// topkBefore is torch's comparator for largest: NaN first, then larger.
func topkBefore(x, y topkElem) bool {
	return (math.IsNaN(x.v) && !math.IsNaN(y.v)) || x.v > y.v
}

// topk returns the indices of the k largest of vals (0 <= k <= len(vals))
// in torch.topk's order.
func topk[T floatType](vals []T, k int) []int {
	if k <= 0 {
		return []int{}
	}
	q := make([]topkElem, len(vals))
	for i, v := range vals {
		q[i] = topkElem{float64(v), i}
	}
	if k*64 <= len(q) {
		stlPartialSort(q, k)
	} else {
		stlNthElement(q, k-1)
		stlSort(q[:k-1])
	}
	idx := make([]int, k)
	for j := range idx {
		idx[j] = q[j].i
	}
	return idx
}

// stlLg is std::__lg: ⌊log2 n⌋ for n > 0.
func stlLg(n int) int {
	l := -1
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}

// stlSort is std::sort(q.begin(), q.end(), topkBefore).
func stlSort(q []topkElem) {
	if len(q) < 2 {
		return
	}
	stlIntrosortLoop(q, 0, len(q), 2*stlLg(len(q)))
	if len(q) > 16 {
		stlInsertionSort(q, 0, 16)
		for i := 16; i < len(q); i++ {
			stlUnguardedLinearInsert(q, i)
		}
	} else {
		stlInsertionSort(q, 0, len(q))
	}
}

// stlIntrosortLoop is std::__introsort_loop over q[first:last].
func stlIntrosortLoop(q []topkElem, first, last, depth int) {
	for last-first > 16 {
		if depth == 0 {
			stlHeapSelect(q, first, last, last)
			stlSortHeap(q, first, last)
			return
		}
		depth--
		cut := stlPartitionPivot(q, first, last)
		stlIntrosortLoop(q, cut, last, depth)
		last = cut
	}
}

// stlPartitionPivot is std::__unguarded_partition_pivot: the median of
// q[first+1], q[mid], q[last−1] moved to q[first], then a Hoare partition
// of q[first+1:last] around it.
func stlPartitionPivot(q []topkElem, first, last int) int {
	mid := first + (last-first)/2
	a, b, c := first+1, mid, last-1
	var m int
	switch {
	case topkBefore(q[a], q[b]):
		switch {
		case topkBefore(q[b], q[c]):
			m = b
		case topkBefore(q[a], q[c]):
			m = c
		default:
			m = a
		}
	case topkBefore(q[a], q[c]):
		m = a
	case topkBefore(q[b], q[c]):
		m = c
	default:
		m = b
	}
	q[first], q[m] = q[m], q[first]
	lo, hi := first+1, last
	for {
		for topkBefore(q[lo], q[first]) {
			lo++
		}
		hi--
		for topkBefore(q[first], q[hi]) {
			hi--
		}
		if lo >= hi {
			return lo
		}
		q[lo], q[hi] = q[hi], q[lo]
		lo++
	}
}

// stlInsertionSort is std::__insertion_sort over q[first:last].
func stlInsertionSort(q []topkElem, first, last int) {
	for i := first + 1; i < last; i++ {
		if topkBefore(q[i], q[first]) {
			v := q[i]
			copy(q[first+1:i+1], q[first:i])
			q[first] = v
		} else {
			stlUnguardedLinearInsert(q, i)
		}
	}
}

// stlUnguardedLinearInsert is std::__unguarded_linear_insert at i.
func stlUnguardedLinearInsert(q []topkElem, i int) {
	v := q[i]
	for topkBefore(v, q[i-1]) {
		q[i] = q[i-1]
		i--
	}
	q[i] = v
}

// stlAdjustHeap is std::__adjust_heap over the heap q[first:first+n]
// with a hole at hole, placing v.
func stlAdjustHeap(q []topkElem, first, hole, n int, v topkElem) {
	top, child := hole, hole
	for child < (n-1)/2 {
		child = 2 * (child + 1)
		if topkBefore(q[first+child], q[first+child-1]) {
			child--
		}
		q[first+hole] = q[first+child]
		hole = child
	}
	if n&1 == 0 && child == (n-2)/2 {
		child = 2 * (child + 1)
		q[first+hole] = q[first+child-1]
		hole = child - 1
	}
	// std::__push_heap
	parent := (hole - 1) / 2
	for hole > top && topkBefore(q[first+parent], v) {
		q[first+hole] = q[first+parent]
		hole = parent
		parent = (hole - 1) / 2
	}
	q[first+hole] = v
}

// stlMakeHeap is std::__make_heap over q[first:last].
func stlMakeHeap(q []topkElem, first, last int) {
	n := last - first
	if n < 2 {
		return
	}
	for parent := (n - 2) / 2; ; parent-- {
		stlAdjustHeap(q, first, parent, n, q[first+parent])
		if parent == 0 {
			return
		}
	}
}

// stlPopHeap is std::__pop_heap(first, last, result).
func stlPopHeap(q []topkElem, first, last, result int) {
	v := q[result]
	q[result] = q[first]
	stlAdjustHeap(q, first, 0, last-first, v)
}

// stlHeapSelect is std::__heap_select(first, middle, last).
func stlHeapSelect(q []topkElem, first, middle, last int) {
	stlMakeHeap(q, first, middle)
	for i := middle; i < last; i++ {
		if topkBefore(q[i], q[first]) {
			stlPopHeap(q, first, middle, i)
		}
	}
}

// stlSortHeap is std::__sort_heap(first, last).
func stlSortHeap(q []topkElem, first, last int) {
	for last-first > 1 {
		last--
		stlPopHeap(q, first, last, last)
	}
}

// stlPartialSort is std::partial_sort(q.begin(), q.begin()+k, q.end()).
func stlPartialSort(q []topkElem, k int) {
	stlHeapSelect(q, 0, k, len(q))
	stlSortHeap(q, 0, k)
}

// stlNthElement is std::nth_element(q.begin(), q.begin()+nth, q.end())
// (std::__introselect).
func stlNthElement(q []topkElem, nth int) {
	first, last := 0, len(q)
	if first == last || nth == last {
		return
	}
	depth := 2 * stlLg(last-first)
	for last-first > 3 {
		if depth == 0 {
			stlHeapSelect(q, first, nth+1, last)
			q[first], q[nth] = q[nth], q[first]
			return
		}
		depth--
		cut := stlPartitionPivot(q, first, last)
		if cut <= nth {
			first = cut
		} else {
			last = cut
		}
	}
	stlInsertionSort(q, first, last)
}
