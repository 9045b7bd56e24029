package detection_test

import (
	"fmt"
	"image"
	"image/color"

	"github.com/gops-dev/gops/detection"
	"gorgonia.org/tensor"
)

// ExampleFasterRCNN loads a torchvision Faster R-CNN checkpoint (a tiny
// random model that scripts/gen_detection_fasterrcnn.py saved with
// torch.save; for COCO's, use detection.FasterRCNNResNet50FPN(91) and
// torchvision's fasterrcnn_resnet50_fpn_coco-258fb6c6.pth) and prints the
// best detections of a picture; torchvision's FasterRCNN prints the same
// boxes, scores and labels for this checkpoint and picture.
func ExampleFasterRCNN() {
	cfg := detection.FasterRCNNResNet50FPN(4)
	cfg.Backbone = detection.BackboneWithFPN{
		Body: detection.ResNet{Block: detection.BasicBlock, Layers: []int{1, 1, 1, 1},
			StemWidth: 8, Planes: []int{8, 8, 16, 16}, NormLayer: detection.FrozenBatchNorm2d, Eps: 0},
		TrainableLayers: 3, ReturnedLayers: []int{1, 2, 3, 4}, OutChannels: 32,
		ExtraBlocks: detection.LastLevelMaxPool{},
	}
	cfg.Transform = detection.NewGeneralizedRCNNTransform(48, 80)
	cfg.AnchorGenerator = detection.AnchorGenerator{
		Sizes:        [][]float64{{8}, {16}, {32}, {64}, {128}},
		AspectRatios: [][]float64{{0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}},
	}
	cfg.RPN.PreNMSTopNTest, cfg.RPN.PostNMSTopNTest = 50, 40
	cfg.Representation = 24
	cfg.RoIHeads.ScoreThresh, cfg.RoIHeads.DetectionsPerImg = 0.1, 25
	// The checkpoint holds float32 tensors; a float64 model converts them.
	m, _, err := detection.LoadFasterRCNN("../testdata/detection/fasterrcnn.pt", cfg, tensor.Float64,
		detection.LoadOptions{ConvertDtype: true})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// A 64×48 picture: a light square on a dark background.
	img, err := detection.ImageToTensor(squarePicture(), tensor.Float64)
	if err != nil {
		panic(err)
	}
	dets, err := m.Forward([]*tensor.Dense{img})
	if err != nil {
		panic(err)
	}
	d := dets[0]
	boxes, scores := d.Boxes.Data().([]float64), d.Scores.Data().([]float64)
	fmt.Println(len(d.Labels), "detections; the best three:")
	for i := 0; i < 3; i++ {
		fmt.Printf("label %d score %.4f box [%.2f %.2f %.2f %.2f]\n", d.Labels[i], scores[i],
			boxes[4*i], boxes[4*i+1], boxes[4*i+2], boxes[4*i+3])
	}
	// Output:
	// 25 detections; the best three:
	// label 3 score 0.6075 box [23.88 16.62 36.85 22.92]
	// label 3 score 0.5936 box [33.81 14.29 49.05 48.00]
	// label 3 score 0.5005 box [16.66 7.93 51.22 47.60]
}

// ExampleFasterRCNNResNet50FPNV2 loads a torchvision Faster R-CNN v2
// checkpoint (a tiny random model of fasterrcnn_resnet50_fpn_v2's
// structure that scripts/gen_detection_fasterrcnn_v2.py saved: BatchNorm2d
// in the backbone and the FPN, two RPN convolutions, the conv-BN box head;
// for COCO's, use detection.FasterRCNNResNet50FPNV2(91) and torchvision's
// fasterrcnn_resnet50_fpn_v2_coco-dd69338a.pth) and prints the best
// detections of the picture of ExampleFasterRCNN; torchvision prints the
// same for this checkpoint and picture.
func ExampleFasterRCNNResNet50FPNV2() {
	cfg := detection.FasterRCNNResNet50FPNV2(4)
	cfg.Backbone.Body = detection.ResNet{Block: detection.BasicBlock, Layers: []int{1, 1, 1, 1},
		StemWidth: 8, Planes: []int{8, 8, 16, 16}, NormLayer: detection.BatchNorm2d, Eps: 1e-5}
	cfg.Backbone.OutChannels = 32
	cfg.ConvFCHead = &detection.FastRCNNConvFCHead{InputSize: [3]int{32, 7, 7}, ConvLayers: []int{16, 16},
		FCLayers: []int{24}, BatchNorm: true}
	cfg.Transform = detection.NewGeneralizedRCNNTransform(48, 80)
	cfg.AnchorGenerator = detection.AnchorGenerator{
		Sizes:        [][]float64{{8}, {16}, {32}, {64}, {128}},
		AspectRatios: [][]float64{{0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}, {0.5, 1, 2}},
	}
	cfg.RPN.PreNMSTopNTest, cfg.RPN.PostNMSTopNTest = 50, 40
	cfg.RoIHeads.ScoreThresh, cfg.RoIHeads.DetectionsPerImg = 0.1, 25
	m, _, err := detection.LoadFasterRCNN("../testdata/detection/fasterrcnn_v2.pt", cfg, tensor.Float64,
		detection.LoadOptions{ConvertDtype: true})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	img, err := detection.ImageToTensor(squarePicture(), tensor.Float64)
	if err != nil {
		panic(err)
	}
	dets, err := m.Forward([]*tensor.Dense{img})
	if err != nil {
		panic(err)
	}
	d := dets[0]
	boxes, scores := d.Boxes.Data().([]float64), d.Scores.Data().([]float64)
	fmt.Println(len(d.Labels), "detections; the best three:")
	for i := 0; i < 3; i++ {
		fmt.Printf("label %d score %.4f box [%.2f %.2f %.2f %.2f]\n", d.Labels[i], scores[i],
			boxes[4*i], boxes[4*i+1], boxes[4*i+2], boxes[4*i+3])
	}
	// Output:
	// 25 detections; the best three:
	// label 3 score 0.3266 box [41.14 22.85 47.38 25.46]
	// label 3 score 0.3172 box [42.07 27.69 47.74 29.76]
	// label 3 score 0.3069 box [1.16 6.66 8.46 11.12]
}

// squarePicture is a 64×48 picture: a light square on a dark
// background.
func squarePicture() image.Image {
	pic := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			c := color.RGBA{20, 30, 40, 255}
			if x >= 16 && x < 40 && y >= 10 && y < 34 {
				c = color.RGBA{230, 200, 120, 255}
			}
			pic.Set(x, y, c)
		}
	}
	return pic
}
