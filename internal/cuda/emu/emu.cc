//go:build cgo && linux && amd64

// The emulator's C entry points for emu.go: the kernels of every k_*.cc,
// numbered in k_table.h's order, and a launch of one of them.

#include "emu.h"
#include "emu_api.h"
#include "k_table.h"

static const emu_kernel *emu_at(int i) {
	for (const auto &s : emu_sources)
		for (const emu_kernel *k = s.kernels; k->name; k++, i--)
			if (i == 0) return k;
	return nullptr;
}

static const char *emu_source_at(int i) {
	for (const auto &s : emu_sources)
		for (const emu_kernel *k = s.kernels; k->name; k++, i--)
			if (i == 0) return s.source;
	return nullptr;
}

extern "C" {

int emu_count(void) {
	int n = 0;
	for (const auto &s : emu_sources)
		for (const emu_kernel *k = s.kernels; k->name; k++) n++;
	return n;
}

const char *emu_name(int i) { return emu_at(i)->name; }
const char *emu_sig(int i) { return emu_at(i)->sig; }
const char *emu_source(int i) { return emu_source_at(i); }

void emu_run_kernel(int i, const uint64_t *args, long long grid, long long block, const long long *ids, long long count) {
	emu_launch l = {args, grid, block, ids, count};
	emu_at(i)->run(&l);
}
}
