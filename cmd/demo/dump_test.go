package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/internal/golden"
)

// TestDumpStep: the dump holds the seed's initial θ, the first meta-step's
// tasks as MetaTrain draws them, each task's meta-gradient from the graphs
// and their mean, and reads back from the gzipped JSON bit for bit.
func TestDumpStep(t *testing.T) {
	train, _ := loadMNIST(t)
	cfg := tinyConfig(1)
	cfg.MetaBatch = 2
	variants := []Variant{SecondOrder, FirstOrder}
	d, err := DumpStep(cfg, variants, train)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Arch.InitParams(stream(cfg.Seed, streamInit))
	rng := stream(cfg.Seed, streamTrain)
	l, err := NewLearner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if len(d.Params) != numParams || len(d.Tasks) != cfg.MetaBatch || len(d.Variants) != len(variants) {
		t.Fatalf("dump has %d parameters, %d tasks, %d variants", len(d.Params), len(d.Tasks), len(d.Variants))
	}
	for i, pt := range d.Params {
		if !reflect.DeepEqual(pt.Data, p[i]) || pt.Name != paramNames[i] {
			t.Errorf("parameter %d: %s is not the initial θ", i, pt.Name)
		}
	}
	for k, dt := range d.Tasks {
		task, err := scenes.SampleTask(rng, train, cfg.TrainClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []struct {
			got  DumpScene
			want *scenes.Scene
		}{{dt.Support, task.Support}, {dt.Query, task.Query}} {
			if !reflect.DeepEqual(s.got.Canvas.Data, s.want.Canvas.Data()) || !reflect.DeepEqual(s.got.Boxes.Data, s.want.Boxes.Data()) ||
				!reflect.DeepEqual(s.got.Target, s.want.Labels) || !reflect.DeepEqual(s.got.Boxes.Shape, []int(s.want.Boxes.Shape())) {
				t.Errorf("task %d: the dumped scene is not MetaTrain's", k)
			}
		}
		for vi, v := range variants {
			ts, err := l.Step(v, p, task)
			if err != nil {
				t.Fatal(err)
			}
			if dv := d.Variants[vi]; dv.TaskLoss[k] != ts.QueryLoss || !reflect.DeepEqual(tensorsData(dv.TaskGrad[k]), ts.Grad[:]) {
				t.Errorf("%s, task %d: dumped loss %v and gradient differ from Step's (loss %v)", v, k, dv.TaskLoss[k], ts.QueryLoss)
			}
		}
	}
	for _, dv := range d.Variants {
		for i, g := range dv.Grad {
			for j, x := range g.Data {
				var mean float64
				for k := range dv.TaskGrad {
					mean += dv.TaskGrad[k][i].Data[j] / float64(len(dv.TaskGrad))
				}
				if math.Abs(x-mean) > 1e-15*math.Abs(mean) {
					t.Fatalf("%s: mean gradient of %s[%d] is %v, want %v", dv.Variant, g.Name, j, x, mean)
				}
			}
		}
	}
	if reflect.DeepEqual(d.Variants[0].Grad, d.Variants[1].Grad) {
		t.Error("second- and first-order meta-gradients are the same")
	}

	path := filepath.Join(t.TempDir(), "step.json.gz")
	if err := WriteStepDump(path, d); err != nil {
		t.Fatal(err)
	}
	var back StepDump
	golden.Decode(t, path, &back)
	if !reflect.DeepEqual(&back, d) {
		t.Error("the file does not read back to the same dump")
	}
}

func tensorsData(ts []DumpTensor) [][]float64 {
	out := make([][]float64, len(ts))
	for i, t := range ts {
		out[i] = t.Data
	}
	return out
}

// TestBenchMetaSteps: each variant reports the number of timed steps and a
// minimum no larger than the median.
func TestBenchMetaSteps(t *testing.T) {
	train, _ := loadMNIST(t)
	rs, err := BenchMetaSteps(tinyConfig(0), []Variant{FirstOrder, SecondOrder}, train, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Variant != FirstOrder || rs[1].Variant != SecondOrder {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		if r.Steps != 3 || !(r.Min > 0 && r.Min <= r.Median) {
			t.Errorf("%s: %+v", r.Variant, r)
		}
	}
	if _, err := BenchMetaSteps(tinyConfig(0), []Variant{FirstOrder}, train, 0, 0); err == nil {
		t.Error("0 steps accepted")
	}
}

// TestDumpFlag: -dump-step and -bench-steps parse, and -dump-step writes
// the file instead of running the demo.
func TestDumpFlag(t *testing.T) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, err := parseFlags(fs, []string{"-dump-step", "a.json", "-bench-steps", "7"})
	if err != nil || o.dumpStep != "a.json" || o.benchSteps != 7 {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	if _, err := parseFlags(flag.NewFlagSet("demo", flag.ContinueOnError), []string{"-bench-steps", "-1"}); err == nil || !strings.Contains(err.Error(), "-bench-steps") {
		t.Errorf("-bench-steps -1: %v, want an error naming the flag", err)
	}
	loadMNIST(t)
	path := filepath.Join(t.TempDir(), "step.json")
	o = &options{cfg: tinyConfig(1), dumpStep: path, compare: true}
	var out, errOut bytes.Buffer
	if st := run(o, &out, &errOut); st != 0 {
		t.Fatalf("status %d: %s", st, errOut.String())
	}
	if !strings.Contains(out.String(), "wrote "+path) || !strings.Contains(out.String(), "second-order: mean query loss") {
		t.Errorf("output %q", out.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d StepDump
	if err := json.Unmarshal(data, &d); err != nil || len(d.Variants) != 2 || d.Variants[0].Variant != "second-order" {
		t.Errorf("the file holds %d variants, %v", len(d.Variants), err)
	}
}

// TestCPUProfileFlag: -cpuprofile parses, and startCPUProfile writes a
// profile (gzipped protobuf) that stop closes; a folder that does not
// exist is an error.
func TestCPUProfileFlag(t *testing.T) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o, err := parseFlags(fs, []string{"-cpuprofile", "cpu.prof"})
	if err != nil || o.cpuProfile != "cpu.prof" {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("profile of %d bytes, %v: want gzip data", len(data), err)
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "missing", "cpu.prof")); err == nil {
		t.Error("a profile in a missing folder accepted")
	}
}
