package detection

import (
	"testing"
)

// benchTrainTargets are BenchmarkTrainStep's ground truth for two
// 256×256 images, bench_torchvision.py's TRAIN_TARGETS.
func benchTrainTargets() []Targets {
	return []Targets{
		{Boxes: newValue([]float32{20, 30, 120, 150, 100, 40, 220, 200, 10, 10, 60, 50}, 3, 4), Labels: []int{1, 5, 17}},
		{Boxes: newValue([]float32{50, 60, 200, 240, 0, 0, 256, 256}, 2, 4), Labels: []int{3, 42}},
	}
}

// BenchmarkTrainStep times one Trainer.StepImages (transform, forward,
// losses, backward, SGD with momentum and weight decay, the warm-up's
// step) of a random-init FCOS, RetinaNet or Faster R-CNN on a ResNet-18
// FPN, 91 classes, two 256×256 images, float32: bench_torchvision.py's
// TrainStep/KIND/resnet18 (model.train(), the loss dict's sum,
// backward, optimizer.step()). benchTrainTargets' labels are all >= 1,
// so Faster R-CNN (0 is its background) takes them as they are.
func BenchmarkTrainStep(b *testing.B) {
	for _, kind := range []string{"fcos", "retinanet", "fasterrcnn", "fasterrcnn_v2"} {
		b.Run(kind+"/resnet18", func(b *testing.B) {
			m := benchDetector(b, kind, "resnet18", 256)
			defer m.Close()
			tr, err := NewTrainer(m.(Trainable), DefaultTrainerOpts(2))
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			images, targets := benchImagesOf(256), benchTrainTargets()
			step := func() error { _, err := tr.StepImages(images, targets); return err }
			timeSteps(b, step)
		})
	}
}
