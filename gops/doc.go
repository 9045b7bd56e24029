// Package gops adds torchvision's detection and deformable ops to Gorgonia
// expression graphs, differentiable to every order: RoIAlign
// (torchvision.ops.roi_align), RoIPool, PSRoIAlign, PSRoIPool,
// MultiScaleRoIAlign with BoxesToRoIs, and DeformConv2d
// (torchvision.ops.deform_conv2d, v1 and v2); the box functions (BoxArea,
// BoxConvert, ClipBoxesToImage, the IoUs and IoU losses, SigmoidFocalLoss,
// IndexSelect), whose losses' ad.Reduction defaults to torchvision's
// "none"; and NMS, BatchedNMS and RemoveSmallBoxes, which run on values
// between graph runs. Their matrix products are package nn's MatMul
// (torch.matmul, torch.bmm).
//
// Each op's backward is built from further differentiable nodes, so
// ad.Grad (package github.com/gops-dev/gops/ad) can differentiate a gradient
// again: gradient penalties, MAML, Hessian-vector products. Use ad.Grad or
// ad.VJP, not gorgonia.Grad, which is wrong when called a second time on a
// graph.
//
// Tensors are float32 or float64, laid out as in torchvision: images
// [N, C, H, W], boxes [K, 5] with rows (batch_index, x1, y1, x2, y2) in image
// pixels. Shape errors are reported when a node is built; errors that only
// the values show (a batch index out of range, a NaN box) when it runs.
//
// Importing gops changes no process-wide state (with the build tag cuda,
// its init registers the kernels' PTX with Gorgonia's CUDA library, which
// is how Gorgonia loads custom kernels). gops' matrix products (nn.MatMul,
// and so DeformConv2d's) run on gops' own product in Go assembly (package
// gemm: nothing to install, no cgo), or on OpenBLAS when the program
// installed it with openblas.Use; Gorgonia's own products run on Gorgonia's
// BLAS, which gorgonia.Use(gemm.Implementation{}) or openblas.Use make fast.
package gops
