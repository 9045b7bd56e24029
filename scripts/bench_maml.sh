#!/usr/bin/env bash
# Times the demo's MAML meta-step, gops (cmd/demo -bench-steps) against its
# PyTorch replica (scripts/maml_torch.py --bench), side by side:
#
#   scripts/bench_maml.sh [ROUNDS]
#
# At two sizes: the demo's default (canvas 48, 4 features, crop 8, 8
# deformable channels, 4 tasks) and a larger one (canvas 128 with digits of
# 32-48 px, 32 features, crop 14, 32 deformable channels, 8 tasks); second-
# and first-order MAML; torch at 1 and 2 threads. First each size's
# meta-step is dumped (-dump-step) and checked (maml_torch.py --check: the
# replica's meta-gradients equal gops' within 1e-10), and torch times the
# dumped tasks. Then ROUNDS (default 5) rounds alternate gops, torch 1
# thread, torch 2 threads, and the table gives, per row, the min over the
# rounds of each run's min (and median) step time and gops / best torch.
#
# Environment:
#   STEPS      timed meta-steps per variant and run (default 20), after 1 s of
#              warm-up on both sides.
#   SIZES      which sizes (default "default large").
#   GOPS_BLAS  passed to the demo (default gonum: without OpenBLAS).
#   PYTHON     python with torch and torchvision (default /usr/bin/python3).
# Torch gets its best allocator settings (MALLOC_MMAP_MAX_=0, a large
# MALLOC_TRIM_THRESHOLD_, jemalloc via LD_PRELOAD if installed) and
# OPENBLAS_CORETYPE SkylakeX on a CPU with AVX-512, else Haswell.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-5}
steps=${STEPS:-20}
sizes=${SIZES:-default large}
py=${PYTHON:-/usr/bin/python3}
export GOPS_BLAS=${GOPS_BLAS:-gonum}
declare -A flags=(
	[default]=""
	[large]="-canvas 128 -digit-min 32 -digit-max 48 -features 32 -crop 14 -deform-channels 32 -tasks 8"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/demo" ./cmd/demo

core=Haswell
grep -qw avx512f /proc/cpuinfo && core=SkylakeX
torchenv=(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 OPENBLAS_CORETYPE=$core)
for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2; do
	[[ -e $lib ]] && torchenv+=(LD_PRELOAD=$lib)
done
echo "torch env: ${torchenv[*]}; gops: GOPS_BLAS=$GOPS_BLAS GOMAXPROCS=${GOMAXPROCS:-$(nproc)}"

for s in $sizes; do
	# shellcheck disable=SC2086
	"$tmp/demo" ${flags[$s]} -dump-step "$tmp/$s.json.gz" >/dev/null
	echo "check $s: $("$py" scripts/maml_torch.py --check "$tmp/$s.json.gz" | tail -1)"
done

# Each run appends "size side variant min_ms median_ms" lines.
for ((r = 1; r <= rounds; r++)); do
	for s in $sizes; do
		echo "round $r/$rounds, $s: $(uptime | sed 's/.*load/load/')" >&2
		# shellcheck disable=SC2086
		"$tmp/demo" ${flags[$s]} -bench-steps "$steps" | awk -v s="$s" '$1 == "bench" {print s, "gops", $2, $6, $8}' >>"$tmp/times"
		for th in 1 2; do
			env "${torchenv[@]}" "$py" scripts/maml_torch.py --bench "$tmp/$s.json.gz" --steps "$steps" --threads $th |
				awk -v s="$s" -v side="torch-${th}t" '$1 == "bench" {print s, side, $2, $6, $8}' >>"$tmp/times"
		done
	done
done

awk -v rounds="$rounds" -v steps="$steps" '
	{
		k = $1 SUBSEP $2 SUBSEP $3
		if (!(k in mn) || $4 < mn[k]) mn[k] = $4
		if (!(k in md) || $5 < md[k]) md[k] = $5
		if (!(($1 SUBSEP $3) in seen)) { seen[$1 SUBSEP $3] = 1; order[++n] = $1 SUBSEP $3 }
	}
	END {
		printf "min over %d rounds of each run'"'"'s min (median) meta-step time in ms, %d steps a run\n", rounds, steps
		printf "%-8s %-13s %18s %18s %18s %12s\n", "size", "variant", "gops", "torch 1 thread", "torch 2 threads", "gops/torch"
		for (i = 1; i <= n; i++) {
			split(order[i], a, SUBSEP)
			g = a[1] SUBSEP "gops" SUBSEP a[2]; t1 = a[1] SUBSEP "torch-1t" SUBSEP a[2]; t2 = a[1] SUBSEP "torch-2t" SUBSEP a[2]
			best = mn[t1] < mn[t2] ? mn[t1] : mn[t2]
			printf "%-8s %-13s %8.2f (%7.2f) %8.2f (%7.2f) %8.2f (%7.2f) %12.2f\n", a[1], a[2], mn[g], md[g], mn[t1], md[t1], mn[t2], md[t2], mn[g] / best
		}
	}' "$tmp/times"
