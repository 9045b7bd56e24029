package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
)

// Checks of DeformConv2d with a bias (SwapAxes01AddBias) on odd shapes:
// unit sizes (inner = 1, a = 1, b = 1), kernels larger than the input with
// padding, strides larger than the input, offset groups vs groups, and the
// channels-last sampling path (>= 16 channels per offset group).
var oddDeformCases = []deformCase{
	{name: "1x1/all-ones", n: 1, cin: 1, h: 1, w: 1, cout: 1, groups: 1, kh: 1, kw: 1, og: 1, bias: true, offsetScale: 0.3},
	{name: "cout1/n1/L=6", n: 1, cin: 2, h: 2, w: 3, cout: 1, groups: 1, kh: 1, kw: 1, og: 2, bias: true, offsetScale: 0.6},
	{name: "cout1/n2/L=4", n: 2, cin: 1, h: 3, w: 3, cout: 1, groups: 1, kh: 2, kw: 2, og: 1, bias: true, mask: true, offsetScale: 0.6, maskShift: 0.5},
	{name: "L=1/cout1/n3", n: 3, cin: 2, h: 2, w: 2, cout: 1, groups: 1, kh: 2, kw: 2, og: 1, bias: true, mask: true, offsetScale: 0.6, maskShift: 0.5},
	{name: "kernel>input/pad", n: 1, cin: 1, h: 1, w: 1, cout: 2, groups: 1, kh: 3, kw: 3, og: 1, bias: true,
		opts: gops.DeformConv2dOpts{Padding: [2]int{1, 1}}, offsetScale: 0.9},
	{name: "stride>input", n: 2, cin: 2, h: 2, w: 3, cout: 2, groups: 2, kh: 1, kw: 2, og: 1, bias: true, mask: true,
		opts: gops.DeformConv2dOpts{Stride: [2]int{5, 7}, Padding: [2]int{1, 1}}, offsetScale: 1.1, maskShift: 0.3},
	{name: "og>groups", n: 1, cin: 4, h: 3, w: 3, cout: 2, groups: 1, kh: 2, kw: 2, og: 4, bias: true, mask: true, offsetScale: 0.8, maskShift: 0.4},
	{name: "groups>og", n: 1, cin: 4, h: 3, w: 3, cout: 4, groups: 4, kh: 2, kw: 2, og: 2, bias: true, offsetScale: 0.8},
}

func TestDeformConv2dBiasOddShapes(t *testing.T) {
	for _, c := range oddDeformCases {
		t.Run(c.name, func(t *testing.T) {
			in := c.inputs()
			if err := graphtest.Check(c.f, in, graphtest.Options{Order: 3, Seed: 3, Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}); err != nil {
				t.Fatal(err)
			}
			if c.name == "1x1/all-ones" {
				// Gorgonia's BatchedMatMul fails in the LispMachine when
				// every size is 1 ("MatMul on batch ... Expected (1, 1).
				// Got ()"); the TapeMachine is fine.
				return
			}
			checkDeformVMs(t, c)
		})
	}
}

// The channels-last sampling path (32 channels, 2 offset groups of 16, 4
// conv groups; and 1 offset group over 2 conv groups), with a bias: third
// order w.r.t. bias, offset and mask (numeric checks over all input
// pixels would be slow), Tape vs Lisp for all.
func TestDeformConv2dChannelsLast(t *testing.T) {
	cases := []deformCase{
		{name: "og2/groups4", n: 2, cin: 32, h: 3, w: 4, cout: 4, groups: 4, kh: 2, kw: 2, og: 2, bias: true, mask: true,
			opts: gops.DeformConv2dOpts{Padding: [2]int{1, 0}}, offsetScale: 0.9, maskShift: 0.3},
		{name: "og1/groups2/L>64", n: 1, cin: 16, h: 9, w: 9, cout: 2, groups: 2, kh: 1, kw: 1, og: 1, bias: true, offsetScale: 1.7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.inputs()
			if err := graphtest.Check(c.f, in, graphtest.Options{Order: 3, Wrt: []int{3}, Seed: 5, Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}); err != nil {
				t.Fatal(err)
			}
			if err := graphtest.Check(c.f, in, graphtest.Options{Order: 2, Wrt: []int{1}, Seed: 5, Eps: 1e-6, RTol: 2e-5, ATol: 1e-6}); err != nil {
				t.Fatal(err)
			}
			checkDeformVMs(t, c)
		})
	}
}
