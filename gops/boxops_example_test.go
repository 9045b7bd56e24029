package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Two detector stages: NMS on values picks the boxes to keep, IndexSelect
// takes them into the next graph, and a GIoU loss against the targets is
// differentiated twice w.r.t. the predicted boxes.
func ExampleNMS() {
	pred := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking([]float64{0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 32}))
	scores := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.9, 0.8, 0.7}))
	keep, err := gops.NMS(pred, scores, 0.5) // box 1 overlaps box 0 with IoU 0.81
	if err != nil {
		panic(err)
	}
	fmt.Println("keep", keep)

	g := gorgonia.NewGraph()
	boxes := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 4), gorgonia.WithName("boxes"), gorgonia.WithValue(pred))
	idx, _ := ad.Constant(g, tensor.New(tensor.WithShape(len(keep)), tensor.WithBacking(keep)))
	kept, _ := gops.IndexSelect(boxes, idx) // boxes[keep]
	target, _ := ad.Constant(g, tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]float64{1, 0.5, 11, 10.5, 20, 21, 30, 31})))
	loss, err := gops.GeneralizedBoxIoULoss(kept, target, "sum", gops.DefaultBoxEps)
	if err != nil {
		panic(err)
	}
	d1, _ := ad.Grad(loss, boxes)
	s := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(d1[0]))))
	d2, _ := ad.Grad(s, boxes) // a second derivative through the loss
	var lv, d1v, d2v gorgonia.Value
	gorgonia.Read(loss, &lv)
	gorgonia.Read(d1[0], &d1v)
	gorgonia.Read(d2[0], &d2v)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Printf("loss %.4f\n", lv.Data())
	fmt.Printf("dL/dbox0 %.4f\n", d1v.Data().([]float64)[:4])
	fmt.Printf("box 1 gets %v\n", d1v.Data().([]float64)[4:8])
	fmt.Printf("d|∇L|²/dx1 of box 0 %.5f\n", d2v.Data().([]float64)[0])
	// Output:
	// keep [0 2]
	// loss 0.4286
	// dL/dbox0 [-0.0688 -0.0730 -0.0840 -0.0807]
	// box 1 gets [0 0 0 0]
	// d|∇L|²/dx1 of box 0 0.00443
}
