package mnist_test

import (
	"fmt"
	"log"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The test split in shuffled batches of 100, torch's usual normalisation,
// each batch Let into a graph's input nodes and the graph run.
func ExampleLoader() {
	test, err := mnist.Load("", false) // "": the GoMNIST module's files
	if err != nil {
		log.Fatal(err)
	}
	loader, err := mnist.NewLoader(test, mnist.LoaderOpts{
		BatchSize: 100, Shuffle: true, Seed: 1, DropLast: true,
		Transform: mnist.Transform{Normalize: true, Mean: mnist.Mean, Std: mnist.Std},
	})
	if err != nil {
		log.Fatal(err)
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(100, 1, mnist.Size, mnist.Size), gorgonia.WithName("x"))
	y := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(100), gorgonia.WithName("y"))
	mean, err := gorgonia.Mean(x)
	if err != nil {
		log.Fatal(err)
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Close()
	batches, sum := 0, 0.0
	for images, labels := range loader.Epoch() {
		if err := gorgonia.Let(x, images); err != nil {
			log.Fatal(err)
		}
		if err := gorgonia.Let(y, labels); err != nil {
			log.Fatal(err)
		}
		if err := vm.RunAll(); err != nil {
			log.Fatal(err)
		}
		sum += float64(mean.Value().Data().(float32))
		vm.Reset()
		batches++
	}
	fmt.Printf("%d images, %d batches of %v and %v\n", test.Len(), batches, x.Shape(), y.Shape())
	fmt.Printf("normalised pixels: mean %.1f over the split\n", sum/float64(batches))
	// Output:
	// 10000 images, 100 batches of (100, 1, 28, 28) and (100)
	// normalised pixels: mean 0.0 over the split
}
