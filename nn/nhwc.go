package nn

import (
	"fmt"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// nhwcHint is what an error about the 4-D input node x adds when x looks
// NHWC ([N, H, W, C], TensorFlow's and images' layout) where nn wants NCHW:
// its last axis equals the channel count c that the op wants and axis 1
// does not. c < 0 means the op does not know the channels (a pooling):
// then x looks NHWC when its last axis is at most 4 (grey, RGB or RGBA
// planes) and below axes 1 and 2. Otherwise the hint is "".
func nhwcHint(x *gorgonia.Node, c int) string {
	s := x.Shape()
	if s.Dims() != 4 {
		return ""
	}
	if c >= 0 && (s[3] != c || s[1] == c) || c < 0 && (s[3] > 4 || s[3] >= s[1] || s[3] >= s[2]) {
		return ""
	}
	return fmt.Sprintf("; input %s %v looks NHWC [N, H, W, C]; nn takes NCHW [N, C, H, W]: permute the data to %v (x.T(0, 3, 1, 2) and Materialize on a tensor.Dense) or the node with gorgonia.Transpose(x, 0, 3, 1, 2)",
		nodeName(x), s, tensor.Shape{s[0], s[3], s[1], s[2]})
}

// nodeName is x's name for an error, or its id where Gorgonia's name is
// empty or malformed.
func nodeName(x *gorgonia.Node) string {
	if n := x.Name(); n != "" && !strings.Contains(n, "%!") {
		return n
	}
	return fmt.Sprintf("node %d", x.ID())
}
