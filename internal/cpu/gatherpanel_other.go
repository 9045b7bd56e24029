//go:build !amd64 || purego

package cpu

// gatherRows does nothing here (no AVX2 kernel): gatherPanel's Go loop
// does every row.
func gatherRows[T Float](panel []T, nr int, src []T, taps, pos []int) bool { return false }

// gatherAsm is off here: there is no assembly to switch.
var gatherAsm = false
