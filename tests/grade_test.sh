#!/usr/bin/env bash
# The assignments' grading cannot be fooled cheaply (assignments/README.md).
# 1. One by one, through make grade: for each assignment the starter scores
#    0, the solution full marks, and each seeded bug of tests/grade/ (a
#    solution with one mistake students really make) partial marks,
#    failing the check that names its mistake; two cheats (ops left NULL,
#    ops that hand every call back to gpudl) score 0; a backward that
#    segfaults costs its own groups only.
# 2. Class mode (make grade-class): a small folder per assignment graded in
#    one run, the CSV's rows and the feedback files checked.
# 3. The hostile submissions of tests/grade/attacks/ (bash tests/grade_attacks.sh).
# 4. Unless --no-train: one training run per solution, which must learn.
# --core (make test, within its time budget): of 1-3 only what guards the
# most: every starter and solution, one seeded bug per CUDA assignment (the
# fault of an unguarded kernel, the race the shuffled schedule finds, the
# leaking causal mask, the FP16 accumulator) and maxpool's, the teacher's
# cases but the file for another assignment, class mode for maxpool (CPU),
# and the six attacks on the sandbox's core (a forged score, a forbidden
# call at run time, an endless loop and exit() in an op, the two escapes);
# make test-extra runs all (it left the core: the softmax without its max,
# the transposed B, the cheat that hands sgemm back to gpudl, the file for
# another assignment, attention's class mode: about 60 s of CUDA builds).
# Ends with one line: N passed, N failed, N skipped.
#   bash tests/grade_test.sh [--no-train] [--core] [--attacks]
set -u
cd "$(dirname "$0")/.."
B=build/grade/test
mkdir -p "$B"
TRAIN=1; ONLY=; ATTACKS=all; CORE=0
for arg in "$@"; do case $arg in --no-train) TRAIN=0 ;; --attacks) ONLY=attacks ;; --core) CORE=1 ATTACKS=core ;; esac; done
passed=0; failed=0; skipped=0

# grade NAME ASSIGNMENT SRC ARGS...: runs make grade; sets $score, $got, $of
grade() {
    local name=$1 a=$2 src=$3; shift 3
    timeout 600 make --no-print-directory grade A="$a" SRC="$src" GRADE_ARGS="$*" >"$B/$name.log" 2>&1
    # the grader's own last line (what a submission prints reaches the log behind '    | ' only)
    score=$(grep -E '^score: [0-9]+/[0-9]+$' "$B/$name.log" | tail -n 1 | sed 's/^score: //')
    got=${score%/*}; of=${score#*/}
}
ok()  { printf 'ok      %-34s %s\n' "grade_$1" "$2"; passed=$((passed + 1)); }
bad() { printf 'FAIL    %-34s %s\n' "grade_$1" "$2"; [ -f "$B/$1.log" ] && sed 's/^/        /' "$B/$1.log" | tail -25; failed=$((failed + 1)); }

# judge NAME WANT [MUST_FAIL [ALLOWED]]: on $B/NAME.log (score in $got/$of).
# WANT is zero, full or partial; MUST_FAIL a check ("gemm: transposes")
# that must be among the FAIL rows; ALLOWED (an extended regex) what every
# FAIL row must match: the bug fails the checks aimed at it and no others.
judge() {
    local name=$1 want=$2 must=${3:-} allowed=${4:-} fails
    if [ -z "$score" ]; then bad "$name" "no 'score: X/Y' line (the build or the grader failed)"; return 1; fi
    case $want in
        zero)    [ "$got" -eq 0 ] || { bad "$name" "$score, want 0"; return 1; } ;;
        full)    [ "$got" -eq "$of" ] && [ "$of" -gt 0 ] || { bad "$name" "$score, want full marks"; return 1; } ;;
        partial) [ "$got" -gt 0 ] && [ "$got" -lt "$of" ] || { bad "$name" "$score, want 0 < score < $of"; return 1; } ;;
    esac
    fails=$(grep -E '^[a-z].*: .*[0-9]+/[0-9]+ +FAIL' "$B/$name.log" | sed -E 's/ +[0-9]+\/[0-9]+ +FAIL.*//')
    if [ -n "$must" ] && ! printf '%s\n' "$fails" | grep -qxF "$must"; then
        bad "$name" "$score, but '$must' did not fail"; return 1
    fi
    if [ -n "$allowed" ] && printf '%s\n' "$fails" | grep -vxE "$allowed" | grep -q .; then
        bad "$name" "$score, but other checks failed too: $(printf '%s\n' "$fails" | grep -vxE "$allowed" | tr '\n' ',')"; return 1
    fi
    return 0
}
expect() {
    local name=$1 a=$2 src=$3; shift 3
    grade "$name" "$a" "$src" --no-train
    judge "$name" "$@" && ok "$name" "$score"
}

