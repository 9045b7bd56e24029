package detection_test

import (
	"fmt"
	"image"
	"image/color"

	"github.com/gops-dev/gops/detection"
	"gorgonia.org/tensor"
)

// ExampleFCOS loads a torchvision FCOS checkpoint (a tiny random model that
// scripts/gen_detection_models.py saved with torch.save; for COCO's, use
// detection.FCOSResNet50FPN(91) and torchvision's
// fcos_resnet50_fpn_coco-99b0c9b7.pth) and prints the best detections of
// a picture; torchvision's FCOS prints the same boxes, scores and labels
// for this checkpoint and picture.
func ExampleFCOS() {
	cfg := detection.FCOSConfig{
		Backbone: detection.BackboneWithFPN{
			Body: detection.ResNet{Block: detection.BasicBlock, Layers: []int{1, 1, 1, 1},
				StemWidth: 8, Planes: []int{8, 8, 16, 16}, NormLayer: detection.FrozenBatchNorm2d, Eps: 0},
			TrainableLayers: 3, ReturnedLayers: []int{2, 3, 4}, OutChannels: 32,
			ExtraBlocks: detection.LastLevelP6P7{InChannels: 32, OutChannels: 32},
		},
		NumClasses: 4,
		NumConvs:   2,
		Transform:  detection.NewGeneralizedRCNNTransform(160, 200),
		AnchorGenerator: detection.AnchorGenerator{
			Sizes:        [][]float64{{8}, {16}, {32}, {64}, {128}},
			AspectRatios: [][]float64{{1}, {1}, {1}, {1}, {1}},
		},
		Postprocess: detection.PostprocessConfig{ScoreThresh: 0.3, NMSThresh: 0.6, DetectionsPerImg: 30, TopkCandidates: 40},
	}
	// The checkpoint holds float32 tensors; a float64 model converts them.
	m, _, err := detection.LoadFCOS("../testdata/detection/fcos.pt", cfg, tensor.Float64,
		detection.LoadOptions{ConvertDtype: true})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// A 64×48 picture: a light square on a dark background.
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
	img, err := detection.ImageToTensor(pic, tensor.Float64)
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
	// 30 detections; the best three:
	// label 0 score 0.6017 box [32.24 10.24 39.93 10.24]
	// label 0 score 0.5935 box [35.84 13.80 41.54 15.36]
	// label 2 score 0.5791 box [20.01 9.49 25.60 12.91]
}
