package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"gorgonia.org/tensor"
)

// StepDump is one meta-step's inputs and its results from gops, as
// -dump-step writes them for scripts/maml_torch.py --check: the parameters
// θ at the start of meta-training, the tasks of the first meta-step (drawn
// as MetaTrain draws them), and, per variant, each task's query loss and
// meta-gradient and their means over the tasks (as MetaTrain averages
// them). Every float64 is written in the shortest form that reads back to
// the same value, so the file holds the exact numbers.
type StepDump struct {
	Seed     uint64
	Ways     int
	InnerLR  float64 // α
	Arch     Arch
	Params   []DumpTensor // θ, in the order of paramNames
	Tasks    []DumpTask
	Variants []DumpVariant
}

// DumpTensor is a named tensor, row-major.
type DumpTensor struct {
	Name  string
	Shape []int
	Data  []float64
}

// DumpScene is one scene's graph inputs.
type DumpScene struct {
	Canvas DumpTensor // [B, 1, S, S]
	Boxes  DumpTensor // [K, 5], rows (canvas index, x1, y1, x2, y2)
	Target []int      // [K], labels in [0, ways)
}

// DumpTask is one task's support and query scenes.
type DumpTask struct {
	Support, Query DumpScene
}

// DumpVariant is one variant's results on the dumped step.
type DumpVariant struct {
	Variant   string // Variant.Short()
	QueryLoss float64
	Grad      []DumpTensor // mean meta-gradient over the tasks
	TaskLoss  []float64    // per task, Lq(θ')
	TaskGrad  [][]DumpTensor
}

func dumpTensor(name string, d *tensor.Dense) (DumpTensor, error) {
	data, ok := d.Data().([]float64)
	if !ok {
		return DumpTensor{}, fmt.Errorf("dump: %s is %v, want float64", name, d.Dtype())
	}
	return DumpTensor{Name: name, Shape: append([]int(nil), d.Shape()...), Data: data}, nil
}

func dumpScene(sc *scenes.Scene) (DumpScene, error) {
	c, err := dumpTensor("canvas", sc.Canvas)
	if err != nil {
		return DumpScene{}, err
	}
	b, err := dumpTensor("boxes", sc.Boxes)
	return DumpScene{Canvas: c, Boxes: b, Target: sc.Labels}, err
}

func dumpParams(a Arch, p Params) []DumpTensor {
	shapes := a.ParamShapes()
	out := make([]DumpTensor, numParams)
	for i := range p {
		out[i] = DumpTensor{Name: paramNames[i], Shape: shapes[i], Data: p[i]}
	}
	return out
}

// DumpStep computes the first meta-step of a run with cfg (θ from the
// seed's initial parameters, the tasks from its training stream) for each
// variant, task by task through Learner.Step.
func DumpStep(cfg Config, variants []Variant, train *scenes.Digits) (*StepDump, error) {
	l, p, rng, err := startRun(&cfg)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	d := &StepDump{Seed: cfg.Seed, Ways: cfg.Ways, InnerLR: cfg.InnerLR, Arch: cfg.Arch, Params: dumpParams(cfg.Arch, p)}
	tasks := make([]*scenes.Task, cfg.MetaBatch)
	for i := range tasks {
		if tasks[i], err = scenes.SampleTask(rng, train, cfg.TrainClasses, cfg.Ways, cfg.Shots, cfg.Queries, cfg.Scene); err != nil {
			return nil, err
		}
		var dt DumpTask
		if dt.Support, err = dumpScene(tasks[i].Support); err != nil {
			return nil, err
		}
		if dt.Query, err = dumpScene(tasks[i].Query); err != nil {
			return nil, err
		}
		d.Tasks = append(d.Tasks, dt)
	}
	n := float64(len(tasks))
	for _, v := range variants {
		dv := DumpVariant{Variant: v.Short()}
		sum := zerosLike(p)
		for _, t := range tasks {
			ts, err := l.Step(v, p, t)
			if err != nil {
				return nil, err
			}
			dv.QueryLoss += ts.QueryLoss / n
			dv.TaskLoss = append(dv.TaskLoss, ts.QueryLoss)
			dv.TaskGrad = append(dv.TaskGrad, dumpParams(cfg.Arch, ts.Grad))
			for a := range sum {
				for j := range sum[a] {
					sum[a][j] += ts.Grad[a][j] / n
				}
			}
		}
		dv.Grad = dumpParams(cfg.Arch, sum)
		d.Variants = append(d.Variants, dv)
	}
	return d, nil
}

// WriteStepDump writes d as JSON to path, gzipped if path ends in ".gz".
func WriteStepDump(path string, d *StepDump) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	var w io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		z := gzip.NewWriter(f)
		defer func() {
			if cerr := z.Close(); err == nil {
				err = cerr
			}
		}()
		w = z
	}
	return json.NewEncoder(w).Encode(d)
}

// startRun builds the Learner of cfg (completing cfg.Arch) and returns it
// with the seed's initial parameters and meta-training task stream, as
// RunMAML starts.
func startRun(cfg *Config) (*Learner, Params, *rand.Rand, error) {
	cfg.Arch.Ways, cfg.Arch.Canvas = cfg.Ways, cfg.Scene.Canvas
	l, err := NewLearner(*cfg)
	if err != nil {
		return nil, Params{}, nil, fmt.Errorf("building the graphs: %w", err)
	}
	return l, cfg.Arch.InitParams(stream(cfg.Seed, streamInit)), stream(cfg.Seed, streamTrain), nil
}

// runDump is the -dump-step mode: it writes the first meta-step of the run
// to path and reports on w.
func runDump(o *options, variants []Variant, path string, w io.Writer) error {
	train, _, err := loadDigits(o.data)
	if err != nil {
		return err
	}
	d, err := DumpStep(o.cfg, variants, train)
	if err != nil {
		return err
	}
	if err := WriteStepDump(path, d); err != nil {
		return fmt.Errorf("-dump-step: %w", err)
	}
	for _, v := range d.Variants {
		fmt.Fprintf(w, "dump    %s: mean query loss %.10f over %d tasks\n", v.Variant, v.QueryLoss, len(d.Tasks))
	}
	fmt.Fprintf(w, "dump    wrote %s\n", path)
	return nil
}

// loadDigits finds and reads the MNIST splits (dir: the -data flag).
func loadDigits(dir string) (train, test *scenes.Digits, err error) {
	dir, _, err = scenes.FindMNIST(dir)
	if err != nil {
		return nil, nil, err
	}
	return scenes.LoadDigits(dir)
}
