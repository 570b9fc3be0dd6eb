#!/usr/bin/env bash
# A class of 75 graded in class mode, timed (assignments/README.md, "How
# long it takes"): 15 submissions per assignment (five assignments), copies of the starter,
# the solution, the seeded bugs of tests/grade/ and a few hostile files,
# each folder graded by make grade-class with GRADE_ARGS (default
# "--no-train -j 2"). Prints a line per assignment and the total; writes
# build/grade/class60/times.csv. The runner objects are built first (not
# timed), as a teacher's second run finds them in the cache.
#   bash bench/grade_class.sh [GRADE_ARGS]
set -u
cd "$(dirname "$0")/.."
ARGS=${1:---no-train -j 2}
W=build/grade/class60
rm -rf "$W"; mkdir -p "$W"
make --no-print-directory build/grade/grade build/test/data/.stamp >/dev/null || exit 1
fill() {   # fill DIR N FILE...: N copies, cycling over the files
    local d=$1 n=$2 i=0; shift 2
    mkdir -p "$d"
    while [ $i -lt "$n" ]; do
        for f in "$@"; do
            [ $i -lt "$n" ] || break
            cp "$f" "$d/s$(printf %02d $i)_$(basename "$f")"; i=$((i + 1))
        done
    done
}
fill "$W/relu_xent" 15 assignments/relu_xent/solution.cu assignments/relu_xent/starter.cu tests/grade/xent_no_max.cu \
    tests/grade/relu_fmaxf.cu tests/grade/xent_uninit.cu tests/grade/relu_no_guard.cu
fill "$W/sgemm" 15 assignments/sgemm/solution.cu assignments/sgemm/starter.cu tests/grade/sgemm_trans_b.cu \
    tests/grade/sgemm_tile_edge.cu tests/grade/sgemm_no_sync.cu tests/grade/sgemm_shared_race.cu tests/grade/sgemm_skip_zero.cu
fill "$W/maxpool" 15 assignments/maxpool/solution.c assignments/maxpool/starter.c tests/grade/maxpool_overwrite.c \
    tests/grade/maxpool_crash.c tests/grade/cheat_empty.c tests/grade/uses_sscanf.c
fill "$W/attention" 15 assignments/attention/solution.cu assignments/attention/starter.cu tests/grade/attn_no_max.cu \
    tests/grade/attn_mask_leak.cu tests/grade/attn_fixed_row.cu tests/grade/attn_bwd_range.cu
fill "$W/tensor_core" 15 assignments/tensor_core/solution.cu assignments/tensor_core/starter.cu tests/grade/tc_half_acc.cu \
    tests/grade/tc_k_tail.cu tests/grade/tc_row_col.cu tests/grade/tc_layout.cu tests/grade/tc_no_sync.cu
echo "assignment,files,seconds" > "$W/times.csv"
total=0
for a in relu_xent sgemm maxpool attention tensor_core; do   # the runner objects first, not timed
    make --no-print-directory grade A=$a GRADE_ARGS="--no-train" >/dev/null 2>&1
done
for a in relu_xent sgemm maxpool attention tensor_core; do
    t0=$(date +%s.%N)
    make --no-print-directory grade-class A=$a DIR="$W/$a" OUT="$W/$a.csv" GRADE_ARGS="$ARGS" >"$W/$a.log" 2>&1
    t=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.1f", a - b}')
    total=$(awk -v a="$total" -v b="$t" 'BEGIN{printf "%.1f", a + b}')
    printf '%-11s 15 files %6.1f s   %s\n' "$a" "$t" "$(grep '^graded' "$W/$a.log" | sed 's/.*-j [0-9]*): //; s/;.*//')"
    echo "$a,15,$t" >> "$W/times.csv"
done
printf 'all 75      %6.1f s (%s), load %s\n' "$total" "$ARGS" "$(cut -d' ' -f1-3 /proc/loadavg)"
