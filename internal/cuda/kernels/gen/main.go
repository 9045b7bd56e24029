//go:build nvrtc

// Command gen compiles the project's CUDA kernels (internal/cuda/kernels/gops/*.cu
// and internal/cuda/kernels/nn/*.cu, each folder with its own shared *.cuh
// headers) to PTX for compute_80 with NVRTC, the PTX that package kernels
// embeds for the `cuda` builds of packages gops and nn. It needs libnvrtc (CUDA 11.8; scripts/cuda-check sets it
// up), hence the build tag.
//
// From the repository root:
//
//	go run -tags nvrtc ./internal/cuda/kernels/gen                 rewrite every folder's *.ptx
//	go run -tags nvrtc ./internal/cuda/kernels/gen -dir D          rewrite D/*.ptx only
//	go run -tags nvrtc ./internal/cuda/kernels/gen -check          fail if a committed .ptx differs
//	go run -tags nvrtc ./internal/cuda/kernels/gen -gorgonia DIR   Gorgonia's own elementwise kernels into DIR
//
// Options: -arch=compute_80 (PTX that any driver >= 520 JIT-compiles, Hopper
// included) and -fmad=false (no fused multiply-add, so that the kernels round
// as the CPU kernels do).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"gorgonia.org/cu/nvrtc"
)

// Dirs are the kernel folders, relative to the repository root.
var Dirs = []string{"internal/cuda/kernels/gops", "internal/cuda/kernels/nn"}

// Options are the NVRTC options of every kernel.
var Options = []string{"--gpu-architecture=compute_80", "--fmad=false"}

// Compile returns the PTX of a CUDA C source; headers are extra include
// files by name. NVRTC's trailing NUL is dropped.
func Compile(name, src string, opts []string, headers ...nvrtc.Include) ([]byte, error) {
	p, err := nvrtc.CreateProgram(src, name, headers...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer p.Destroy()
	if err := p.Compile(opts...); err != nil {
		msg, _ := p.GetLog()
		return nil, fmt.Errorf("%s: %w\n%s", name, err, msg)
	}
	ptx, err := p.GetPTX()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return []byte(strings.TrimRight(ptx, "\x00")), nil
}

// Sources lists the kernel sources of dir.
func Sources(dir string) ([]string, error) {
	srcs, err := filepath.Glob(filepath.Join(dir, "*.cu"))
	if err == nil && len(srcs) == 0 {
		err = fmt.Errorf("no .cu files in %s", dir)
	}
	return srcs, err
}

// CompileFile compiles one kernel source, with every .cuh file of
// its folder available to #include by name.
func CompileFile(path string) ([]byte, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	hs, err := filepath.Glob(filepath.Join(filepath.Dir(path), "*.cuh"))
	if err != nil {
		return nil, err
	}
	var headers []nvrtc.Include
	for _, h := range hs {
		b, err := os.ReadFile(h)
		if err != nil {
			return nil, err
		}
		headers = append(headers, nvrtc.Include{Name: filepath.Base(h), Source: string(b)})
	}
	return Compile(filepath.Base(path), string(src), Options, headers...)
}

// Check compares every committed .ptx of dir with NVRTC's output for its .cu.
func Check(dir string) error {
	srcs, err := Sources(dir)
	if err != nil {
		return err
	}
	var stale []string
	for _, s := range srcs {
		ptx, err := CompileFile(s)
		if err != nil {
			return err
		}
		committed, err := os.ReadFile(strings.TrimSuffix(s, ".cu") + ".ptx")
		if err != nil || !bytes.Equal(committed, ptx) {
			stale = append(stale, filepath.Base(s))
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("PTX out of date for %v in %s: run `bash scripts/cuda-check --gen`", stale, dir)
	}
	return nil
}

// globl matches a kernel entry in PTX, as Gorgonia's cudagen does.
var globl = regexp.MustCompile(`// .globl\s+(\S+)`)

// gorgonia compiles Gorgonia's own elementwise kernels (not shipped as PTX by
// Gorgonia v0.9.18) into dir as NAME.ptx, with their kernel names in
// NAME.funcs. NVRTC has no host headers; CUDA's math functions are built in,
// so <math.h> is given as a header holding the constants.
func gorgonia(dir string) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "gorgonia.org/gorgonia").Output()
	if err != nil {
		return fmt.Errorf("locating gorgonia.org/gorgonia: %w", err)
	}
	srcs, err := Sources(filepath.Join(strings.TrimSpace(string(out)), "cuda modules", "src"))
	if err != nil {
		return err
	}
	math := nvrtc.Include{Name: "math.h", Source: "#define M_PI 3.14159265358979323846\n#define M_E 2.7182818284590452354\n"}
	for _, s := range srcs {
		src, err := os.ReadFile(s)
		if err != nil {
			return err
		}
		ptx, err := Compile(filepath.Base(s), string(src), []string{"--gpu-architecture=compute_80"}, math)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.Base(s), ".cu")
		var funcs []string
		for _, m := range globl.FindAllSubmatch(ptx, -1) {
			funcs = append(funcs, string(m[1]))
		}
		if err := os.WriteFile(filepath.Join(dir, name+".ptx"), ptx, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".funcs"), []byte(strings.Join(funcs, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	dir := flag.String("dir", "", "directory of the .cu sources and their .ptx (default: every folder of Dirs)")
	check := flag.Bool("check", false, "only check that the committed .ptx match")
	gdir := flag.String("gorgonia", "", "compile Gorgonia's elementwise kernels into this directory instead")
	flag.Parse()
	log.SetFlags(0)
	dirs := Dirs
	if *dir != "" {
		dirs = []string{*dir}
	}
	switch {
	case *gdir != "":
		if err := gorgonia(*gdir); err != nil {
			log.Fatal(err)
		}
	case *check:
		for _, d := range dirs {
			if err := Check(d); err != nil {
				log.Fatal(err)
			}
		}
	default:
		for _, d := range dirs {
			if err := generate(d); err != nil {
				log.Fatal(err)
			}
		}
	}
}

// generate rewrites every .ptx of dir from its .cu.
func generate(dir string) error {
	srcs, err := Sources(dir)
	if err != nil {
		return err
	}
	for _, s := range srcs {
		ptx, err := CompileFile(s)
		if err != nil {
			return err
		}
		if err := os.WriteFile(strings.TrimSuffix(s, ".cu")+".ptx", ptx, 0o644); err != nil {
			return err
		}
	}
	return nil
}
