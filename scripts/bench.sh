#!/usr/bin/env bash
# Benchmarks gops' RoIAlign against torchvision's on this machine's CPU and
# writes the results to BENCHMARKS.md (or to the file given as $1).
#
#   scripts/bench.sh [OUTPUT.md]
#
# Environment:
#   PYTHON  python with torch and torchvision (default /usr/bin/python3);
#           if it cannot import torchvision, the torchvision columns are n/a.
#   COUNT   go test -count (default 5); the tables show the median over
#           the COUNT runs of each benchmark (min and max in the last table).
#   BENCHTIME  passed to go test -benchtime (default: go's 1s).
#
# Needs: go, awk; optional: /usr/bin/time (GNU time, for the Go peak RSS).
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-BENCHMARKS.md}
py=${PYTHON:-/usr/bin/python3}
count=${COUNT:-5}
benchtime=()
if [[ -n ${BENCHTIME:-} ]]; then benchtime=(-benchtime "$BENCHTIME"); fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

have_time=false
if /usr/bin/time -v true >/dev/null 2>&1; then have_time=true; fi

# gotest LABEL ARGS...: go test, run under GNU time when there is one; the
# peak RSS (KiB) of the test binary goes to $tmp/LABEL.rss.
gotest() {
	local label=$1
	shift
	local exec=()
	if $have_time; then exec=(-exec "/usr/bin/time -v -o $tmp/$label.time"); fi
	go test "${exec[@]}" "$@"
	if $have_time; then
		awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/$label.time" >"$tmp/$label.rss"
	fi
}

# 1. Go: every RoIAlign benchmark (timings, allocations).
echo "== go test -bench RoIAlign -count $count" >&2
gotest all -run '^$' -bench 'RoIAlign' -benchmem -count "$count" "${benchtime[@]}" ./gops | tee "$tmp/go.txt" >&2

# 2. Go peak RSS of the float32 forward and forward+backward only: the same
#    work as the torchvision process does (a separate process, since peak RSS
#    only grows).
echo "== go test -bench RoIAlign/^forward(+backward)?$ (peak RSS)" >&2
gotest f32 -run '^$' -bench 'RoIAlign/^forward(\+backward)?$' -benchmem -count 1 "${benchtime[@]}" ./gops >"$tmp/go_f32.txt"

# 3. torchvision.
tv_ok=false
if "$py" -c 'import torch, torchvision' >/dev/null 2>&1; then
	echo "== $py scripts/bench_torchvision.py" >&2
	if "$py" scripts/bench_torchvision.py >"$tmp/tv.json" 2>"$tmp/tv.err"; then
		tv_ok=true
	else
		cat "$tmp/tv.err" >&2
		echo "bench_torchvision.py failed; torchvision columns will be n/a" >&2
	fi
	cat "$tmp/tv.err" >&2
	# Peak RSS of importing torch and torchvision alone, for scale.
	"$py" -c 'import resource, torch, torchvision
from torchvision.ops import roi_align
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)' >"$tmp/tv_import.rss" 2>/dev/null || true
else
	echo "$py cannot import torchvision; torchvision columns will be n/a" >&2
fi

# tv KEY: a value of the torchvision JSON, or n/a.
tv() {
	if $tv_ok; then
		"$py" -c 'import json, sys; v = json.load(open(sys.argv[1])).get(sys.argv[2]); print("n/a" if v is None else v)' "$tmp/tv.json" "$1"
	else
		echo n/a
	fi
}
tv_versions=n/a
tv_threads=n/a
if $tv_ok; then
	# stderr line: "torch X, torchvision Y, threads N, warmup W, repeats R"
	tv_versions=$(sed -n 's/^torch \([^,]*\), torchvision \([^,]*\),.*/torch \1, torchvision \2/p' "$tmp/tv.err" | head -n1)
	tv_threads=$(sed -n 's/.*, threads \([0-9]*\),.*/\1/p' "$tmp/tv.err" | head -n1)
fi

