#!/usr/bin/env bash
# scripts/gemm-table.sh: the matrix-product table of BENCHMARKS.md, one run,
# on this machine: GFLOP/s of gops' product (package gemm), gonum's pure-Go
# BLAS, OpenBLAS with the core it picks itself and with the core named by
# OPENBLAS_CORETYPE (both through package openblas: single-threaded OpenBLAS
# calls spread over goroutines), and torch.mm on the same OpenBLAS with that
# core and its own threads, at DeformConv2d's product shapes
# (gemm/bench_test.go), 1 and 2 threads, float32 and float64, with gops'
# fraction of this machine's FMA peak (BenchmarkPeak in internal/gemm:
# register-only FMAs; float64's peak is half of float32's).
#
#   scripts/gemm-table.sh [OUTPUT.md]      (default: standard output)
#
# Environment: TUNED_CORE, the OPENBLAS_CORETYPE of the tuned columns
# (default SkylakeX where gops' kernel is avx512, Haswell where avx2);
# BENCHTIME (default 500ms); PYTHON (default /usr/bin/python3; without torch
# the torch column is n/a). Takes about 3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
out=${1:-/dev/stdout}
benchtime=${BENCHTIME:-500ms}
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset OPENBLAS_CORETYPE

kernel=$(go run ./scripts/gemm-table/kernel.go)
case $kernel in
avx512) peakbench=avx512; tuned=${TUNED_CORE:-SkylakeX} ;;
avx2) peakbench=avx2; tuned=${TUNED_CORE:-Haswell} ;;
*) peakbench=none; tuned=${TUNED_CORE:-} ;;
esac

# norm: "BenchmarkX/a/b/c[-N] ... V GFLOP/s" -> "a/b/c-N V" (N = 1 when absent).
norm() {
	awk '/GFLOP\/s/ { name = $1; sub(/^Benchmark[^\/]*\//, "", name)
		if (name !~ /-[0-9]+$/) name = name "-1"
		for (i = 2; i <= NF; i++) if ($i == "GFLOP/s") v = $(i-1)
		print name, v }'
}

echo "== peak ($peakbench)" >&2
: >"$tmp/peak"
if [[ $peakbench != none ]]; then
	go test -run '^$' -bench "^BenchmarkPeak\$/^$peakbench\$" -cpu 1,2 -benchtime "$benchtime" ./internal/gemm | tee >(cat >&2) | norm >"$tmp/peak"
fi
echo "== products: gops, gonum, OpenBLAS with its own core" >&2
go test -run '^$' -bench '^BenchmarkProducts$' -cpu 1,2 -benchtime "$benchtime" ./gemm | tee >(cat >&2) | norm >"$tmp/res"
autocore=$(sed -n 's|^openblas-\([^/]*\)/.*|\1|p' "$tmp/res" | head -n1)
sed -i 's|^openblas-[^/]*/|openblas-auto/|' "$tmp/res"
if [[ -n $tuned ]]; then
	echo "== products: OpenBLAS with OPENBLAS_CORETYPE=$tuned" >&2
	OPENBLAS_CORETYPE=$tuned go test -run '^$' -bench '^BenchmarkProducts$/^openblas' -cpu 1,2 -benchtime "$benchtime" ./gemm |
		tee >(cat >&2) | norm | sed 's|^openblas-[^/]*/|openblas-tuned/|' >>"$tmp/res"
	if "$py" -c 'import torch' 2>/dev/null; then
		for t in 1 2; do
			echo "== torch.mm, $t thread(s), OPENBLAS_CORETYPE=$tuned" >&2
			OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t OPENBLAS_CORETYPE=$tuned "$py" scripts/bench_gemm_torch.py | tee >(cat >&2) >>"$tmp/res"
		done
	fi
fi
torchver=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo n/a)

