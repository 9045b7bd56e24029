#!/usr/bin/env bash
# Benchmarks every gops op against torchvision's on this machine's CPU, side
# by side, and writes the results to BENCHMARKS.md (or to the file given).
#
#   scripts/bench.sh [--only REGEXP] [--skip REGEXP] [OUTPUT.md]
#
# Pairing: Go's BenchmarkX/sub/...-N is torchvision's "X/sub/..." of
# scripts/bench_torchvision.py. Benchmarks on both sides go into the main
# table, the rest into a gops-only and a torchvision-only table.
#
# Environment (the flags take precedence):
#   ONLY       run only the op families (X above: RoIAlign, DeformConv2d,
#              Conv2d, ...) that match this extended regexp as a whole, e.g.
#              ONLY='RoIAlign|DeformConv2d'. Conv2d, the plain-convolution
#              floor, comes along with DeformConv2d.
#   SKIP       skip the op families that match this regexp as a whole.
#   PYTHON     python with torch and torchvision (default /usr/bin/python3);
#              if it cannot import torchvision, the torchvision columns are n/a.
#   ROUNDS     rounds (default 2); each runs every Go benchmark (-count
#              COUNT) and then every torchvision benchmark in every torch
#              configuration, so that the two sides alternate. gops ms is the
#              min over all Go runs, torchvision ms the min over all rounds
#              and configurations (the table names the configuration).
#   COUNT      go test -count per round (default 3).
#   BENCHTIME  go test -benchtime (default 1s).
#   TV_REPEATS, TV_WARMUP, TV_WARMUP_S, TV_REPEAT_S
#              bench_torchvision.py --repeats (default 20), --warmup (default
#              3), --warmup-seconds (default 1: each torch benchmark warms
#              up for at least a second) and --repeat-seconds (default:
#              BENCHTIME's seconds, 0 for a BENCHTIME of Nx: torch's least
#              call is drawn from about as many calls as gops' fastest
#              call, min-ns/op).
#   TORCH_CONFIGS
#              the torch configurations, THREADSt-ALLOC words: ALLOC default
#              (glibc's malloc as it comes: blocks above its mmap threshold
#              are unmapped when freed and faulted in afresh), kept (glibc
#              keeping freed blocks: MALLOC_MMAP_MAX_=0 and a large
#              MALLOC_TRIM_THRESHOLD_) or jemalloc (libjemalloc.so.2 through
#              LD_PRELOAD). Default: 1t and 2t (up to the core count) with
#              default and kept, and jemalloc where Debian's libjemalloc2 is
#              installed. OPENBLAS_CORETYPE is set for both sides to SkylakeX on
#              a CPU with AVX-512, else Haswell on one with AVX2, unless set.
#   SECOND     when gops runs its matrix products on OpenBLAS (openblas.UseFromEnv()
#              in the gops tests' TestMain, as TestBLAS logs it), the op
#              families (extended regexp) timed a second time with
#              GOPS_BLAS=gonum, without OpenBLAS (nn.MatMul then runs on
#              gops' own product, package gemm; Gorgonia's own products on
#              gonum's pure-Go BLAS), as rows NAME@noopenblas (default
#              'DeformConv2d|SecondOrder', the ones with matrix products;
#              SECOND= for none).
#   GEMM       1 (default): also the matrix-product table (scripts/gemm-table.sh,
#              about 3 minutes); 0: not.
#
# Every torchvision benchmark runs in its own python process, and every
# paired Go benchmark once more in its own process (-count 1) under GNU time,
# for its peak RSS. Each round runs the torchvision benchmarks of one torch
# configuration in one python process; every benchmark then runs once more
# in a process of its own (2 threads, kept blocks, 3 runs), for its peak RSS.
# The defaults take about 30 minutes on 2 cores.
#
# Needs: go, awk; optional: /usr/bin/time (GNU time, for the Go peak RSS).
set -euo pipefail

cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; }

only=${ONLY:-}
skip=${SKIP:-}
out=BENCHMARKS.md
while (($#)); do
	case $1 in
	--only) only=$2; shift 2 ;;
	--only=*) only=${1#*=}; shift ;;
	--skip) skip=$2; shift 2 ;;
	--skip=*) skip=${1#*=}; shift ;;
	-h | --help) usage; exit 0 ;;
	-*) echo "unknown flag $1" >&2; usage >&2; exit 2 ;;
	*) out=$1; shift ;;
	esac
done
py=${PYTHON:-/usr/bin/python3}
rounds=${ROUNDS:-2}
count=${COUNT:-3}
benchtime=${BENCHTIME:-1s}
tv_repeats=${TV_REPEATS:-20}
tv_warmup=${TV_WARMUP:-3}
tv_warmup_s=${TV_WARMUP_S:-1}
if [[ $benchtime =~ ^([0-9.]+)s$ ]]; then
	tv_repeat_s=${TV_REPEAT_S:-${BASH_REMATCH[1]}}
else
	tv_repeat_s=${TV_REPEAT_S:-0}
fi
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
	if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
		export OPENBLAS_CORETYPE=SkylakeX
	elif grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
		export OPENBLAS_CORETYPE=Haswell
	fi