# Go results as "name median_ms B/op allocs/op runs min_ms max_ms", in the
# order of the output, name without the Benchmark prefix and the -GOMAXPROCS
# suffix; medians over the -count runs.
awk '
function median(a, m,    i, j, t) {
	for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
}
$1 ~ /^BenchmarkRoIAlign\// {
	name = $1; sub(/^BenchmarkRoIAlign\//, "", name); sub(/-[0-9]+$/, "", name)
	if (!(name in cnt)) order[++n] = name
	c = ++cnt[name]
	ns[name, c] = bop[name, c] = allocs[name, c] = "n/a"
	for (i = 3; i <= NF; i++) {
		if ($i == "ns/op") ns[name, c] = $(i-1) / 1e6
		if ($i == "B/op") bop[name, c] = $(i-1)
		if ($i == "allocs/op") allocs[name, c] = $(i-1)
	}
}
END {
	for (i = 1; i <= n; i++) {
		name = order[i]; m = cnt[name]
		split("", a); split("", b); split("", al)
		for (j = 1; j <= m; j++) { a[j] = ns[name, j]; b[j] = bop[name, j]; al[j] = allocs[name, j] }
		med = median(a, m); lo = a[1]; hi = a[m]
		print name, med, (b[1] == "n/a" ? "n/a" : median(b, m)), (al[1] == "n/a" ? "n/a" : median(al, m)), m, lo, hi
	}
}' "$tmp/go.txt" >"$tmp/go.tsv"

gov() { awk -v n="$1" -v f="$2" '$1 == n {print $f; found=1} END {if (!found) print "n/a"}' "$tmp/go.tsv"; }
# fmt X: X with 1 decimal, or n/a.
fmt() { awk -v x="$1" 'BEGIN {if (x == "n/a" || x == "") print "n/a"; else printf "%.1f\n", x}'; }
# ratio A B: A/B with 2 decimals, or n/a.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "n/a" || b == "n/a" || a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b}'; }
mib() { awk -v k="$1" 'BEGIN {if (k == "n/a" || k == "") print "n/a"; else printf "%.0f MiB\n", k / 1024}'; }
file_or_na() { if [[ -s $1 ]]; then cat "$1"; else echo n/a; fi; }

g_fwd=$(gov forward 2)
g_fb=$(gov forward+backward 2)
g_kf=$(gov kernel/forward 2)
g_kt=$(gov kernel/transpose 2)
t_fwd=$(tv RoIAlign/forward)
t_fb=$(tv RoIAlign/forward+backward)
t_rss=$(tv maxrss_kib)
g_rss_f32=$(file_or_na "$tmp/f32.rss")
g_rss_all=$(file_or_na "$tmp/all.rss")
t_rss_import=$(file_or_na "$tmp/tv_import.rss")

# Graph overhead: what the TapeMachine adds to the two kernels.
overhead() { # graph kernels...
	awk -v g="$1" -v k="$2" 'BEGIN {if (g == "n/a" || k == "n/a") print "n/a"; else printf "%.1f ms (%.0f%%)\n", g - k, 100 * (g - k) / g}'
}
k_sum=$(awk -v a="$g_kf" -v b="$g_kt" 'BEGIN {if (a == "n/a" || b == "n/a") print "n/a"; else print a + b}')

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
cores=$(nproc 2>/dev/null || echo n/a)
# GOMAXPROCS as go test reports it: the -N suffix of the benchmark names.
procs=$(awk '$1 ~ /^BenchmarkRoIAlign\// {if (match($1, /-[0-9]+$/)) print substr($1, RSTART + 1); else print 1; exit}' "$tmp/go.txt")
gover=$(go version | awk '{print $3, $4}')
commit=$(git rev-parse --short HEAD 2>/dev/null || echo n/a)
if [[ -n $(git status --porcelain 2>/dev/null) ]]; then commit="$commit (with uncommitted changes)"; fi

