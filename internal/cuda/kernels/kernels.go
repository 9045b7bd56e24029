// Package kernels holds the CUDA kernels of packages gops (folder gops/)
// and nn (folder nn/): one .cu file per op family, as torchvision's
// csrc/ops/cuda, each folder with its shared .cuh headers, and the PTX
// that NVRTC compiles from them (gen, build tag nvrtc; committed, with a
// drift test). The PTX is embedded here, found by pattern: the cuda
// builds of gops and nn register every module of their folder, and the
// CPU emulator's tests (internal/cuda/emu) check that every entry of a
// folder was run. Pure Go, no build tag; only the cuda builds and the
// tests link it.
package kernels

import (
	"embed"
	"io/fs"
	"path"
	"regexp"
	"sort"
)

//go:embed gops/*.ptx nn/*.ptx
var ptx embed.FS

// PTX returns the PTX modules of kernel folder dir ("gops" or "nn"), one
// per .cu file, in the order of their file names; none for another dir.
func PTX(dir string) []string {
	names, _ := fs.Glob(ptx, path.Join(dir, "*.ptx")) // sorted; the pattern is well-formed
	var mods []string
	for _, n := range names {
		b, err := ptx.ReadFile(n)
		if err == nil {
			mods = append(mods, string(b))
		}
	}
	return mods
}

var entry = regexp.MustCompile(`\.entry\s+([A-Za-z0-9_]+)\(`)

// EntryNames returns the kernel entry points of a PTX module, in its
// order ("roialign_forward_f32", ...).
func EntryNames(module string) []string {
	var names []string
	for _, m := range entry.FindAllStringSubmatch(module, -1) {
		names = append(names, m[1])
	}
	return names
}

// Entries returns the entry points of every PTX module of kernel folder
// dir, sorted.
func Entries(dir string) []string {
	var names []string
	for _, m := range PTX(dir) {
		names = append(names, EntryNames(m)...)
	}
	sort.Strings(names)
	return names
}