if [ "$ONLY" = attacks ]; then   # bash tests/grade_test.sh --attacks: the hostile submissions only
    echo "== hostile submissions (tests/grade/attacks)"
    . tests/grade_attacks.sh
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]; exit
fi

echo "== relu_xent (CUDA: the GPU, or the emulated device)"
expect relu_xent_starter   relu_xent assignments/relu_xent/starter.cu  zero
expect relu_xent_solution  relu_xent assignments/relu_xent/solution.cu full
if [ $CORE = 0 ]; then
    expect xent_no_max     relu_xent tests/grade/xent_no_max.cu        partial "softmax-xent forward: large logits" "softmax-xent forward: large logits"
    expect relu_fmaxf      relu_xent tests/grade/relu_fmaxf.cu         partial "relu forward: nan/inf" "relu forward: nan/inf"
    expect xent_uninit     relu_xent tests/grade/xent_uninit.cu        partial "softmax-xent forward: basic" "softmax-xent forward: .*"
fi
# an illegal address is sticky: its group is lost, a fresh process (and device) goes on with the next
expect relu_no_guard       relu_xent tests/grade/relu_no_guard.cu      partial "relu forward: odd sizes" "relu forward: .*"
grep -q "your kernel faulted: cudaErrorIllegalAddress" "$B/relu_no_guard.log" || bad relu_no_guard "the fault is not named"

echo "== sgemm (CUDA)"
expect sgemm_starter       sgemm assignments/sgemm/starter.cu          zero
expect sgemm_solution      sgemm assignments/sgemm/solution.cu         full
if [ $CORE = 0 ]; then
    expect sgemm_no_sync   sgemm tests/grade/sgemm_no_sync.cu          partial "gemm: large"
    expect sgemm_tile_edge sgemm tests/grade/sgemm_tile_edge.cu        partial "gemm: odd sizes"
fi
[ $CORE = 0 ] && expect sgemm_trans_b sgemm tests/grade/sgemm_trans_b.cu partial "gemm: transposes"
# a race the default schedule hides: the grader's small calls run on the shuffled schedule (issue 34)
expect sgemm_shared_race   sgemm tests/grade/sgemm_shared_race.cu      partial "" "gemm: .*"
if [ $CORE = 0 ]; then   # issue 34's hidden bugs: each scored full marks before
    expect sgemm_race_oneline sgemm tests/grade/sgemm_race_oneline.cu  partial "" "gemm: .*"
    expect sgemm_skip_zero    sgemm tests/grade/sgemm_skip_zero.cu     partial "gemm: nan/inf" "gemm: nan/inf"
    expect sgemm_read_past    sgemm tests/grade/sgemm_read_past.cu     partial "gemm: odd sizes" "gemm: .*"
    grep -q "cudaErrorIllegalAddress" "$B/sgemm_read_past.log" || bad sgemm_read_past "the read past the end is not named a fault"
fi
[ $CORE = 0 ] && expect cheat_unsupported sgemm tests/grade/cheat_unsupported.cu zero

echo "== maxpool (C, CPU)"
expect maxpool_starter     maxpool assignments/maxpool/starter.c       zero
expect maxpool_solution    maxpool assignments/maxpool/solution.c      full
expect maxpool_overwrite   maxpool tests/grade/maxpool_overwrite.c     partial "maxpool backward: overlap" "maxpool backward: (overlap|finite diff)"
expect cheat_empty         maxpool tests/grade/cheat_empty.c           zero
# a crash costs the group of the case it happened in, not the op: the forward keeps its points
expect maxpool_crash       maxpool tests/grade/maxpool_crash.c         partial "maxpool backward: basic" "maxpool backward: .*"

echo "== attention (CUDA): the causal softmax over attention scores"
expect attention_starter   attention assignments/attention/starter.cu  zero
expect attention_solution  attention assignments/attention/solution.cu full
if [ $CORE = 0 ]; then
    expect attn_no_max     attention tests/grade/attn_no_max.cu        partial "attention forward: large scores" "attention forward: large scores"
    expect attn_long_no_max attention tests/grade/attn_long_no_max.cu  partial "attention forward: large scores" \
        "attention forward: large scores|attention backward: finite diff"
fi
# a leaking forward also fails the backward's finite differences, which take the student's own forward
expect attn_mask_leak      attention tests/grade/attn_mask_leak.cu     partial "attention forward: causal mask" \
    "attention forward: .*|attention backward: finite diff"
