package detection_test

import (
	"fmt"

	"github.com/gops-dev/gops/detection"
	"gorgonia.org/tensor"
)

// ExampleEvaluate scores two images' detections as pycocotools'
// COCOeval(cocoGt, cocoDt, "bbox") does: evaluate, accumulate and
// summarize, with its printed summary and its per-category AP (the numbers
// scripts/coco_eval_ref.py gives). The crowd region absorbs the second
// image's second detection.
func ExampleEvaluate() {
	boxes := func(b ...float64) *tensor.Dense {
		return tensor.New(tensor.WithShape(len(b)/4, 4), tensor.WithBacking(b))
	}
	scores := func(s ...float64) *tensor.Dense { return tensor.New(tensor.WithShape(len(s)), tensor.WithBacking(s)) }
	groundTruth := []detection.GroundTruth{
		{Boxes: boxes(10, 10, 60, 60, 100, 100, 300, 250), Labels: []int{1, 2}},
		{Boxes: boxes(20, 30, 40, 45, 0, 0, 200, 200), Labels: []int{1, 1}, IsCrowd: []bool{false, true}},
	}
	detections := []detection.Detections{
		{Boxes: boxes(12, 10, 60, 62, 100, 110, 300, 250, 150, 150, 180, 170), Scores: scores(0.9, 0.8, 0.7), Labels: []int{1, 2, 2}},
		{Boxes: boxes(21, 30, 40, 46, 50, 50, 70, 70), Scores: scores(0.95, 0.6), Labels: []int{1, 1}},
	}
	e, err := detection.Evaluate(detections, groundTruth)
	if err != nil {
		panic(err)
	}
	fmt.Print(e)
	fmt.Printf("categories %v: AP %.3f\n", e.Params.CatIDs, e.CategoryAP())
	// Output:
	// Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.875
	//  Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = 1.000
	//  Average Precision  (AP) @[ IoU=0.75      | area=   all | maxDets=100 ] = 1.000
	//  Average Precision  (AP) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = 0.800
	//  Average Precision  (AP) @[ IoU=0.50:0.95 | area=medium | maxDets=100 ] = 0.900
	//  Average Precision  (AP) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = 0.900
	//  Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = 0.875
	//  Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets= 10 ] = 0.875
	//  Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.875
	//  Average Recall     (AR) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = 0.800
	//  Average Recall     (AR) @[ IoU=0.50:0.95 | area=medium | maxDets=100 ] = 0.900
	//  Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = 0.900
	// categories [1 2]: AP [0.850 0.900]
}
