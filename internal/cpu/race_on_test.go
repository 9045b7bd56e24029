//go:build race

package cpu

// raceBuild: the race detector's build, whose instrumented code may give a
// commutative addition its operands the other way round (the NaN payload
// of NaN + NaN then differs).
const raceBuild = true