if [ $CORE = 0 ]; then
    expect attn_bwd_range  attention tests/grade/attn_bwd_range.cu     partial "attention backward: finite diff" "attention backward: .*"
    expect attn_fixed_row    attention tests/grade/attn_fixed_row.cu     partial "attention forward: long rows" "attention forward: (long rows|large scores)"
    expect attn_bwd_unmasked attention tests/grade/attn_bwd_unmasked.cu  partial "attention backward: causal mask" \
        "attention backward: causal mask"
fi

echo "== tensor_core (CUDA): an FP16 GEMM with FP32 sums on the tensor cores (WMMA)"
expect tensor_core_starter  tensor_core assignments/tensor_core/starter.cu  zero
expect tensor_core_solution tensor_core assignments/tensor_core/solution.cu full
# the lesson: an FP16 accumulator passes short sums and loses the long and the overflowing ones
expect tc_half_acc          tensor_core tests/grade/tc_half_acc.cu          partial "gemm f16: accumulation" \
    "gemm f16: (values|accumulation)"
if [ $CORE = 0 ]; then
    expect tc_k_tail        tensor_core tests/grade/tc_k_tail.cu            partial "gemm f16: odd sizes" "gemm f16: .*"
    expect tc_row_col       tensor_core tests/grade/tc_row_col.cu           partial "gemm f16: transposes" \
        "gemm f16: (transposes|alpha/beta|large)"
    # the fragment layout assumed: right on the default mapping, wrong on the shuffled ones (a permutation per seed)
    expect tc_layout        tensor_core tests/grade/tc_layout.cu            partial "gemm f16: alpha/beta" "gemm f16: .*"
    expect tc_no_sync       tensor_core tests/grade/tc_no_sync.cu           partial "" "gemm f16: .*"
fi

echo "== what a teacher meets (issue 34)"
# a chatty submission: the score still on a line of its own
grade chatty maxpool tests/grade/chatty.c --no-train
if judge chatty full && [ "$(tail -n 1 "$B/chatty.log")" = "score: $score" ]; then ok chatty "$score, the last line alone"
else bad chatty "the last line is '$(tail -n 1 "$B/chatty.log" | cut -c1-60)'"; fi
expect uses_sscanf         maxpool tests/grade/uses_sscanf.c           full
expect defines_cuda        sgemm   tests/grade/defines_cuda.cu         zero
grep -q "REFUSED: .*defines cudaGetLastError" "$B/defines_cuda.log" || bad defines_cuda "the refusal does not name cudaGetLastError"
# a file for another assignment says so
if [ $CORE = 0 ]; then
    expect wrong_assignment sgemm  assignments/relu_xent/solution.cu   zero
    grep -q "file for another assignment" "$B/wrong_assignment.log" || bad wrong_assignment "no note that the file is for another assignment"
fi
# a source over 4 MB is refused with a reason, not cut
{ cat assignments/maxpool/solution.c; head -c 4500000 /dev/zero | tr '\0' ' '; echo; } > "$B/huge_source.c"
expect huge_source         maxpool "$B/huge_source.c"                  zero
grep -q "larger than 4 MB" "$B/huge_source.log" || bad huge_source "no reason given for the refusal"
# a file whose name starts with '-' is a file, and '--' ends the options
mkdir -p "$B/dash"; cp assignments/maxpool/solution.c "$B/dash/-m10.c"
(cd "$B/dash" && timeout 300 ../../../../build/grade/grade maxpool --kit ../../../.. --cache ../../cache --no-train -m10.c) >"$B/dash_name.log" 2>&1
(cd "$B/dash" && timeout 300 ../../../../build/grade/grade maxpool --kit ../../../.. --cache ../../cache --no-train -- -m10.c) >"$B/dash_dashes.log" 2>&1
if [ "$(tail -n 1 "$B/dash_name.log")" = "score: 15/15" ] && [ "$(tail -n 1 "$B/dash_dashes.log")" = "score: 15/15" ]; then ok dash_name "-m10.c graded, with and without --"
else bad dash_name "$(tail -n 1 "$B/dash_name.log" | cut -c1-60) / $(tail -n 1 "$B/dash_dashes.log" | cut -c1-60)"; fi
if [ $CORE = 0 ]; then
    t0=$SECONDS
    expect compile_bomb    maxpool tests/grade/compile_bomb.c          zero
    if [ $((SECONDS - t0)) -gt 150 ] || ! grep -q "NOT GRADED" "$B/compile_bomb.log"; then bad compile_bomb "$((SECONDS - t0)) s"; fi
fi

