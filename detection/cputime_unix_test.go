//go:build unix

package detection

import "syscall"

// processCPU is the process's user and system CPU time in nanoseconds
// (all threads), for benchmarks on a shared machine, where wall times
// include the time other processes hold the cores.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
