// Command kernel prints the micro-kernel of gops' matrix product on this
// CPU (gemm.Kernel: avx512, avx2, neon or go), for scripts/gemm-table.sh.
package main

import (
	"fmt"

	"github.com/gops-dev/gops/gemm"
)

func main() { fmt.Println(gemm.Kernel()) }
