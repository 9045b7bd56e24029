package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/gops-dev/gops/gops
BenchmarkDeformConv2d/v2-256/forward+backward-2         	       3	 465339364 ns/op	113366621 B/op	    3712 allocs/op
BenchmarkDeformConv2d/v2-256/forward+backward-2         	       3	 475339364 ns/op	113366625 B/op	    3714 allocs/op
BenchmarkRoIAlign/kernel/forward-2           	      19	  59482297 ns/op	  51250000 min-ns/op	   69792 B/op	      23 allocs/op
BenchmarkRoIAlign/v2-256-2 --- FAIL
PASS
`

func TestParseGo(t *testing.T) {
	rows, err := parseGo(strings.NewReader(sample), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows", len(rows))
	}
	r := rows[0]
	if r.name != "DeformConv2d/v2-256/forward+backward" || len(r.ms) != 2 || median(r.ms) != 470.339364 || median(r.allocs) != 3713 {
		t.Errorf("row 0: %+v", *r)
	}
	if rows[1].name != "RoIAlign/kernel/forward" || len(rows[1].fastest) != 1 || rows[1].fastest[0] != 51.25 || len(r.fastest) != 0 {
		t.Errorf("row 1: %+v", *rows[1])
	}
	// GOMAXPROCS 1: no suffix to strip, v2-256 stays.
	rows, _ = parseGo(strings.NewReader(strings.ReplaceAll(sample, "-2 ", " ")), 1)
	if rows[0].name != "DeformConv2d/v2-256/forward+backward" {
		t.Errorf("procs 1: %q", rows[0].name)
	}
}

// TestBenchRegexp checks the regexp element by element the way go test
// matches -bench: the name split at slashes, element i against pattern i.
func TestBenchRegexp(t *testing.T) {
	re := benchRegexp("DeformConv2d/v2-256/forward+backward")
	if re != `^BenchmarkDeformConv2d$/^v2-256$/^forward\+backward$` {
		t.Fatal(re)
	}
	pats := strings.Split(re, "/")
	match := func(name string) bool {
		elems := strings.Split(name, "/")
		for i, e := range elems {
			if i < len(pats) && !regexp.MustCompile(pats[i]).MatchString(e) {
				return false
			}
		}
		return len(elems) == len(pats)
	}
	for name, want := range map[string]bool{
		"BenchmarkDeformConv2d/v2-256/forward+backward":   true,
		"BenchmarkDeformConv2d/v2-256/forward":            false,
		"BenchmarkDeformConv2d/v2/forward+backward":       false,
		"BenchmarkPSDeformConv2d/v2-256/forward+backward": false,
	} {
		if got := match(name); got != want {
			t.Errorf("%s: %t", name, got)
		}
	}
}

func TestTVName(t *testing.T) {
	for in, want := range map[string]string{
		"DeformConv2d/v1/forward@noopenblas": "DeformConv2d/v1/forward",
		"DeformConv2d/v1/forward":            "DeformConv2d/v1/forward",
		"SecondOrder/first-order@a b":        "SecondOrder/first-order",
	} {
		if got := tvName(in); got != want {
			t.Errorf("tvName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOrderPairs(t *testing.T) {
	var rows []*goRow
	for _, n := range []string{"SecondOrder/first-order", "SecondOrder/second-order", "SecondOrder/first-order@noopenblas",
		"SecondOrder/second-order@noopenblas", "Lonely/second-order", "ConvStackSecondOrder/second-order", "ConvStackSecondOrder/first-order"} {
		rows = append(rows, &goRow{name: n})
	}
	got := orderPairs(rows)
	want := []orderPair{
		{"SecondOrder", "SecondOrder/first-order", "SecondOrder/second-order"},
		{"SecondOrder@noopenblas", "SecondOrder/first-order@noopenblas", "SecondOrder/second-order@noopenblas"},
		{"ConvStackSecondOrder", "ConvStackSecondOrder/first-order", "ConvStackSecondOrder/second-order"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// TestReadTV: a name's time is its least over the files, with the CONFIG
// of the file that gave it and that file's peak RSS.
func TestReadTV(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"1t-default.r1.json": `{"A/forward": 3.0, "B/forward": 1.0, "maxrss_kib": 100}`,
		"2t-kept.r1.json":    `{"A/forward": 2.0, "B/forward": 4.0, "maxrss_kib": 200}`,
		"2t-kept.r2.json":    `{"A/forward": 2.5, "maxrss_kib": 300}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readTV(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tvResult{
		"A/forward": {2.0, 200, "2t-kept"},
		"B/forward": {1.0, 100, "1t-default"},
	}
	if len(got) != len(want) {
		t.Fatalf("readTV: %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("readTV[%q] = %+v, want %+v", k, got[k], w)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"A": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readTV(dir); err == nil {
		t.Error("readTV of a file with a non-number: no error")
	}
}