echo "== class mode (make grade-class): a folder each, graded in one run"
# class NAME ASSIGNMENT FILE=WANT...: WANT is zero, full or partial; the
# CSV must have a row per file with that score and status ok.
class() {
    local name=$1 a=$2 d=$B/class_$1 csv=$B/class_$1.csv spec f want row sc mx st; shift 2
    rm -rf "$d" "$csv" "$B/class_$1-feedback"; mkdir -p "$d"
    for spec in "$@"; do cp "${spec%%=*}" "$d/"; done
    timeout 900 make --no-print-directory grade-class A="$a" DIR="$d" OUT="$csv" GRADE_ARGS="--no-train" >"$B/class_$name.log" 2>&1
    if [ ! -s "$csv" ]; then bad "class_$name" "no CSV written"; return; fi
    for spec in "$@"; do
        f=$(basename "${spec%%=*}"); want=${spec#*=}
        row=$(grep "^$f," "$csv")
        sc=$(echo "$row" | cut -d, -f2); mx=$(echo "$row" | cut -d, -f3); st=$(echo "$row" | cut -d, -f4)
        if [ -z "$row" ]; then bad "class_$name" "no row for $f"; return; fi
        case $want in
            zero) [ "$sc" -eq 0 ] ;; full) [ "$sc" -eq "$mx" ] ;; partial) [ "$sc" -gt 0 ] && [ "$sc" -lt "$mx" ] ;;
        esac || { bad "class_$name" "$f: $sc/$mx, want $want"; return; }
        [ -s "$B/class_$name-feedback/$f.txt" ] || { bad "class_$name" "no feedback file for $f"; return; }
        tail -n 1 "$B/class_$name-feedback/$f.txt" | grep -qx "score: $sc/$mx" || { bad "class_$name" "$f: the feedback's score line differs"; return; }
    done
    grep -q '^graded [0-9]* submissions' "$B/class_$name.log" || { bad "class_$name" "no summary line"; return; }
    ok "class_$name" "$# files: $(grep -o 'ok [0-9]*, crash [0-9]*' "$B/class_$name.log")"
}
cp assignments/maxpool/solution.c "$B/zoë.c"   # a UTF-8 name keeps its letters in the feedback file's name
class maxpool maxpool assignments/maxpool/starter.c=zero assignments/maxpool/solution.c=full \
    tests/grade/maxpool_overwrite.c=partial tests/grade/cheat_empty.c=zero tests/grade/maxpool_crash.c=partial "$B/zoë.c=full"
if [ $CORE = 0 ]; then   # make test: class mode through maxpool's only (the CUDA assignments' in make test-extra)
    class sgemm sgemm assignments/sgemm/starter.cu=zero assignments/sgemm/solution.cu=full tests/grade/sgemm_trans_b.cu=partial
    class relu_xent relu_xent assignments/relu_xent/starter.cu=zero assignments/relu_xent/solution.cu=full \
        tests/grade/relu_fmaxf.cu=partial
    class attention attention assignments/attention/starter.cu=zero assignments/attention/solution.cu=full \
        tests/grade/attn_fixed_row.cu=partial
fi

if [ $ATTACKS = core ]; then echo "== hostile submissions (tests/grade/attacks): the sandbox's core (make test-extra: all)"
else echo "== hostile submissions (tests/grade/attacks)"; fi
. tests/grade_attacks.sh

echo "== the solutions train (no points: the accuracy must beat chance clearly)"
for a in relu_xent sgemm maxpool attention tensor_core; do
    name=${a}_trains
    if [ $TRAIN = 0 ]; then printf 'SKIPPED %-34s --no-train\n' "grade_$name"; skipped=$((skipped + 1)); continue; fi
    src=assignments/$a/solution.cu; [ $a = maxpool ] && src=assignments/$a/solution.c
    grade "$name" "$a" "$src"
    acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$B/$name.log")
    if [ -n "$acc" ] && [ "$got" = "$of" ] && awk "BEGIN{exit !($acc >= 60)}"; then
        ok "$name" "$acc% ($(grep -o '[0-9.]* s$' "$B/$name.log" | tail -1))"
    else bad "$name" "accuracy ${acc:-?}% (want >= 60), score ${score:-?}"; fi
done
# tensor_core's mixed-precision run reaches what gpudl's own FP16 path does (a submission that hands every call back)
if [ $TRAIN = 1 ]; then
    grade tc_declines tensor_core tests/grade/tc_declines.cu
    own=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$B/tc_declines.log")
    acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' "$B/tensor_core_trains.log")
    if [ -n "$own" ] && [ -n "$acc" ] && awk "BEGIN{exit !($acc >= $own - 3)}"; then
        ok tc_reaches_own "the solution's $acc%, gpudl's own FP16 path $own%"
    else bad tc_reaches_own "the solution's ${acc:-?}%, gpudl's own FP16 path ${own:-?}% (want within 3 points)"; fi
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
