// Command benchtable turns the raw results collected by scripts/bench.sh into
// the Markdown tables of BENCHMARKS.md. It is not meant to be run by hand.
//
//	benchtable procs
//	    prints the GOMAXPROCS a test binary started like this one gets, i.e.
//	    the -N suffix of go test's benchmark names (none when it is 1).
//	benchtable pairs -go GO.txt -tvnames NAMES
//	    prints "name<TAB>regexp" for every Go benchmark of GO.txt (raw
//	    go test -bench output) whose name is also a torchvision benchmark
//	    name (one per line in NAMES); regexp selects exactly that benchmark
//	    for -test.bench.
//	benchtable tables -go GO.txt -gorss RSS.tsv -tvdir DIR [-tvrssdir RSSDIR] -tvnames NAMES -floors FLOORS
//	    prints the tables. GO.txt may hold several runs of a benchmark (all
//	    rounds): the tables give their min, and the gops-only table also
//	    the median and max. RSS.tsv: "name<TAB>KiB" lines, the peak RSS of
//	    the process that ran only that Go benchmark. DIR/*.json: outputs of
//	    scripts/bench_torchvision.py, named CONFIG.anything.json (CONFIG
//	    says how torch ran, e.g. 2t-kept: 2 threads, freed blocks kept); a
//	    name's torchvision time is its min over every file and the table
//	    names the CONFIG that gave it. RSSDIR/*.json: the same outputs, one
//	    benchmark a process, whose maxrss_kib is that benchmark's
//	    torchvision peak RSS (without -tvrssdir, DIR's files give it).
//	    FLOORS: "work<TAB>floor" lines, e.g. DeformConv2d/v1/forward and
//	    Conv2d/forward.
//
// Names are those of scripts/bench_torchvision.py: Go's BenchmarkX/sub/...-N
// is "X/sub/...".
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fatalf("usage: benchtable procs | pairs ... | tables ...")
	}
	var err error
	switch os.Args[1] {
	case "procs":
		fmt.Println(runtime.GOMAXPROCS(0))
	case "pairs":
		err = pairsCmd(os.Args[2:], os.Stdout)
	case "tables":
		err = tablesCmd(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fatalf("benchtable: %v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

// goRow is one Go benchmark: its -count results in order.
type goRow struct {
	name              string
	ms, bytes, allocs []float64
	fastest           []float64 // min-ns/op in ms: a run's fastest single call, where reported
}

// parseGo reads go test -bench output; rows in order of first appearance.
// procs is GOMAXPROCS: the "-procs" suffix is removed when procs != 1.
func parseGo(r io.Reader, procs int) ([]*goRow, error) {
	suffix := ""
	if procs != 1 {
		suffix = "-" + strconv.Itoa(procs)
	}
	var rows []*goRow
	byName := map[string]*goRow{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line
		}
		name := strings.TrimSuffix(strings.TrimPrefix(f[0], "Benchmark"), suffix)
		row := byName[name]
		if row == nil {
			row = &goRow{name: name}
			byName[name] = row
			rows = append(rows, row)
		}
		for i := 3; i < len(f); i++ {
			v, err := strconv.ParseFloat(f[i-1], 64)
			if err != nil {
				continue
			}
			switch f[i] {
			case "ns/op":
				row.ms = append(row.ms, v/1e6)
			case "min-ns/op":
				row.fastest = append(row.fastest, v/1e6)
			case "B/op":
				row.bytes = append(row.bytes, v)
			case "allocs/op":
				row.allocs = append(row.allocs, v)
			}
		}
	}
	return rows, sc.Err()
}

// tvName is the torchvision benchmark a Go row is compared with: the row's
// name without the "@VARIANT" that scripts/bench.sh appends to the rows of
// its second run ("DeformConv2d/v1/forward@noopenblas").
func tvName(goName string) string {
	if i := strings.LastIndex(goName, "@"); i >= 0 {
		return goName[:i]
	}
	return goName
}

// benchRegexp selects exactly the Go benchmark called name ("X/sub/...")
// with -test.bench: each slash-separated element anchored and quoted.
func benchRegexp(name string) string {
	parts := strings.Split(name, "/")
	parts[0] = "Benchmark" + parts[0]
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func readLines(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, nil
}

func readGo(path string) ([]*goRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseGo(f, runtime.GOMAXPROCS(0))
}

// readGoNames reads the raw go test -bench output at goPath and the
// torchvision benchmark names at namesPath, the two inputs every command
// pairs up.
func readGoNames(goPath, namesPath string) ([]*goRow, []string, error) {
	rows, err := readGo(goPath)
	if err != nil {
		return nil, nil, err
	}
	names, err := readLines(namesPath)
	return rows, names, err
}

func pairsCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("pairs", flag.ContinueOnError)
	goPath := fs.String("go", "", "raw go test -bench output")
	namesPath := fs.String("tvnames", "", "torchvision benchmark names")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rows, names, err := readGoNames(*goPath, *namesPath)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if slices.Contains(names, r.name) {
			fmt.Fprintf(w, "%s\t%s\n", r.name, benchRegexp(r.name))
		}
	}
	return nil
}

// tvResult is one torchvision benchmark: its best time (ms) over the
// runs, the configuration that gave it, and a process's peak RSS (KiB).
type tvResult struct {
	ms, rssKiB float64
	config     string
}

// readTV reads the bench_torchvision.py outputs DIR/*.json: per name the
// least time over the files, with the CONFIG part of its file's name
// (up to the first dot), and the peak RSS of that file's process.
func readTV(dir string) (map[string]tvResult, error) {
	out := map[string]tvResult{}
	if dir == "" {
		return out, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var m map[string]float64
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		rss, ok := m["maxrss_kib"]
		if !ok {
			rss = -1
		}
		config, _, _ := strings.Cut(filepath.Base(path), ".")
		for k, v := range m {
			if old, seen := out[k]; k != "maxrss_kib" && (!seen || v < old.ms) {
				out[k] = tvResult{v, rss, config}
			}
		}
	}
	return out, nil
}

func readRSS(path string) (map[string]float64, error) {
	lines, err := readLines(path)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, l := range lines {
		name, kib, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(kib), 64); err == nil {
			out[name] = v
		}
	}
	return out, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// least is the smallest of xs, −1 (n/a) for none.
func least(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	return slices.Min(xs)
}

const na = "n/a"

// ms formats milliseconds with three significant-ish digits; x < 0 is n/a.
func ms(x float64) string {
	switch {
	case x < 0:
		return na
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

func mib(kib float64) string {
	if kib < 0 {
		return na
	}
	return fmt.Sprintf("%.0f MiB", kib/1024)
}

func ratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return na
	}
	return fmt.Sprintf("%.2f", a/b)
}

func num(x float64) string {
	if x < 0 {
		return na
	}
	return fmt.Sprintf("%.0f", x)
}

func tablesCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("tables", flag.ContinueOnError)
	goPath := fs.String("go", "", "raw go test -bench output")
	rssPath := fs.String("gorss", "", "name<TAB>KiB lines")
	tvDir := fs.String("tvdir", "", "directory of bench_torchvision.py JSON outputs")
	tvRSSDir := fs.String("tvrssdir", "", "directory of one-benchmark bench_torchvision.py outputs, for the peak RSS")
	namesPath := fs.String("tvnames", "", "torchvision benchmark names")
	floorsPath := fs.String("floors", "", "work<TAB>floor lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Every input is read before the first error (in this order) is returned.
	rows, names, err := readGoNames(*goPath, *namesPath)
	rss, rssErr := readRSS(*rssPath)
	tv, tvErr := readTV(*tvDir)
	tvRSS, tvRSSErr := readTV(*tvRSSDir)
	floors, floorsErr := readLines(*floorsPath)
	if err := cmp.Or(err, rssErr, tvErr, tvRSSErr, floorsErr); err != nil {
		return err
	}
	if *tvRSSDir != "" {
		for k, r := range tv {
			r.rssKiB = -1
			if v, ok := tvRSS[k]; ok {
				r.rssKiB = v.rssKiB
			}
			tv[k] = r
		}
	}
	goByName := map[string]*goRow{}
	for _, r := range rows {
		goByName[r.name] = r
	}
	tvGet := func(name string) tvResult {
		if r, ok := tv[name]; ok {
			return r
		}
		return tvResult{-1, -1, na}
	}
	goMs := func(name string) float64 {
		if r := goByName[name]; r != nil {
			return least(r.ms)
		}
		return -1
	}
	goRSS := func(name string) float64 {
		if v, ok := rss[name]; ok {
			return v
		}
		return -1
	}

	side := newSection("gops and torchvision side by side (float32)", 1,
		"work", "gops ms", "torchvision ms", "ratio (gops/torchvision)", "gops fastest call ms", "ratio of fastest calls",
		"torch's best", "gops peak RSS", "torchvision peak RSS")
	var goOnly []*goRow
	for _, r := range rows {
		if !slices.Contains(names, tvName(r.name)) {
			goOnly = append(goOnly, r)
			continue
		}
		t := tvGet(tvName(r.name))
		g, f := least(r.ms), least(r.fastest)
		side.add(r.name, ms(g), ms(t.ms), ratio(g, t.ms), ms(f), ratio(f, t.ms), t.config, mib(goRSS(r.name)), mib(t.rssKiB))
	}
	side.write(w, false)

	gops := newSection("gops only", 1, "benchmark", "min ms/op", "median", "max", "runs", "B/op", "allocs/op")
	gops.none = true
	for _, r := range goOnly {
		lo, hi := -1.0, -1.0
		if len(r.ms) > 0 {
			lo, hi = slices.Min(r.ms), slices.Max(r.ms)
		}
		gops.add(r.name, ms(lo), ms(median(r.ms)), ms(hi), strconv.Itoa(len(r.ms)), num(median(r.bytes)), num(median(r.allocs)))
	}
	gops.write(w, true)

	tvOnly := newSection("torchvision only", 1, "work", "torchvision ms", "torchvision peak RSS")
	tvOnly.none = true
	for _, n := range names {
		if goByName[n] == nil {
			t := tvGet(n)
			tvOnly.add(n, ms(t.ms), mib(t.rssKiB))
		}
	}
	tvOnly.write(w, true)

	if orders := orderPairs(rows); len(orders) > 0 {
		second := newSection("Second order against first order", 1,
			"work", "gops first ms", "gops second ms", "gops second / first",
			"torchvision first ms", "torchvision second ms", "torchvision second / first")
		second.intro = []string{
			"X/second-order against X/first-order of the same graph (the first-order pass",
			"plus a gradient penalty's gradient); issues 6 and 13 ask gops' second-order",
			"pass to cost at most 3x its first-order pass.",
		}
		for _, o := range orders {
			g1, g2 := goMs(o.first), goMs(o.second)
			t1, t2 := tvGet(tvName(o.first)).ms, tvGet(tvName(o.second)).ms
			second.add(o.work, ms(g1), ms(g2), ratio(g2, g1), ms(t1), ms(t2), ratio(t2, t1))
		}
		second.write(w, true)
	}

	if len(floors) > 0 {
		conv := newSection("Against plain convolution", 2,
			"work", "floor", "gops ms", "floor ms", "gops / floor", "torchvision ms", "torchvision / floor")
		conv.intro = []string{
			"The floor is torchvision's (i.e. torch's) dense convolution of the same size;",
			"issue 6 asks for gops' DeformConv2d forward at most 4x the floor's forward.",
		}
		for _, l := range floors {
			work, floor, ok := strings.Cut(l, "\t")
			if !ok {
				return fmt.Errorf("bad floors line %q", l)
			}
			g, f, t := goMs(work), tvGet(floor).ms, tvGet(tvName(work)).ms
			conv.add(work, floor, ms(g), ms(f), ratio(g, f), ms(t), ratio(t, f))
		}
		conv.write(w, true)
	}
	return nil
}

// section is one Markdown section of the tables: a "## title" heading,
// optional introductory lines, and a table whose header line is head and
// alignment row align.
type section struct {
	title       string
	intro       []string
	head, align string
	none        bool // an empty table is written as "(none)"
	rows        []string
}

// newSection starts a section whose table has the given column names; its
// first left columns are left-aligned, the others (numbers) right-aligned.
func newSection(title string, left int, cols ...string) section {
	align := make([]string, len(cols))
	for i := range align {
		align[i] = "---:"
		if i < left {
			align[i] = "---"
		}
	}
	return section{title: title, head: tableRow(cols), align: "|" + strings.Join(align, "|") + "|"}
}

// tableRow is the Markdown table row of the given cells.
func tableRow(cells []string) string {
	return "| " + strings.Join(cells, " | ") + " |"
}

// add appends a table row of the given cells.
func (s *section) add(cells ...string) {
	s.rows = append(s.rows, tableRow(cells))
}

// write writes the section, after a blank line when it is not the first.
func (s *section) write(w io.Writer, blankBefore bool) {
	if blankBefore {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "## "+s.title)
	fmt.Fprintln(w)
	if len(s.intro) > 0 {
		fmt.Fprintln(w, strings.Join(s.intro, "\n"))
		fmt.Fprintln(w)
	}
	if s.none && len(s.rows) == 0 {
		fmt.Fprintln(w, "(none)")
		return
	}
	fmt.Fprintln(w, s.head)
	fmt.Fprintln(w, s.align)
	for _, r := range s.rows {
		fmt.Fprintln(w, r)
	}
}

// orderPair is a Go benchmark X/second-order[@VARIANT] and its
// X/first-order[@VARIANT]; work is X[@VARIANT].
type orderPair struct{ work, first, second string }

// orderPairs finds the second-order rows of rows that have a first-order
// row of the same prefix and variant, in the order of rows.
func orderPairs(rows []*goRow) []orderPair {
	have := map[string]bool{}
	for _, r := range rows {
		have[r.name] = true
	}
	var out []orderPair
	for _, r := range rows {
		base := tvName(r.name)
		variant := r.name[len(base):]
		prefix, ok := strings.CutSuffix(base, "/second-order")
		if !ok {
			continue
		}
		if first := prefix + "/first-order" + variant; have[first] {
			out = append(out, orderPair{prefix + variant, first, r.name})
		}
	}
	return out
}
