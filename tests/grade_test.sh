#!/usr/bin/env bash
# The assignments' grading cannot be fooled cheaply (assignments/README.md):
# for each assignment, through make grade, the starter scores 0, the
# solution full marks, and each seeded bug of tests/grade/ (a solution with
# one mistake students really make) partial marks, failing the check that
# names its mistake; two cheats (ops left NULL, ops that hand every call
# back to gpudl) score 0; a backward that segfaults costs its own points
# only. Checks only (--no-train), except one training run per solution,
# which must learn.
# Ends with one line: N passed, N failed, N skipped.
#   bash tests/grade_test.sh [--no-train]
set -u
cd "$(dirname "$0")/.."
B=build/grade/test
mkdir -p "$B"
TRAIN=1
[ "${1:-}" = "--no-train" ] && TRAIN=0
passed=0; failed=0; skipped=0

# grade NAME ASSIGNMENT SRC ARGS...: runs make grade; sets $score, $got, $of
grade() {
    local name=$1 a=$2 src=$3; shift 3
    make --no-print-directory grade A="$a" SRC="$src" GRADE_ARGS="$*" >"$B/$name.log" 2>&1
    score=$(tail -n 1 "$B/$name.log" | sed -n 's/^score: \([0-9]*\/[0-9]*\)$/\1/p')
    got=${score%/*}; of=${score#*/}
}
ok()  { printf 'ok      %-34s %s\n' "grade_$1" "$2"; passed=$((passed + 1)); }
bad() { printf 'FAIL    %-34s %s\n' "grade_$1" "$2"; sed 's/^/        /' "$B/$1.log" | tail -25; failed=$((failed + 1)); }

# expect NAME ASSIGNMENT SRC WANT [MUST_FAIL [ALLOWED]]: WANT is zero, full or
# partial; MUST_FAIL a check ("gemm: transposes") that must be among the FAIL
# rows; ALLOWED (an extended regex) what every FAIL row must match: the bug
# fails the checks aimed at it and no others.
expect() {
    local name=$1 a=$2 src=$3 want=$4 must=${5:-} allowed=${6:-} fails
    grade "$name" "$a" "$src" --no-train
    if [ -z "$score" ]; then bad "$name" "no 'score: X/Y' line (the build or the grader failed)"; return; fi
    case $want in
        zero)    [ "$got" -eq 0 ] || { bad "$name" "$score, want 0"; return; } ;;
        full)    [ "$got" -eq "$of" ] && [ "$of" -gt 0 ] || { bad "$name" "$score, want full marks"; return; } ;;
        partial) [ "$got" -gt 0 ] && [ "$got" -lt "$of" ] || { bad "$name" "$score, want 0 < score < $of"; return; } ;;
    esac
    fails=$(grep -E '^[a-z].*: .*[0-9]+/[0-9]+ +FAIL' "$B/$name.log" | sed -E 's/ +[0-9]+\/[0-9]+ +FAIL.*//')
    if [ -n "$must" ] && ! printf '%s\n' "$fails" | grep -qxF "$must"; then
        bad "$name" "$score, but '$must' did not fail"; return
    fi
    if [ -n "$allowed" ] && printf '%s\n' "$fails" | grep -vxE "$allowed" | grep -q .; then
        bad "$name" "$score, but other checks failed too: $(printf '%s\n' "$fails" | grep -vxE "$allowed" | tr '\n' ',')"; return
    fi
    ok "$name" "$score"
}

echo "== relu_xent (CUDA: the GPU, or the emulated device)"
expect relu_xent_starter   relu_xent assignments/relu_xent/starter.cu  zero
expect relu_xent_solution  relu_xent assignments/relu_xent/solution.cu full
expect xent_no_max         relu_xent tests/grade/xent_no_max.cu        partial "softmax-xent forward: large logits" "softmax-xent forward: large logits"
expect relu_fmaxf          relu_xent tests/grade/relu_fmaxf.cu         partial "relu forward: nan/inf" "relu forward: nan/inf"

echo "== sgemm (CUDA)"
expect sgemm_starter       sgemm assignments/sgemm/starter.cu          zero
expect sgemm_solution      sgemm assignments/sgemm/solution.cu         full
expect sgemm_no_sync       sgemm tests/grade/sgemm_no_sync.cu          partial "gemm: large"
expect sgemm_tile_edge     sgemm tests/grade/sgemm_tile_edge.cu        partial "gemm: odd sizes"
expect sgemm_trans_b       sgemm tests/grade/sgemm_trans_b.cu          partial "gemm: transposes"
expect cheat_unsupported   sgemm tests/grade/cheat_unsupported.cu      zero

echo "== maxpool (C, CPU)"
expect maxpool_starter     maxpool assignments/maxpool/starter.c       zero
expect maxpool_solution    maxpool assignments/maxpool/solution.c      full
expect maxpool_overwrite   maxpool tests/grade/maxpool_overwrite.c     partial "maxpool backward: overlap" "maxpool backward: (overlap|finite diff)"
expect cheat_empty         maxpool tests/grade/cheat_empty.c           zero
expect maxpool_crash       maxpool tests/grade/maxpool_crash.c         partial "maxpool backward: basic" "maxpool backward: .*"

echo "== the solutions train (no points: the accuracy must beat chance clearly)"
for a in relu_xent sgemm maxpool; do
    name=${a}_trains
    if [ $TRAIN = 0 ]; then printf 'SKIPPED %-34s --no-train\n' "grade_$name"; skipped=$((skipped + 1)); continue; fi
    src=assignments/$a/solution.cu; [ $a = maxpool ] && src=assignments/$a/solution.c
    grade "$name" "$a" "$src"
    acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$B/$name.log")
    if [ -n "$acc" ] && [ "$got" = "$of" ] && awk "BEGIN{exit !($acc >= 60)}"; then
        ok "$name" "$acc% ($(grep -o '[0-9.]* s$' "$B/$name.log" | tail -1))"
    else bad "$name" "accuracy ${acc:-?}% (want >= 60), score ${score:-?}"; fi
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
