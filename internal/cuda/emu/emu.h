// emu.h: compile the unmodified CUDA kernels (internal/cuda/kernels/gops/*.cu,
// internal/cuda/kernels/nn/*.cu) as C++ for the CPU emulator of package emu.
//
// Each generated k_*.cc includes this header, then one .cu inside a
// namespace of its own (so the two families' helpers and LOOP macros never
// meet), then lists the file's entry points with EMU_ENTRY. A launch runs
// the kernel once per (block, thread) pair, one after the other, with
// blockIdx, threadIdx, blockDim and gridDim set as CUDA sets them; the
// order of the pairs is the caller's.
//
// The kernels are compiled as with -ffp-contract=off (NVRTC's
// --fmad=false: no fused multiply-add), -fwrapv and -fno-math-errno, set
// by the pragmas below. Signed int overflow is undefined behaviour under
// NVRTC as in C++; no kernel is meant to overflow, and -fwrapv only makes
// the emulator deterministic if one does (not "as on the GPU"). Pragmas,
// because cgo accepts none of these flags in #cgo CXXFLAGS. NVRTC's other
// defaults are IEEE division and square root, no flush to zero, which is
// C++'s arithmetic. CUDA's math library
// (exp, log, log1p, erf) is replaced by the C library's, which may differ
// in the last place: no kernel that calls one promises bitwise results.
// (With clang only the contraction pragma applies.) A float-to-int
// conversion of a value outside int's range saturates on the GPU, not
// here; the kernels convert only values they have checked.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <type_traits>
#include <utility>

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off", "wrapv", "no-math-errno")
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__

struct emu_uint3 {
	unsigned int x, y, z;
};

// The built-in variables, per OS thread: cgo calls from concurrent
// goroutines each run their own launch.
static thread_local emu_uint3 blockIdx, threadIdx, blockDim, gridDim;

// The intrinsics the kernels use, as exact C++ equivalents.
static inline int __float_as_int(float v) {
	int b;
	memcpy(&b, &v, 4);
	return b;
}
static inline float __int_as_float(int b) {
	float v;
	memcpy(&v, &b, 4);
	return v;
}
static inline long long __double_as_longlong(double v) {
	long long b;
	memcpy(&b, &v, 8);
	return b;
}
static inline double __longlong_as_double(long long b) {
	double v;
	memcpy(&v, &b, 8);
	return v;
}
using std::signbit;

// Atomics: the emulator runs one thread at a time, so they are plain
// read-modify-writes returning the old value.
static inline long long atomicMin(long long *p, long long v) {
	long long old = *p;
	if (v < old) *p = v;
	return old;
}
static inline int atomicAdd(int *p, int v) {
	int old = *p;
	*p = old + v;
	return old;
}

// emu_launch is one launch: the grid (blocks of `block` threads) and the
// threads to run, as global ids block·blockDim + thread, in order (ids
// null: all, forwards). args holds one 8-byte slot per kernel parameter,
// as gorgonia.org/cu copies them: a float in the low 4 bytes.
struct emu_launch {
	const uint64_t *args;
	long long grid, block;
	const long long *ids;
	long long count;
};

// emu_kernel is a table entry: the PTX entry name, its parameters' codes
// (p pointer, l long long, f float, d double; ? another type, which no
// kernel has: every integer parameter is a long long) and its runner.
struct emu_kernel {
	const char *name;
	const char *sig;
	void (*run)(const emu_launch *);
};

template <typename A> constexpr char emu_code() {
	if (std::is_pointer<A>::value) return 'p';
	if (std::is_same<A, long long>::value) return 'l';
	if (std::is_same<A, float>::value) return 'f';
	if (std::is_same<A, double>::value) return 'd';
	return '?';
}

template <typename... A> struct emu_sig_t {
	static constexpr char s[sizeof...(A) + 1] = {emu_code<A>()..., 0};
};

template <typename A> static inline A emu_arg(const uint64_t *slot) {
	A a;
	memcpy(&a, slot, sizeof(A)); // little-endian: the low bytes
	return a;
}

template <typename... A, size_t... I>
static inline void emu_call(void (*f)(A...), const uint64_t *args, std::index_sequence<I...>) {
	f(emu_arg<A>(args + I)...);
}

// emu_run runs kernel f over l's threads.
template <typename... A> static void emu_run(void (*f)(A...), const emu_launch *l) {
	blockDim = {(unsigned)l->block, 1, 1};
	gridDim = {(unsigned)l->grid, 1, 1};
	long long total = l->grid * l->block;
	long long count = l->ids ? l->count : total;
	for (long long t = 0; t < count; t++) {
		long long id = l->ids ? l->ids[t] : t;
		blockIdx = {(unsigned)(id / l->block), 0, 0};
		threadIdx = {(unsigned)(id % l->block), 0, 0};
		emu_call(f, l->args, std::index_sequence_for<A...>{});
	}
}

template <typename... A> static constexpr const char *emu_sig_of(void (*)(A...)) { return emu_sig_t<A...>::s; }

// EMU_ENTRY is a table entry for entry point name of namespace ns.
#define EMU_ENTRY(ns, name) \
	{#name, emu_sig_of(&ns::name), [](const emu_launch *l) { emu_run(&ns::name, l); }},
