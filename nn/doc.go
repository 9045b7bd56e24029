// Package nn has the layers of a detection network around gops' vision
// ops, as torch and torch.nn.functional compute them, differentiable to
// every order: MatMul (torch.matmul, torch.bmm); Linear; Conv2d and
// ConvTranspose2d; MaxPool2d, AvgPool2d, AdaptiveMaxPool2d and
// AdaptiveAvgPool2d; Interpolate (nearest, bilinear); GridSample and
// AffineGrid (spatial transformers); Softmax and LogSoftmax; CrossEntropy,
// MSELoss, SmoothL1Loss and BinaryCrossEntropyWithLogits; ReLU, LeakyReLU,
// Sigmoid, Tanh, SiLU and GELU; Reshape, Flatten, Narrow, Concat and
// Permute, copies that never alias an input; BatchNorm, GroupNorm and
// LayerNorm; Dropout.
//
// Every function takes and returns *gorgonia.Node and an error, with
// torch's parameter names Go-cased (in an options struct whose zero value
// is torch's default where there are several); the losses' reduction is
// an ad.Reduction whose zero value is torch's "mean". MatMul and the
// convolutions run their matrix products on gops' own (package gemm), or
// on OpenBLAS when the program installed it with openblas.Use. Tensors
// are float32 or float64, NCHW. Each op's
// backward is built from further differentiable ops (package ad), so
// ad.Grad differentiates any gradient again; use ad.Grad, not
// gorgonia.Grad. Results are bitwise the same for any GOMAXPROCS.
//
// Params is a model's parameter set, torch's named_parameters() and
// state_dict(): named tensors bound into graphs without copies (an
// in-place optimizer step reaches every graph), their gradients after a
// run (Params.Grad), and Save/Load in the safetensors format that torch
// reads and writes.
//
// The initialisers fill a float32 or float64 tensor in place as
// torch.nn.init does (Uniform, Normal, TruncNormal, Constant, Zeros, Ones,
// XavierUniform, XavierNormal, KaimingUniform, KaimingNormal, with
// CalculateGain and FanInAndFanOut), drawing from the caller's seeded
// *rand.Rand (torch's distributions, not torch's random stream);
// LinearInit and Conv2dInit make a layer's weight and bias as
// torch.nn.Linear's and Conv2d's reset_parameters do.
//
// Engine is a machine option (gorgonia.WithEngine) that runs Gorgonia's
// own Sum over every axis and same-shape Mul and Add in one vectorised,
// parallel pass: the forward of a loss written as Sum(HadamardProd(y, R)).
// BitwiseEngine is Engine without its Sum: every value bitwise the default
// engine's.
//
// Bad arguments (ranks, dtypes, channel counts, sizes) give an error that
// names the tensor and the problem when the node is built; a convolution,
// BatchNorm or pooling input that looks NHWC ([N, H, W, C]: its last axis
// fits the channels, axis 1 does not) adds a hint to permute it to NCHW.
// Errors found while the graph runs (CrossEntropy's targets out of range,
// say) arrive behind Gorgonia's "Failed to execute instruction" prefix;
// ad.RunAll and ad.Unwrap put the op's own message first, after the node.
package nn