fi
jemalloc=
for f in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 /usr/lib/libjemalloc.so.2; do
	if [[ -r $f ]]; then jemalloc=$f; break; fi
done
if [[ -z ${TORCH_CONFIGS:-} ]]; then
	TORCH_CONFIGS=
	for t in 1 2; do
		((t == 1 || t <= $(nproc 2>/dev/null || echo 1))) || continue
		for a in default kept ${jemalloc:+jemalloc}; do TORCH_CONFIGS+="${t}t-$a "; done
	done
fi
for v in rounds count tv_repeats; do
	if [[ ! ${!v} =~ ^[1-9][0-9]*$ ]]; then
		echo "${v^^}=${!v}: want a whole number of at least 1" >&2
		exit 2
	fi
done
torch_configs=($TORCH_CONFIGS)
for c in "${torch_configs[@]}"; do
	if [[ ! $c =~ ^[1-9][0-9]*t-(default|kept|jemalloc)$ ]]; then
		echo "TORCH_CONFIGS: bad configuration '$c' (want THREADSt-default|kept|jemalloc)" >&2
		exit 2
	fi
	if [[ $c == *-jemalloc && -z $jemalloc ]]; then
		echo "TORCH_CONFIGS: $c, but no libjemalloc.so.2 (apt-get install libjemalloc2)" >&2
		exit 2
	fi
done
# torchrun CONFIG ARGS...: bench_torchvision.py ARGS under CONFIG.
torchrun() {
	local c=$1
	shift
	local env=()
	case ${c#*-} in
	kept) env=(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000) ;;
	jemalloc) env=(LD_PRELOAD=$jemalloc) ;;
	esac
	env "${env[@]}" "$py" scripts/bench_torchvision.py --threads "${c%%t-*}" "$@"
}
families2=${SECOND-DeformConv2d|SecondOrder}

# Floors: "work<TAB>floor"; the table "Against plain convolution" compares
# the gops and torchvision times of work with torchvision's time of floor.
# torchvision's Conv2d runs at the size of DeformConv2d v1 and v2 only.
floors=$'DeformConv2d/v1/forward\tConv2d/forward
DeformConv2d/v2/forward\tConv2d/forward
DeformConv2d/v1/forward+backward\tConv2d/forward+backward
DeformConv2d/v2/forward+backward\tConv2d/forward+backward'

started=$SECONDS
commit=$(git rev-parse --short HEAD 2>/dev/null || echo n/a)
if [[ -n $(git status --porcelain 2>/dev/null) ]]; then commit="$commit (with uncommitted changes)"; fi
cores=$(nproc 2>/dev/null || echo 1)
# The 1-minute load average: at the start, and the highest seen at each step.
load1() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0; }
load_start=$(load1)
load_max=$load_start
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=()
log() {
	echo "== $*" >&2
	load_max=$(awk -v a="$load_max" -v b="$(load1)" 'BEGIN {print (b > a ? b : a)}')
}

