package detection

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// benchModel is what the benchmarks use of a detector: *FCOS,
// *RetinaNet or *FasterRCNN (each also Trainable).
type benchModel interface {
	Forward([]*tensor.Dense) ([]Detections, error)
	Close() error
}

// benchDetector is scripts/bench_torchvision.py's build_detector: a
// random-init detector (kind fcos, retinanet, retinanet_v2, fasterrcnn or
// fasterrcnn_v2) on a ResNet-18 or -50 FPN (FrozenBatchNorm2d; the v2s
// BatchNorm2d, and FasterRCNNResNet50FPNV2's FPN and heads), 91 classes,
// min_size and max_size size (512 for inference), so two size×size
// images are not resized. fasterrcnn is FasterRCNNResNet50FPN(91) with
// the body swapped (resnet_fpn_backbone's: three trainable stages,
// layers 1–4, LastLevelMaxPool; the body's FrozenBatchNorm2d eps 1e-5,
// torchvision's default, as torch's side builds it).
func benchDetector(b *testing.B, kind, depth string, size float64) benchModel {
	body := ResNet50()
	if depth == "resnet18" {
		body = ResNet18()
	}
	c5 := 2048
	if depth == "resnet18" {
		c5 = 512
	}
	rng := rand.New(rand.NewPCG(0, 0))
	var m benchModel
	var err error
	switch kind {
	case "fasterrcnn", "fasterrcnn_v2":
		cfg := FasterRCNNResNet50FPN(91)
		if kind == "fasterrcnn_v2" {
			cfg = FasterRCNNResNet50FPNV2(91)
			body.NormLayer = BatchNorm2d
		}
		cfg.Backbone.Body = body
		cfg.Transform = NewGeneralizedRCNNTransform(size, size)
		m, err = NewFasterRCNN(cfg, tensor.Float32, rng)
	case "fcos":
		cfg := FCOSResNet50FPN(91)
		cfg.Backbone.Body = body
		cfg.Transform = NewGeneralizedRCNNTransform(size, size)
		m, err = NewFCOS(cfg, tensor.Float32, rng)
	default:
		cfg := RetinaNetResNet50FPN(91)
		if kind == "retinanet_v2" {
			cfg = RetinaNetResNet50FPNV2(91)
			body.NormLayer = BatchNorm2d
			cfg.Backbone.ExtraBlocks = LastLevelP6P7{InChannels: c5, OutChannels: 256}
		}
		body.Eps = cfg.Backbone.Body.Eps
		cfg.Backbone.Body = body
		cfg.Transform = NewGeneralizedRCNNTransform(size, size)
		m, err = NewRetinaNet(cfg, tensor.Float32, rng)
	}
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkDetector times Forward (transform, graph, postprocessing) of
// two 512×512 images, as bench_torchvision.py's
// Detector/KIND/DEPTH/inference; Faster R-CNN (v1, v2) on the ResNet-18
// FPN only.
func BenchmarkDetector(b *testing.B) {
	for _, kind := range []string{"fcos", "retinanet", "retinanet_v2", "fasterrcnn", "fasterrcnn_v2"} {
		for _, depth := range []string{"resnet18", "resnet50"} {
			if (kind == "fasterrcnn" || kind == "fasterrcnn_v2") && depth != "resnet18" {
				continue
			}
			b.Run(kind+"/"+depth+"/inference", func(b *testing.B) {
				m := benchDetector(b, kind, depth, 512)
				defer m.Close()
				images := benchImages()
				timeSteps(b, func() error { _, err := m.Forward(images); return err })
			})
		}
	}
}

// BenchmarkDetectorParts splits BenchmarkDetector's Forward: the transform
// (values), the backbone and FPN graph, the backbone with the heads (the
// whole graph Forward runs) and the postprocessing (values, on the
// graph's outputs).
func BenchmarkDetectorParts(b *testing.B) {
	for _, kind := range []string{"fcos", "retinanet"} {
		for _, depth := range []string{"resnet18", "resnet50"} {
			m := benchDetector(b, kind, depth, 512)
			var st *oneStage
			switch d := m.(type) {
			case *FCOS:
				st = d.m
			case *RetinaNet:
				st = d.m
			}
			images := benchImages()
			il, outs, anchors, err := st.rawOutputs(images)
			if err != nil {
				b.Fatal(err)
			}
			name := kind + "/" + depth + "/"
			b.Run(name+"transform", func(b *testing.B) {
				warmUp(b, func() error { _, err := st.transform.Transform(images); return err })
				for range b.N {
					if _, err := st.transform.Transform(images); err != nil {
						b.Fatal(err)
					}
				}
			})
			backbone := newRunner(func(x *gorgonia.Node) ([]*gorgonia.Node, any, error) {
				f, _, err := st.backbone.Forward(st.weights, "backbone", x, false)
				return f, nil, err
			})
			b.Run(name+"backbone", func(b *testing.B) {
				warmUp(b, func() error { _, _, err := backbone.run(il.Tensors); return err })
				for range b.N {
					if _, _, err := backbone.run(il.Tensors); err != nil {
						b.Fatal(err)
					}
				}
			})
			backbone.close()
			b.Run(name+"backbone+heads", func(b *testing.B) {
				warmUp(b, func() error { _, _, err := st.run.run(il.Tensors); return err })
				for range b.N {
					if _, _, err := st.run.run(il.Tensors); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"postprocess", func(b *testing.B) {
				warmUp(b, func() error { _, err := st.postprocess(outs, anchors, il.ImageSizes); return err })
				for range b.N {
					if _, err := st.postprocess(outs, anchors, il.ImageSizes); err != nil {
						b.Fatal(err)
					}
				}
			})
			m.Close()
		}
	}
}

// warmUp runs f at least twice and for at least a second before the
// timer starts, as bench_torchvision.py warms torch up: the graph built,
// both of ad.ReuseResults' arrays of every op allocated and faulted in.
func warmUp(b *testing.B, f func() error) {
	b.Helper()
	start := time.Now()
	for i := 0; i < 2 || time.Since(start) < time.Second; i++ {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
}

// timeSteps warms f up (warmUp), times b.N calls of it and reports the
// process's CPU time per call (cpu-ms/op: on a shared machine wall times
// include other processes' turns; both cores' time when they are free)
// and min-ns/op, the fastest single call (what bench_torchvision.py
// reports of torch: the least of its timed calls).
func timeSteps(b *testing.B, f func() error) {
	b.Helper()
	warmUp(b, f)
	cpu0, cpuOK := processCPU()
	best := time.Duration(math.MaxInt64)
	for range b.N {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(t0))
	}
	b.ReportMetric(float64(best.Nanoseconds()), "min-ns/op")
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	}
}

// benchImages is the benchmarks' two 512×512 images of uniform pixels.
func benchImages() []*tensor.Dense { return benchImagesOf(512) }

// benchImagesOf is two size×size images of uniform pixels.
func benchImagesOf(size int) []*tensor.Dense {
	rng := rand.New(rand.NewPCG(1, 1))
	images := make([]*tensor.Dense, 2)
	for i := range images {
		data := make([]float32, 3*size*size)
		for j := range data {
			data[j] = rng.Float32()
		}
		images[i] = tensor.New(tensor.WithShape(3, size, size), tensor.WithBacking(data))
	}
	return images
}
