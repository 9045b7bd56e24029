package gops

// What each op's CUDA twin needs (OpSpec.gpu): the geometry and which kernel
// of the family. The spec constructors set it; the `cuda` build's CUDADo
// (gops/cuda.go) dispatches on its type.
type (
	gpuRoIAlign struct {
		g         *RoIAlignGeom
		transpose bool
	}
	gpuPSRoI struct {
		g                *PoolGeom
		align, transpose bool
	}
	gpuRoIPool struct {
		g    *PoolGeom
		kind gpuPoolKind
	}
	gpuDeform struct {
		g    *DeformGeom
		kind deformKind
		a, b int
	}
	gpuOffsetLayout struct {
		g     *DeformGeom
		which int
		embed bool
	}
	gpuReshape struct{}
	gpuSwap01  struct {
		a, b int
		bias bool // SwapAxes01AddBias: a second input of [a]
	}
)

type gpuPoolKind int

const (
	gpuArgmax gpuPoolKind = iota
	gpuGather
	gpuScatterAdd
)
