//go:build !amd64 || purego

package cpu

// gatherRows does nothing here (the assembly is amd64's, not in purego
// builds): gatherPanel's Go loop does every row.
func gatherRows[T Float](panel []T, nr int, src []T, taps, pos []int) bool { return false }

// gatherAsm is off here: there is no assembly to switch.
var gatherAsm = false