# picked FAMILY: whether ONLY and SKIP let FAMILY through.
picked() {
	[[ -z $only || $1 =~ ^($only)$ ]] && [[ -z $skip || ! $1 =~ ^($skip)$ ]]
}
# selected FAMILY: picked, or the floor of a picked family.
selected() {
	picked "$1" && return 0
	local work floor
	while IFS=$'\t' read -r work floor; do
		if [[ ${floor%%/*} == "$1" ]] && picked "${work%%/*}"; then return 0; fi
	done <<<"$floors"
	return 1
}

have_time=false
if /usr/bin/time -v true >/dev/null 2>&1; then have_time=true; fi
# maxrss FILE: the maximum resident set size (KiB) in a /usr/bin/time -v report.
maxrss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

# ---------------------------------------------------------------- build
log "building the gops, nn, internal/cpu and detection test binaries and scripts/benchtable"
go build -o "$tmp/benchtable" ./scripts/benchtable
benchpkgs="gops nn internal/cpu detection"
# benchfilter PKG: the benchmarks of PKG that make families; of internal/cpu
# only the two that BENCHMARKS.md has always had (they were nn's).
benchfilter() { if [ "$1" = internal/cpu ]; then grep -E '^Benchmark(GroupNormKernels|ChannelTotal)$'; else cat; fi; }
for pkg in $benchpkgs; do
	if ! go test -c -o "$tmp/${pkg//\//_}.test" "./$pkg"; then
		echo "the $pkg package or its tests do not compile; nothing benchmarked" >&2
		exit 1
	fi
done
bin=$tmp/gops.test
# gobench PKG ARGS...: PKG's test binary in the package directory, as go
# test runs it. Families are the benchmarks of gops, nn, detection or internal/cpu (the
# kernels alone: BenchmarkGroupNormKernels, BenchmarkChannelTotal) (famPkg).
gobench() { local pkg=$1; shift; (cd "$pkg" && "$tmp/${pkg//\//_}.test" -test.run '^$' "$@"); }
declare -A famPkg
# The BLAS of gops' matrix products, as TestBLAS logs it: openblas.Describe()
# after the openblas.UseFromEnv() of the test binary's TestMain (GOPS_BLAS=gonum:
# gonum's).
blas=$(cd gops && "$bin" -test.run '^TestBLAS$' -test.v 2>&1 | sed -n 's/.*BLAS: //p' | head -n1)
blas=${blas:-unknown}
log "BLAS: $blas"
# second FAMILY: whether FAMILY is timed a second time with GOPS_BLAS=gonum.
second() { [[ -n $families2 && $blas == openblas* && $1 =~ ^($families2)$ ]]; }
# tagged: the second run's benchmark lines with @noopenblas appended to the name.
tagged() { sed -E "s/^(Benchmark[^[:space:]]*)-([0-9]+)([[:space:]])/\1@noopenblas-\2\3/"; }

go_families=()
for pkg in $benchpkgs; do
	while read -r b; do
		go_families+=("${b#Benchmark}")
		famPkg[${b#Benchmark}]=$pkg
	done < <(gobench "$pkg" -test.list '^Benchmark' | grep '^Benchmark' | benchfilter "$pkg" || true)
done

# ---------------------------------------------------------------- torchvision names
tv_ok=false
if "$py" -c 'import torch, torchvision' >/dev/null 2>&1; then
	tv_ok=true
	"$py" -c 'import sys; sys.path.insert(0, "scripts"); import bench_torchvision as b; print("\n".join(b.BENCHMARKS))' >"$tmp/tvnames.all"
else
	log "$py cannot import torch and torchvision; torchvision columns will be n/a"
	problems+=("\`$py\` cannot import torch and torchvision: the torchvision columns are n/a.")
	# The names alone, read from the BENCHMARKS dict's literal keys.
	awk '/^BENCHMARKS = \{/ {f = 1; next} f && /^\}/ {f = 0} f && match($0, /^[ \t]*"[^"]+":/) {
		s = substr($0, RSTART, RLENGTH); sub(/^[ \t]*"/, "", s); sub(/":$/, "", s); print s }' \
		scripts/bench_torchvision.py >"$tmp/tvnames.all"
fi
: >"$tmp/tvnames"
while read -r n; do
	if selected "${n%%/*}"; then echo "$n" >>"$tmp/tvnames"; fi
done <"$tmp/tvnames.all"

families=()
for f in "${go_families[@]}" $(cut -d/ -f1 "$tmp/tvnames.all" | awk '!seen[$0]++'); do
	if selected "$f" && [[ " ${families[*]} " != *" $f "* ]]; then families+=("$f"); fi
done
skipped=()
for f in "${go_families[@]}" $(cut -d/ -f1 "$tmp/tvnames.all" | awk '!seen[$0]++'); do
	if ! selected "$f" && [[ " ${skipped[*]} " != *" $f "* ]]; then skipped+=("$f"); fi
done
if ((${#families[@]} == 0)); then
	echo "no op family matches ONLY='$only' SKIP='$skip'; families: ${go_families[*]} $(cut -d/ -f1 "$tmp/tvnames.all" | sort -u | tr '\n' ' ')" >&2
	exit 2
fi
log "families: ${families[*]}${skipped:+ (skipped: ${skipped[*]})}"

# ---------------------------------------------------------------- timings, alternating
: >"$tmp/go.txt"
: >"$tmp/go2.txt"
mkdir "$tmp/tv"
: >"$tmp/tv.err"
tvonly=()
while read -r name; do tvonly+=(--only "$name"); done <"$tmp/tvnames"
for ((round = 1; round <= rounds; round++)); do
	for f in "${families[@]}"; do
		[[ " ${go_families[*]} " == *" $f "* ]] || continue
		log "round $round/$rounds, go: Benchmark$f, -count $count -benchtime $benchtime"
		if ! gobench "${famPkg[$f]}" -test.bench "^Benchmark$f\$" -test.benchmem -test.count "$count" -test.benchtime "$benchtime" 2>&1 | tee "$tmp/go.$f.txt" >&2; then
			problems+=("\`Benchmark$f\` failed in round $round (its rows may be missing; see the stderr of \`scripts/bench.sh\`).")
		fi
		cat "$tmp/go.$f.txt" >>"$tmp/go.txt"
		if second "$f"; then
			log "round $round/$rounds, go GOPS_BLAS=gonum: Benchmark$f, -count $count -benchtime $benchtime"
			if ! (cd "${famPkg[$f]}" && GOPS_BLAS=gonum "$tmp/${famPkg[$f]//\//_}.test" -test.run '^$' -test.bench "^Benchmark$f\$" -test.benchmem -test.count "$count" -test.benchtime "$benchtime") 2>&1 | tee "$tmp/go2.$f.txt" >&2; then
				problems+=("\`Benchmark$f\` with GOPS_BLAS=gonum failed in round $round (its rows may be missing).")
			fi
			cat "$tmp/go2.$f.txt" >>"$tmp/go2.txt"
			tagged <"$tmp/go2.$f.txt" >>"$tmp/go.txt"
		fi
	done
	if $tv_ok && ((${#tvonly[@]})); then
		for c in "${torch_configs[@]}"; do
			log "round $round/$rounds, torchvision $c: $(wc -l <"$tmp/tvnames") benchmarks"
			json=$tmp/tv/$c.r$round.json
			if ! torchrun "$c" "${tvonly[@]}" --repeats "$tv_repeats" --warmup "$tv_warmup" --warmup-seconds "$tv_warmup_s" \
				--repeat-seconds "$tv_repeat_s" >"$json" 2>"$tmp/tv.1.err"; then
				rm -f "$json"
				problems+=("bench_torchvision.py under $c failed in round $round (see the stderr of \`scripts/bench.sh\`).")
			fi
			cat "$tmp/tv.1.err" >&2
			cat "$tmp/tv.1.err" >>"$tmp/tv.err"
		done
	fi
done

# ---------------------------------------------------------------- Go peak RSS
: >"$tmp/gorss.tsv"
go_idle_rss=n/a
if $have_time; then
	# rsspairs BLAS SUFFIX: each benchmark of the pairs on stdin alone under
	# GNU time, with GOPS_BLAS=BLAS ("" for the default).
	rsspairs() {
		while IFS=$'\t' read -r name re; do
			log "go peak RSS: $name$2"
			local pkg=${famPkg[${name%%/*}]:-gops}
			if (cd "$pkg" && GOPS_BLAS=$1 /usr/bin/time -v -o "$tmp/time" "$tmp/${pkg//\//_}.test" -test.run '^$' -test.bench "$re" -test.benchmem -test.count 1 -test.benchtime "$benchtime") \
				>"$tmp/rss.out" 2>&1 && grep -q '^Benchmark.*ns/op' "$tmp/rss.out"; then
				printf '%s\t%s\n' "$name$2" "$(maxrss "$tmp/time")" >>"$tmp/gorss.tsv"
			else
				cat "$tmp/rss.out" >&2
				problems+=("The peak-RSS run of \`$name$2\` (\`-test.bench '$re'\`) failed.")
			fi
		done
	}
	"$tmp/benchtable" pairs -go <(grep -v '^Benchmark[^[:space:]]*@' "$tmp/go.txt") -tvnames "$tmp/tvnames" >"$tmp/pairs"
	rsspairs "${GOPS_BLAS-}" "" <"$tmp/pairs"
	if [[ -s $tmp/go2.txt ]]; then
		"$tmp/benchtable" pairs -go "$tmp/go2.txt" -tvnames "$tmp/tvnames" >"$tmp/pairs2"
		rsspairs gonum "@noopenblas" <"$tmp/pairs2"
	fi
	if (cd gops && /usr/bin/time -v -o "$tmp/time" "$bin" -test.run '^$' -test.bench '^$') >/dev/null 2>&1; then
		go_idle_rss=$(maxrss "$tmp/time")
	fi
else
	problems+=("No GNU time (\`/usr/bin/time -v\`): the gops peak RSS is n/a.")
fi

# ---------------------------------------------------------------- matrix products
: >"$tmp/gemm.md"
if [[ ${GEMM:-1} != 0 ]]; then
	log "matrix products: scripts/gemm-table.sh"
	if ! PYTHON=$py bash scripts/gemm-table.sh "$tmp/gemm.md"; then
		problems+=("\`scripts/gemm-table.sh\` failed: no matrix-product table.")
	fi
fi

# ---------------------------------------------------------------- torchvision peak RSS
mkdir "$tmp/tvrss"
tv_idle_rss=n/a
if $tv_ok; then
	i=0
	while read -r name; do
		i=$((i + 1))
		log "torchvision peak RSS: $name"
		json=$tmp/tvrss/$(printf %03d $i).json
		if ! MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=100000000000 "$py" scripts/bench_torchvision.py --only "$name" \
			--threads 2 --repeats 3 --warmup 1 --warmup-seconds 0 >"$json" 2>>"$tmp/tvrss.err"; then
			rm -f "$json"
			problems+=("bench_torchvision.py --only '$name' (peak RSS) failed.")
		fi
	done <"$tmp/tvnames"
	tv_idle_rss=$("$py" -c 'import resource, torch, torchvision
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)' 2>/dev/null || echo n/a)
fi

tv_versions=n/a
tv_threads=n/a
if $tv_ok; then
	# stderr line: "torch X, torchvision Y, threads N, warmup W, repeats R"
	tv_versions=$(sed -n 's/^torch \([^,]*\), torchvision \([^,]*\),.*/torch \1, torchvision \2/p' "$tmp/tv.err" | head -n1)
	tv_threads="${torch_configs[*]}"
fi

# ---------------------------------------------------------------- BENCHMARKS.md
: >"$tmp/floors"
while IFS=$'\t' read -r work floor; do
	if picked "${work%%/*}" && grep -qxF "$floor" "$tmp/tvnames"; then
		printf '%s\t%s\n' "$work" "$floor" >>"$tmp/floors"
		if second "${work%%/*}"; then printf '%s\t%s\n' "$work@noopenblas" "$floor" >>"$tmp/floors"; fi
	fi
done <<<"$floors"

mib() { awk -v k="$1" 'BEGIN {if (k == "n/a" || k == "") print "n/a"; else printf "%.0f MiB\n", k / 1024}'; }
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || true)
procs=$("$tmp/benchtable" procs)
gover=$(go version | awk '{print $3, $4}')
elapsed=$((SECONDS - started))
log "done"
# This script keeps the cores busy (1-minute load about $cores); more means competition.
if awk -v s="$load_start" -v m="$load_max" -v c="$cores" 'BEGIN {exit !(m > c + 0.75)}'; then
	problems+=("Other processes competed for the CPU: 1-minute load average $load_start at the start, up to $load_max during the run, on $cores cores (this script alone makes about $cores). The times are inflated, unevenly; rerun on a quiet machine.")
fi
rerun="ROUNDS=$rounds COUNT=$count BENCHTIME=$benchtime TV_REPEATS=$tv_repeats TV_WARMUP=$tv_warmup TV_WARMUP_S=$tv_warmup_s TV_REPEAT_S=$tv_repeat_s"
# OpenBLAS's kernel choice and torch's threads, as this run had them: both
# sides' matrix products depend on them.
[[ -z ${OMP_NUM_THREADS:-} ]] || rerun="OMP_NUM_THREADS=$OMP_NUM_THREADS $rerun"
[[ -z ${OPENBLAS_CORETYPE:-} ]] || rerun="OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE $rerun"
rerun="TORCH_CONFIGS='${torch_configs[*]}' $rerun"
[[ -z $only ]] || rerun="ONLY='$only' $rerun"
[[ -z $skip ]] || rerun="SKIP='$skip' $rerun"
[[ $py == /usr/bin/python3 ]] || rerun="PYTHON=$py $rerun"
[[ $families2 == 'DeformConv2d|SecondOrder' ]] || rerun="SECOND='$families2' $rerun"
rerun="$rerun scripts/bench.sh"
[[ $out == BENCHMARKS.md ]] || rerun="$rerun $out"

defaults=
if [[ -z ${OMP_NUM_THREADS:-} && -z $only && -z $skip && $py == /usr/bin/python3 && $families2 == 'DeformConv2d|SecondOrder' && $rounds == 2 && $count == 3 && $benchtime == 1s && $tv_repeats == 20 && $tv_warmup == 3 && $tv_warmup_s == 1 ]]; then
	defaults="(with this machine's default torch configurations and OpenBLAS core, the defaults: \`scripts/bench.sh\` alone does the same)."
fi

second_note=
if [[ -s $tmp/go2.txt ]]; then
	second_note="- Rows ending in @noopenblas: the same Go benchmarks run again with
  GOPS_BLAS=gonum, without OpenBLAS: nn.MatMul (DeformConv2d's product)
  on gops' own product (package gemm), Gorgonia's own products on gonum's
  pure-Go BLAS. That is what gops runs on where no OpenBLAS is installed,
  or in a program that does not call openblas.Use. For the families
  matching '$families2'.
"
fi

describe() {
	case $1 in
	RoIAlign) cat <<'EOF'
- **RoIAlign** (`BenchmarkRoIAlign`, gops/bench_test.go): the Mask
  R-CNN box-head size; input [2, 256, 50, 68], 512 random valid boxes of an
  800x1088 image (batch indices 0/1), output 7x7, spatial_scale 1/16,
  sampling_ratio 2, aligned=True. forward+backward: the input gradient of
  sum(out ⊙ G) (torchvision: `out.backward(G)`). gops-only rows:
  float64/... the same in float64; kernel/forward and kernel/transpose the
  CPU kernels alone on preallocated slices, so forward+backward minus the
  two is what the graph costs (allocation, sum(out ⊙ G) and its gradient).
EOF
		;;
	DeformConv2d) cat <<'EOF'
- **DeformConv2d** (`BenchmarkDeformConv2d`, gops/deformconv_bench_test.go;
  `torchvision.ops.deform_conv2d`): 3x3, padding 1, stride 1, with bias,
  standard-normal offsets. v1: input [4, 64, 56, 56], weight [64, 64, 3, 3],
  no mask; v2: the same with a mask in [0, 1); v2-256: input [2, 256, 32, 32],
  weight [256, 256, 3, 3], with mask. forward+backward: the gradients of
  sum(out ⊙ G) w.r.t. all inputs (input, offset, mask, weight, bias).
EOF
		;;
	RoIPool) cat <<'EOF'
- **RoIPool** (`BenchmarkRoIPool`, gops/bench_test.go;
  `torchvision.ops.roi_pool`): RoIAlign's data (input [2, 256, 50, 68], 512
  boxes), output 7x7, spatial_scale 1/16. gops-only rows: kernel/argmax,
  kernel/gather, kernel/scatter-add, the three CPU kernels alone.
EOF
		;;
	PSRoIAlign) cat <<'EOF'
