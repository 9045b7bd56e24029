package gops_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestBoxOpsKernelCodes: the function codes that the box ops send to
// internal/cuda/kernels/gops/boxops.cu (cpu.PointFn, internal/cpu/boxprims.go,
// PointMaximum for the .cu's fnMaximum; cpu.BoxConversion,
// internal/cpu/boxops.go, XYXYToXYWH for the .cu's xyxyToXYWH) are the
// .cu enums' (PointFn, ConvertKind), name for name and in order, so that
// the GPU runs the function the CPU does.
func TestBoxOpsKernelCodes(t *testing.T) {
	src, err := os.ReadFile("../internal/cuda/kernels/gops/boxops.cu")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		goFile, goType, cuEnum string
		cuName                 func(goName string) string
	}{
		{"../internal/cpu/boxprims.go", "PointFn", "PointFn", func(n string) string {
			return "fn" + strings.TrimPrefix(n, "Point") // Go's PointX is the .cu's fnX
		}},
		{"../internal/cpu/boxops.go", "BoxConversion", "ConvertKind", func(n string) string {
			from, to, _ := strings.Cut(n, "To") // Go's XYXYToXYWH is the .cu's xyxyToXYWH
			return strings.ToLower(from) + "To" + to
		}},
	} {
		goNames := goConstNames(t, c.goFile, c.goType)
		for i, n := range goNames {
			goNames[i] = c.cuName(n)
		}
		m := regexp.MustCompile(`enum\s+` + c.cuEnum + `\s*\{([^}]*)\}`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("internal/cuda/kernels/gops/boxops.cu: no enum %s", c.cuEnum)
		}
		var cuNames []string
		for _, line := range strings.Split(string(m[1]), "\n") {
			if i := strings.Index(line, "//"); i >= 0 {
				line = line[:i]
			}
			for _, n := range strings.Split(line, ",") {
				if n = strings.TrimSpace(n); n != "" {
					cuNames = append(cuNames, n)
				}
			}
		}
		if len(goNames) == 0 || !reflect.DeepEqual(goNames, cuNames) {
			t.Errorf("%s's %s constants %v differ from internal/cuda/kernels/gops/boxops.cu's enum %s %v", c.goFile, c.goType, goNames, c.cuEnum, cuNames)
		}
	}
}

// goConstNames are the names of the iota constants of type typ declared
// in file, in order.
func goConstNames(t *testing.T, file, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || len(g.Specs) == 0 {
			continue
		}
		first := g.Specs[0].(*ast.ValueSpec)
		if id, ok := first.Type.(*ast.Ident); !ok || id.Name != typ {
			continue
		}
		var names []string
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				names = append(names, n.Name)
			}
		}
		return names
	}
	t.Fatalf("%s: no const block of type %s", file, typ)
	return nil
}
