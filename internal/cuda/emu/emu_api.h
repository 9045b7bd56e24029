// The emulator's C API (emu.cc), for emu.go.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
// emu_count is the number of emulated kernels; 0 <= i < emu_count.
int emu_count(void);
// emu_name is kernel i's PTX entry name.
const char *emu_name(int i);
// emu_sig is kernel i's parameters: one code each (emu.h's emu_code).
const char *emu_sig(int i);
// emu_source is kernel i's CUDA source, relative to the module root.
const char *emu_source(int i);
// emu_run_kernel runs kernel i over the threads ids[0..count) of a grid of
// grid blocks of block threads (ids null: every thread, forwards); args
// holds one 8-byte slot per parameter.
void emu_run_kernel(int i, const uint64_t *args, long long grid, long long block, const long long *ids, long long count);
#ifdef __cplusplus
}
#endif