- **PSRoIAlign** (`BenchmarkPSRoIAlign`, gops/bench_test.go;
  `torchvision.ops.ps_roi_align`): input [2, 490, 50, 68] (10 output channels
  per 7x7 bin), 256 boxes, output 7x7, spatial_scale 1/16, sampling_ratio 2.
  gops-only rows: kernel/forward, kernel/transpose, the CPU kernels alone.
EOF
		;;
	BoxGradients) cat <<'EOF'
- **BoxGradients** (`BenchmarkBoxGradients`, gops/bench_test.go):
  gradients w.r.t. the boxes, which torchvision does not give. RoIAlign at
  its benchmark size with the gradients w.r.t. input and boxes of
  <G, out>; torch's side: roi_align's value and input gradient, plus the
  box gradient from autograd over a gather-based roi_align
  (`gather_roi_align` in scripts/bench_torchvision.py, vectorised over
  boxes and sample points, checked against roi_align's forward), the
  fastest way to get them in torch. gops-only rows: RoIAlign/second-order (also the
  gradient of <∂L/∂boxes, V> w.r.t. input and boxes),
  PSRoIAlign/forward+backward (at PSRoIAlign's benchmark size).
EOF
		;;
	PSRoIPool) cat <<'EOF'
- **PSRoIPool** (`BenchmarkPSRoIPool`, gops/bench_test.go;
  `torchvision.ops.ps_roi_pool`): PSRoIAlign's data, input [2, 490, 50, 68],
  256 boxes, output 7x7, spatial_scale 1/16. gops-only rows: kernel/forward,
  kernel/transpose, the CPU kernels alone.
EOF
		;;
	Conv2d) cat <<'EOF'
