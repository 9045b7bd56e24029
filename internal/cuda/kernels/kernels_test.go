package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmbedded: every .cu of a folder has its PTX embedded, with entry
// points, and an unknown folder has none.
func TestEmbedded(t *testing.T) {
	for _, dir := range []string{"gops", "nn"} {
		cus, err := filepath.Glob(filepath.Join(dir, "*.cu"))
		if err != nil || len(cus) == 0 {
			t.Fatalf("no .cu files in %s: %v", dir, err)
		}
		mods := PTX(dir)
		if len(mods) != len(cus) {
			t.Errorf("%s: %d PTX modules for %d .cu files", dir, len(mods), len(cus))
		}
		for i, m := range mods {
			if len(EntryNames(m)) == 0 {
				t.Errorf("%s: module %d (%s) has no entry", dir, i, cus[i])
			}
			want, err := os.ReadFile(strings.TrimSuffix(cus[i], ".cu") + ".ptx")
			if err != nil || string(want) != m {
				t.Errorf("%s: module %d is not %s's PTX", dir, i, cus[i])
			}
		}
		if len(Entries(dir)) == 0 {
			t.Errorf("%s: no entries", dir)
		}
	}
	if PTX("other") != nil {
		t.Error("PTX(\"other\") is not empty")
	}
}