{
	echo "GFLOP/s of one product C = op(A)·op(B), one run of \`scripts/gemm-table.sh\` on"
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) cores;"
	echo "gops' kernel: $kernel. OpenBLAS (Debian's libopenblas0) picks core ${autocore:-n/a} by itself;"
	echo "the tuned columns run with OPENBLAS_CORETYPE=${tuned:-n/a}. torch $torchver (torch.mm, its own OpenBLAS threads)."
	echo "Peak: register-only FMAs (BenchmarkPeak), float32 $(awk '$1 ~ /-1$/ {print $2}' "$tmp/peak") GFLOP/s on one core,"
	echo "$(awk '$1 ~ /-2$/ {print $2}' "$tmp/peak") on two; float64 half of that."
	echo
	echo "| dtype | product | m×n×k | threads | gops | gops % of peak | gonum | OpenBLAS ${autocore:-auto} | OpenBLAS ${tuned:-tuned} | torch.mm ${tuned:-} | gops ÷ best OpenBLAS |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -v peakfile="$tmp/peak" '
		BEGIN { while ((getline l < peakfile) > 0) { split(l, p, " "); n = p[1]; sub(/^.*-/, "", n); peak[n] = p[2] } }
		{ v[$1] = $2 }
		END {
			split("v1-forward:64×12544×576 v1-grad-columns:576×12544×64 (Aᵀ) v1-grad-weight:64×576×12544 (Bᵀ) v2-256-forward:256×2048×2304 square:1024×1024×1024", shapes, " ")
			ns = 0
			for (i = 1; i in shapes; i++) {
				if (shapes[i] ~ /^\(/) { dims[ns] = dims[ns] " " shapes[i]; continue }
				split(shapes[i], sd, ":"); ns++; sname[ns] = sd[1]; dims[ns] = sd[2]
			}
			split("float32 float64", dts, " ")
			for (d = 1; d <= 2; d++) for (s = 1; s <= ns; s++) for (t = 1; t <= 2; t++) {
				key = dts[d] "/" sname[s] "-" t
				g = v["gops/" key]; pk = peak[t] / (d == 2 ? 2 : 1)
				best = v["openblas-auto/" key] + 0; if (v["openblas-tuned/" key] + 0 > best) best = v["openblas-tuned/" key] + 0
				if (v["torch/" key] + 0 > best) best = v["torch/" key] + 0
				printf "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", dts[d], sname[s], dims[s], t,
					f(g), (pk > 0 && g != "" ? sprintf("%.0f%%", 100 * g / pk) : "n/a"), f(v["gonum/" key]),
					f(v["openblas-auto/" key]), f(v["openblas-tuned/" key]), f(v["torch/" key]),
					(best > 0 && g != "" ? sprintf("%.2f", g / best) : "n/a")
			}
		}
		function f(x) { return x == "" ? "n/a" : sprintf("%.0f", x) }
	' "$tmp/res" | tee "$tmp/table"
	# The OpenBLAS decision (issue: delete the loader if gops' product reaches
	# 0.9x a tuned OpenBLAS at every shape on two threads), from this run.
	awk -F'|' '$5 + 0 == 2 && $12 ~ /[0-9]/ { r = $12 + 0; n++; if (r < 0.9) below++
		if (min == "" || r < min) min = r; if (max == "" || r > max) max = r }
		END { if (!n) { print "\nNo OpenBLAS to compare with in this run."; exit }
			printf "\nOn two threads gops'"'"' product reached %.2f–%.2f× the best OpenBLAS of this run (the\n", min, max
			printf "faster of its two cores through package openblas and torch.mm), below 0.9× at %d of %d\n", below, n
			printf "shapes. %s\n", below ? "So the OpenBLAS loader stays, as the opt-in it is (openblas.Use), refusing\nOpenBLAS'"'"'s generic kernels where gops'"'"' product is faster." : "gops'"'"' product is at least 0.9× OpenBLAS everywhere here." }' "$tmp/table"
} >"$out"
echo "== done" >&2
