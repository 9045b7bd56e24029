package nn

import (
	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
)

// LogSumExpRows is CrossEntropy's row LogSumExp of x [N, C] → [N], for
// the golden test against torch.logsumexp(x, 1) (package nn_test).
func LogSumExpRows(x *gorgonia.Node) (*gorgonia.Node, error) {
	s := x.Shape()
	return ad.Apply(lseSpec(s[0], s[1]), x)
}
