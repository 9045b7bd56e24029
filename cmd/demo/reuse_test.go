package main

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist/scenes"
)

// TestMetaGraphReuseBitwise: the demo's graphs with ad.ReuseResults on (as
// built) and a twin switched off give the same values bit for bit over
// runs at several θ and two tasks, so that results written into the
// memory of two runs before change nothing the demo prints.
func TestMetaGraphReuseBitwise(t *testing.T) {
	cfg, l, rng, task := tinyLearnerAndTask(t, 5, 6)
	defer l.Close()
	train, _ := loadMNIST(t)
	task2, err := scenes.SampleTask(rand.New(rand.NewPCG(7, 7)), train, cfg.TrainClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene)
	if err != nil {
		t.Fatal(err)
	}
	bs, ks := sceneShape(cfg.Ways*cfg.Shots, cfg.Scene)
	bq, kq := sceneShape(cfg.Ways*cfg.Queries, cfg.Scene)
	var graphs [2]*MetaGraph
	var lgs [2]*LossGrad
	for i := range graphs {
		if graphs[i], err = NewMetaGraph(cfg.Arch, bs, ks, bq, kq, cfg.InnerLR); err != nil {
			t.Fatal(err)
		}
		defer graphs[i].Close()
		if lgs[i], err = NewLossGrad(cfg.Arch, bq, kq); err != nil {
			t.Fatal(err)
		}
		defer lgs[i].Close()
	}
	ad.ReuseResults(graphs[1].theta[0].Graph(), false)
	ad.ReuseResults(lgs[1].theta[0].Graph(), false)
	p := cfg.Arch.InitParams(rng)
	for run := range 6 {
		tk := task
		if run%3 == 1 {
			tk = task2
		}
		var mv [2]*MetaValues
		var lv [2]*LossGradValues
		for i := range graphs {
			if mv[i], err = graphs[i].Eval(p, tk); err != nil {
				t.Fatal(err)
			}
			if lv[i], err = lgs[i].Eval(p, tk.Query); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(mv[0], mv[1]) {
			t.Fatalf("run %d: meta-step values differ with reuse: query loss %v vs %v", run, mv[0].QueryLoss, mv[1].QueryLoss)
		}
		if !reflect.DeepEqual(lv[0], lv[1]) {
			t.Fatalf("run %d: loss-gradient values differ with reuse: loss %v vs %v", run, lv[0].Loss, lv[1].Loss)
		}
		p = p.AddScaled(-0.5, mv[0].MetaGrad)
	}
}