- **Conv2d** (`BenchmarkConv2d`, nn/bench_test.go; `torch.nn.functional.conv2d`,
  oneDNN on torch's side): the dense convolution at the DeformConv2d v1/v2
  size, input [4, 64, 56, 56], weight [64, 64, 3, 3], padding 1, with bias
  (the floor for DeformConv2d), and at ResNet stages: resnet-64
  [8, 64, 56, 56] 3x3 64→64, resnet-256 [8, 256, 14, 14] 3x3 256→256,
  pointwise-1024 [8, 256, 14, 14] 1x1 256→1024. forward+backward: the
  gradients w.r.t. input, weight and bias.
EOF
		;;
	MaxPool2d | AvgPool2d) cat <<EOF
- **$1** (\`Benchmark$1\`, nn/bench_test.go): the ResNet stem's pooling, 3x3,
  stride 2, padding 1, of [8, 64, 112, 112]; forward+backward: the input
  gradient.
EOF
		;;
	Softmax | CrossEntropy) cat <<EOF
- **$1** (\`Benchmark$1\`, nn/bench_test.go): [256, 1000] logits (softmax
  over the classes; the mean cross-entropy with a fixed target);
  forward+backward: the gradient w.r.t. the logits.
EOF
		;;
	RunAll) cat <<'EOF'
- **RunAll** (`BenchmarkRunAll`, nn/bench_test.go; gops only): softmax-2x8,
  one `m.Reset(); m.RunAll()` of a TapeMachine whose graph is one Softmax
  of [2, 8] under `ad.ReuseResults`: the fixed cost of a run that every
  gops row pays once besides its kernels (Gorgonia's RunAll locks its OS
  thread and runs the program on another goroutine: two thread handoffs).
EOF
		;;
	MAMLStep) cat <<'EOF'
- **MAMLStep** (`BenchmarkMAMLStep`, detection/maml_bench_test.go):
  one second-order MAML step (detection.NewMAMLTask, package meta) of a
  random-init FCOS, RetinaNet or Faster R-CNN on a ResNet-18 FPN, float32,
  256x256: an inner SGD step on 2 support images, the query loss of 2
  images at the adapted parameters, its meta-gradient through the inner
  gradient; torch: autograd.grad(create_graph=True), functional_call, the
  double backward. About 20 s a call in torch for FCOS and RetinaNet: run
  it with a small TV_REPEATS. torchvision's roi_align has no double
  backward, so torch's Faster R-CNN step runs MultiScaleRoIAlign on
  roi_align_vec (scripts/gen_detection_fasterrcnn_maml.py: torchvision's
  algorithm as differentiable torch ops, vectorised over the RoIs; checked
  equal to torchvision's forward and gradient).
EOF
		;;
	SecondOrder) cat <<'EOF'
- **SecondOrder** (`BenchmarkSecondOrder`, gops/deformconv_bench_test.go;
  gops only): x [2, 16, 32, 32] → DeformConv2d v2 3x3 (weight
  [16, 16, 3, 3], given offsets and mask) → RoIAlign 7x7 of 64 boxes →
  L = Σ y². first-order: ∇L w.r.t. weight, offsets and input; second-order:
  also the gradient of the penalty Σ‖∇ₓL‖² w.r.t. the weight. Issue 6 asks
  the second-order pass to cost at most 3x the first-order one.
EOF
		;;
	Interpolate) cat <<'EOF'
- **Interpolate** (`BenchmarkInterpolate`, nn/bench_test.go;
  `torch.nn.functional.interpolate`, scale_factor=2): nearest-fpn, FPN's
  top-down nearest x2 of [8, 256, 50, 68]; bilinear, bilinear x2 with
  align_corners=False of [8, 64, 56, 56]. forward+backward: the input
  gradient.
EOF
		;;
	GroupNorm) cat <<'EOF'
- **GroupNorm** (`BenchmarkGroupNorm`, nn/bench_test.go;
  `torch.nn.functional.group_norm`): [8, 256, 50, 68] (an FPN level) in 32
  groups, with weight and bias [256]; forward+backward: the gradients
  w.r.t. input, weight and bias.
EOF
		;;
	GridSample) cat <<'EOF'
- **GridSample** (`BenchmarkGridSample`, nn/bench_test.go;
  `torch.nn.functional.grid_sample`): bilinear, zeros padding,
  align_corners=False, input [8, 64, 64, 64] sampled at a grid
  [8, 64, 64, 2] uniform in [-1.1, 1.1] (issue 16's size);
  forward+backward: the gradients w.r.t. input and grid. first-order /
  second-order (gops only: torch has no double backward for
  grid_sampler_2d): L = Σ G·out and ∇L w.r.t. input and grid, then also
  the gradient w.r.t. both of the penalty Σ‖∂L/∂grid‖². Issue 16 asks
  forward and forward+backward to take at most 0.5x torch's time and the
  second-order pass at most 3x the first-order one.
EOF
		;;
	ConvStackSecondOrder) cat <<'EOF'
- **ConvStackSecondOrder** (`BenchmarkConvStackSecondOrder`,
  nn/bench_test.go; torch.nn.functional and `torch.autograd.grad`): a small
  ResNet-like classifier, x [8, 64, 28, 28] → conv 3x3 64→64, padding 1,
  bias → ReLU → the same again → adaptive average pool to 1x1 → [8, 64]
  times fc [64, 10] → mean cross-entropy L with fixed targets. first-order:
  the forward pass and ∇L w.r.t. the weights (both convolutions' weight and
  bias, fc); second-order: also ∇ₓL (torch: `create_graph=True`) and the
  gradient of the penalty Σ‖∇ₓL‖² w.r.t. the weights. Issue 13 asks the
  second-order pass to cost at most 3x the first-order one (table "Second
  order against first order").
EOF
		;;
	Resample) cat <<'EOF'
- **Resample** (`BenchmarkResample`, nn/bench_resample_test.go): issue 26's
  nearest ×2 Interpolate of [2, 256, 50, 68] (nearest-x2) and 2×2, stride 2
  AvgPool2d of [8, 256, 28, 28] (avgpool-2x2), float32 and float64;
  forward+backward: the input gradient through `ad.VJP`.
EOF
		;;
	ReLU) cat <<'EOF'
- **ReLU** (`BenchmarkReLU`, nn/bench_resample_test.go): ReLU of the ResNet
  stem's [8, 64, 112, 112], float32 and float64; forward+backward: the input
  gradient (gops: Gorgonia's HadamardProd with the slope).
EOF
		;;
	AdaptiveAvgPool2d) cat <<'EOF'
- **AdaptiveAvgPool2d** (`BenchmarkAdaptiveAvgPool2d`, nn/bench_resample_test.go):
  global average pooling (output 1×1) of ResNet-50's head [8, 2048, 7, 7],
  float32 and float64; forward+backward: the input gradient.
EOF
		;;
	BatchNorm) cat <<'EOF'
- **BatchNorm** (`BenchmarkBatchNorm`, nn/bench_test.go;
  `torch.nn.functional.batch_norm`): [8, 64, 56, 56] with weight, bias and
  running statistics, training (batch statistics, running ones updated
  every run) and eval, float32 and float64; forward+backward: the gradients
  w.r.t. input, weight and bias.
EOF
		;;
	Conv2dDepthwise) cat <<'EOF'
- **Conv2dDepthwise** (`BenchmarkConv2dDepthwise`, nn/depthwise_bench_test.go;
  `torch.nn.functional.conv2d(groups=128)`): the depthwise 3×3 convolution
  of [8, 128, 28, 28], weight [128, 1, 3, 3], padding 1, with bias, float32
  and float64; forward+backward: the gradients w.r.t. input, weight, bias.
EOF
		;;
	*) echo "- **$1**: \`Benchmark$1\` in ${famPkg[$1]:-gops}/*_test.go; scripts/bench_torchvision.py where it has a twin." ;;
	esac
}

{
	cat <<EOF
# Benchmarks

gops ops against torchvision's on the CPU, float32, generated by
\`scripts/bench.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit;
the run took $((elapsed / 60)) min $((elapsed % 60)) s.

Ratios come from one run of this script. On this noisy shared VM they vary
by about ±20% from run to run (single \`go test\` runs by more: see min and
max below); compare numbers of one run, on one machine, only.

## Machine

- CPU: ${cpu:-n/a}, $cores cores${mem:+, $mem memory} (Go GOMAXPROCS $procs; torch configurations $tv_threads)
- 1-minute load average: $load_start at the start of the run, at most $load_max during it
  (the benchmarks themselves make about $cores)
- Go: $gover; gops' matrix products: $blas (\`openblas.UseFromEnv()\`)
- OpenBLAS kernels (gops and torch): OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset (detected)}; OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}
- Python: $tv_versions

## Re-running

This file came from

\`\`\`
$rerun
\`\`\`

${defaults:+$defaults }Variants:

\`\`\`
scripts/bench.sh other.md                      # writes elsewhere
ONLY='RoIAlign|DeformConv2d' scripts/bench.sh  # some op families (Conv2d comes with DeformConv2d)
scripts/bench.sh --skip 'RoIPool|PSRoIAlign'   # all but some
ROUNDS=1 COUNT=1 TV_REPEATS=5 TORCH_CONFIGS=2t-kept scripts/bench.sh  # quicker, noisier
\`\`\`

It needs Go, awk, GNU time (\`/usr/bin/time\`, for the gops peak RSS) and,
for the torchvision columns, a python that imports torch and torchvision
(PYTHON, default /usr/bin/python3; otherwise those columns are n/a).
\`scripts/bench.sh --help\` lists every setting.

## Method

- $rounds rounds alternate the two sides: each runs every Go benchmark and
  then every torchvision benchmark in every torch configuration.
- gops: one \`go test -c\` binary; per op family and round one process,
  \`-test.bench '^BenchmarkX\$' -test.count $count -test.benchtime $benchtime -test.benchmem\`;
  gops ms is the min of the $((rounds * count)) runs, each the mean over
  $benchtime of iterations of \`m.Reset(); m.RunAll()\` on a TapeMachine
  whose graph was built once. Where a benchmark reports min-ns/op (nn's
  and detection's), "gops fastest call ms" is the least single iteration
  of those runs, each timed alone: the statistic the torchvision column is
  (the least of its timed calls, drawn from calls over at least as many
  seconds: --repeat-seconds), and "ratio of fastest calls" compares the
  two. Without ad.ReuseResults a fastest call can be one that Go's
  collector left alone; the reuse/ rows allocate next to nothing.
- Rows FAMILY/reuse/...: the same graph with \`ad.ReuseResults(g, true)\`:
  each run writes every gops result into the memory of the run before the
  previous one (two arrays a result, alternating: the Go runtime then
  zeroes and faults in no fresh result array, as torch's caching allocator
  hands a freed block to the next tensor); rows FAMILY/inplace/... with
  \`ad.ReuseResultsInPlace(g, true)\`: into the previous run's memory (one
  array a result, as torch's benchmark drops each result before the next
  call). The values are bitwise the same. The torch side of these rows is
  the same torch work, timed again.
${second_note}- torchvision, given its best: scripts/bench_torchvision.py, per round
  and torch configuration one python process (\`--repeats $tv_repeats
  --warmup $tv_warmup --warmup-seconds $tv_warmup_s --repeat-seconds $tv_repeat_s\`:
  every benchmark warmed up for at least ${tv_warmup_s} s, then the min of
  at least $tv_repeats timed runs, each timed alone, over at least ${tv_repeat_s} s);
  torchvision ms is the least over rounds and configurations, and
  "torch's best" the configuration that gave it (THREADSt-ALLOC: threads;
  default glibc malloc, kept = freed blocks kept by MALLOC_MMAP_MAX_=0 and
  a large MALLOC_TRIM_THRESHOLD_, jemalloc = libjemalloc through LD_PRELOAD).
  For forward-only rows torch also picks the faster of no_grad and
  autograd recording. OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} for both sides.
- Peak RSS, whole process: gops, each paired benchmark once more alone in its
  own process (\`-test.bench '^BenchmarkX\$/^sub\$/...' -test.count 1\`) under
  \`/usr/bin/time -v\`; the test binary doing nothing peaks at $(mib "$go_idle_rss").
  torchvision, the \`maxrss_kib\` (getrusage) of a process running only that
  benchmark (2 threads, freed blocks kept, 3 runs), which includes importing
  torch and torchvision: $(mib "$tv_idle_rss") alone.
  Both include the benchmark's inputs.

## Workloads

EOF
	for f in "${families[@]}"; do describe "$f"; done
	if ((${#skipped[@]})); then
		echo
		echo "Not run this time (ONLY/SKIP): ${skipped[*]}."
	fi
	echo
	"$tmp/benchtable" tables -go "$tmp/go.txt" -gorss "$tmp/gorss.tsv" -tvdir "$tmp/tv" -tvrssdir "$tmp/tvrss" -tvnames "$tmp/tvnames" -floors "$tmp/floors"
	if ((${#problems[@]})); then
		echo
		echo "## Problems in this run"
		echo
		for p in "${problems[@]}"; do echo "- $p"; done
	fi
	if [[ -s $tmp/gemm.md ]]; then
		echo
		echo "## Matrix products"
		echo
		cat "$tmp/gemm.md"
	fi
	cat <<'EOF'

## Raw output of the Go benchmarks

```
EOF
	grep -E '^(Benchmark|goos|goarch|cpu|pkg)' "$tmp/go.txt" | awk '!/^(goos|goarch|cpu|pkg)/ || !seen[$0]++' || true
	cat <<'EOF'
```

## Profiling

```
go test -run '^$' -bench 'RoIAlign/^forward\+backward$' -benchtime 20x \
    -cpuprofile /tmp/cpu.out -memprofile /tmp/mem.out ./gops
go tool pprof -top /tmp/cpu.out        # or -top -cum; leaves gops.test in .
```
EOF
} >"$tmp/out.md"
cp "$tmp/out.md" "$out"
log "wrote $out in $((elapsed / 60)) min $((elapsed % 60)) s"