{
	cat <<EOF
# Benchmarks

RoIAlign at the Mask R-CNN box-head size, on the CPU: input [2, 256, 50, 68]
float32, 512 random valid boxes (800x1088 image, batch indices 0/1, fixed
seed), output 7x7, spatial_scale 1/16, sampling_ratio 2, aligned=True.

- gops: \`BenchmarkRoIAlign\` in gops/roialign_bench_test.go; a graph built
  once, timed as \`m.Reset(); m.RunAll()\` on a TapeMachine. forward+backward
  is the RoIAlign node plus the input gradient of sum(out ⊙ G), built with
  \`gops.Grad\`.
- torchvision: scripts/bench_torchvision.py, \`roi_align\` under
  \`torch.no_grad()\`, and \`roi_align(...).backward(G)\`; median of 20 runs.

Generated by \`scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit.

## Machine

- CPU: ${cpu:-n/a}, $cores cores (Go GOMAXPROCS ${procs:-n/a}, torch threads $tv_threads)
- Go: $gover
- Python: $tv_versions

## Results (float32)

gops: median of $count runs of \`go test -bench\` (each the mean over
\`-benchtime\` ${BENCHTIME:-1s} of iterations); torchvision: median of 20 timed runs.

| work | gops ms | torchvision ms | ratio (gops/torchvision) |
|---|---:|---:|---:|
| forward | $(fmt "$g_fwd") | $(fmt "$t_fwd") | $(ratio "$g_fwd" "$t_fwd") |
| forward+backward | $(fmt "$g_fb") | $(fmt "$t_fb") | $(ratio "$g_fb" "$t_fb") |

Peak RSS (whole process):

| | gops | torchvision |
|---|---:|---:|
| forward and forward+backward, float32 | $(mib "$g_rss_f32") | $(mib "$t_rss") |
| baseline | | $(mib "$t_rss_import") (import torch, torchvision) |
| all RoIAlign benchmarks (incl. float64) | $(mib "$g_rss_all") | |

Go: \`/usr/bin/time -v\` on the test binary (maximum resident set size);
torchvision: the script's \`maxrss_kib\` (getrusage).

## Where gops' time goes

kernel/forward and kernel/transpose call the CPU kernels directly on
preallocated slices. The rest of forward+backward is the graph: the
TapeMachine allocates every output afresh and, besides the two RoIAlign
nodes, runs what sum(out ⊙ G) and its symbolic gradient compile to: out ⊙ G
and its Σ, four Repeats that broadcast the seed 1 to [512, 256, 7, 7],
G ⊙ ones (the gradient that reaches out), and out ⊙ ones (the gradient
w.r.t. G, unused but in the graph), all single-threaded.

| | ms |
|---|---:|
| kernel/forward | $(fmt "$g_kf") |
| kernel/transpose | $(fmt "$g_kt") |
| kernels together | $(fmt "$k_sum") |
| forward+backward on the TapeMachine | $(fmt "$g_fb") |
| graph overhead in forward+backward | $(overhead "$g_fb" "$k_sum") |
| graph overhead in forward | $(overhead "$g_fwd" "$g_kf") |

## All Go benchmarks

Median over the runs; min and max show how much a single run varies here.

| benchmark | ms/op | min | max | runs | B/op | allocs/op |
|---|---:|---:|---:|---:|---:|---:|
EOF
	awk '{printf "| %s | %.1f | %.1f | %.1f | %d | %.0f | %.0f |\n", $1, $2, $6, $7, $5, $3, $4}' "$tmp/go.tsv"
	cat <<'EOF'

Raw output of `go test`:

```
EOF
	grep -E '^(Benchmark|goos|goarch|cpu|pkg)' "$tmp/go.txt" || true
	cat <<'EOF'
```

## Re-running

```
scripts/bench.sh            # rewrites BENCHMARKS.md; about 1-2 minutes
scripts/bench.sh other.md   # writes elsewhere
COUNT=1 scripts/bench.sh    # quicker, noisier
PYTHON=python3 BENCHTIME=3s scripts/bench.sh
```

It needs Go, awk and, for the torchvision column, a python that imports
torch and torchvision (default /usr/bin/python3; otherwise that column is
n/a); GNU time (/usr/bin/time) for the Go peak RSS. On a shared virtual
machine single runs can differ by 2x or more (hence the medians, and the min
and max above); compare numbers from one machine and one run only.

Only the Go side:

```
go test -run '^$' -bench RoIAlign -benchmem ./gops
```

Profile of forward+backward:

```
go test -run '^$' -bench 'RoIAlign/^forward\+backward$' -benchtime 20x \
    -cpuprofile /tmp/cpu.out -memprofile /tmp/mem.out ./gops
go tool pprof -top /tmp/cpu.out        # or -top -cum; leaves gops.test in .
```
EOF
} >"$out"
echo "wrote $out" >&2
