// Package cudnn is a cgo-free stand-in for gorgonia.org/cu/dnn, used only by
// scripts/cuda-check. Gorgonia v0.9.18's CUDA engine calls nothing of cuDNN
// but NewContext and Close (ops/nn, which needs more, is not built), and no
// reachable registry ships cudnn.h; the real package also targets cuDNN 7/8.
// scripts/cuda-check copies gorgonia.org/cu into its cache, replaces dnn/
// with this file and points a generated go.work at the copy. It lives under
// testdata/ so that `go build ./...` ignores it.
package cudnn

// Context stands in for a cuDNN handle; it holds nothing.
type Context struct{}

// NewContext returns an empty Context.
func NewContext() *Context { return &Context{} }

// Close does nothing.
func (*Context) Close() error { return nil }
