# The hostile submissions of tests/grade/attacks/ (their README says how
# they are written), each graded alone through make grade with --no-train
# and a 2 s CPU time limit. Sourced by tests/grade_test.sh (its grade, judge,
# ok and bad); each case failed on the grader before issue 25 (the README
# of assignments/ says how); forge_channel, weak_popen and weak_cublas on
# its first version (213d09e..9c9fa26: 15/15, refused only at run time,
# 14/14), found in review.
A=$B/attacks
mkdir -p "$A"
LIBC=$(${CC:-cc} -print-file-name=libc.so.6)
libc_off() {   # the distance in libc from printf to $1
    local p q
    p=$(nm -D --defined-only "$LIBC" | awk '{s=$3; sub(/@.*/,"",s)} s=="printf"{print $1; exit}')
    q=$(nm -D --defined-only "$LIBC" | awk -v n="$1" '{s=$3; sub(/@.*/,"",s)} s==n{print $1; exit}')
    [ -n "$p" ] && [ -n "$q" ] && echo $((0x$q - 0x$p))
}
# attack FILE ASSIGNMENT: fills the placeholders into $A/FILE
attack_src() {
    local f=$1 a=$2 sol
    sol=assignments/$a/solution.cu; [ "$a" = maxpool ] && sol=assignments/$a/solution.c
    python3 - "$f" "$sol" "$A/$f" "$PWD" "$(libc_off system)" "$(libc_off fopen)" "$(libc_off opendir)" "$(libc_off readdir)" "$(libc_off signal)" "$(libc_off rename)" <<'PY'
import sys
f, sol, out, repo, o_sys, o_fopen, o_opendir, o_readdir, o_signal, o_rename = sys.argv[1:]
s = open('tests/grade/attacks/' + f).read()
solution = open(sol).read().replace('student_ops', 'solution_ops')
s = s.replace('@SOLUTION@', solution).replace('@REPO@', repo)
for k, v in (('system', o_sys), ('fopen', o_fopen), ('opendir', o_opendir), ('readdir', o_readdir), ('signal', o_signal), ('rename', o_rename)):
    s = s.replace('@OFF_%s@' % k, v or '0')
open(out, 'w').write(s)
PY
}
# hostile NAME FILE ASSIGNMENT WANT [STATUS [MUST_FAIL [ALLOWED]]]: STATUS is a
# word the log must hold (REFUSED, "took longer", "CPU time", ...) or "".
# ATTACKS=core (grade_test.sh --core, make test): only these; make test-extra runs every one
CORE_ATTACKS=" fake_score hidden_exec loop_op exit_op "
attacks_run=0; attacks_left=0
hostile() {
    local name=attack_$1 f=$2 a=$3 want=$4 status=${5:-} must=${6:-} allowed=${7:-} t0=$SECONDS
    local src=$A/$f
    if [ "${ATTACKS:-all}" = core ] && [[ $CORE_ATTACKS != *" $1 "* ]]; then attacks_left=$((attacks_left + 1)); return; fi
    attacks_run=$((attacks_run + 1))
    # a file without placeholders is graded where it is (include_rel.c's path is relative to it)
    if grep -q '@[A-Za-z_]*@' "tests/grade/attacks/$f"; then attack_src "$f" "$a"; else src=tests/grade/attacks/$f; fi
    grade "$name" "$a" "$src" --no-train --timeout 2
    judge "$name" "$want" "$must" "$allowed" || return
    if [ -n "$status" ] && ! grep -qF -- "$status" "$B/$name.log"; then bad "$name" "$score, but the log does not say '$status'"; return; fi
    if [ "$(wc -c <"$B/$name.log")" -gt 200000 ]; then bad "$name" "the log is $(wc -c <"$B/$name.log") bytes: output not capped"; return; fi
    ok "$name" "$score${status:+, $status} ($((SECONDS - t0)) s)"
}
rm -f /tmp/gpudl_attack_was_here
hostile fake_score       fake_score_atexit.c maxpool zero ""
hostile forge_channel    forge_channel.c     maxpool zero "ended (exit status 0) in the middle of the check"
hostile include_abs      include_abs.cu      sgemm   zero "REFUSED: includes"
hostile include_rel      include_rel.c       maxpool zero "NOT GRADED"
hostile dlopen_solution  dlopen_solution.c   maxpool zero "REFUSED:"
hostile cublas           cublas.cu           sgemm   zero "REFUSED: calls cublas"
hostile weak_cublas      weak_cublas.cu      sgemm   zero "REFUSED: calls cublas"
hostile gpudl_matmul     gpudl_matmul.cu     sgemm   zero "REFUSED: calls gpudl's own"
hostile gpudl_kernels    gpudl_kernels.cu    relu_xent zero "REFUSED: calls gpudl's own gpudl_k_act_fwd"
hostile pool2d           pool2d.c            maxpool zero "REFUSED: calls gpudl's own"
hostile system_popen     system_popen.c      maxpool zero "REFUSED: starts programs"
hostile hidden_exec      hidden_exec.c       maxpool zero "REFUSED: made a system call the sandbox forbids"
hostile weak_popen       weak_popen.c        maxpool zero "REFUSED: starts programs or processes (popen)"
hostile hidden_replace   hidden_replace.c    maxpool zero "REFUSED: the program the grader linked was changed"
if [ -e /tmp/gpudl_attack_was_here ]; then bad attack_hidden_exec "the command ran: /tmp/gpudl_attack_was_here exists"; rm -f /tmp/gpudl_attack_was_here; fi
hostile hidden_read      hidden_read.c       maxpool zero "not implemented"
hostile sigalrm          sigalrm.c           maxpool zero "REFUSED: handles signals"
hostile hidden_sigalrm   hidden_sigalrm.c    maxpool partial "CPU time limit" "maxpool forward: large" "maxpool forward: large"
hostile loop_student_ops loop_student_ops.c  maxpool zero "student_ops (or a static constructor of your file) used up its CPU time"
hostile loop_ctor        loop_ctor.c         maxpool zero "student_ops (or a static constructor of your file) used up its CPU time"
hostile loop_op          loop_op.c           maxpool partial "CPU time limit" "maxpool forward: large" "maxpool forward: large"
hostile exit_student_ops exit_student_ops.c  maxpool zero "exit() in student_ops"
hostile exit_op          exit_op.c           maxpool partial "exit() in your code" "maxpool backward: large" "maxpool backward: large"
# each child is a fresh process: the flood comes back on the first call of each group of the forward
hostile flood            flood.c             maxpool partial "output flood" "maxpool forward: basic" "maxpool forward: .*"
hostile huge_malloc      huge_malloc.c       maxpool full ""
hostile huge_cuda        huge_cuda.cu        sgemm   full ""
# tampering: a class of three graded one at a time, the attack first; the
# others must score as if it had not run, and so must a make grade after it
if [ "${ATTACKS:-all}" = core ]; then
    printf 'note    %-34s %s\n' "grade_attacks" "$attacks_run of $((attacks_run + attacks_left + 1)) hostile submissions here; make test-extra runs them all"
    return 0 2>/dev/null || exit 0
fi
t0=$SECONDS; attack_src tamper.c maxpool
rm -rf "$B/attacks_class" "$B/attacks_class.csv"; mkdir -p "$B/attacks_class"
cp "$A/tamper.c" "$B/attacks_class/a_tamper.c"; cp assignments/maxpool/starter.c "$B/attacks_class/b_starter.c"
cp tests/grade/maxpool_overwrite.c "$B/attacks_class/c_overwrite.c"
timeout 600 make --no-print-directory grade-class A=maxpool DIR="$B/attacks_class" OUT="$B/attacks_class.csv" \
    GRADE_ARGS="--no-train --timeout 2 -j 1" >"$B/attack_tamper.log" 2>&1
rows=$(cut -d, -f1-4 "$B/attacks_class.csv" 2>/dev/null | tail -n +2 | tr '\n' ' ')
case $rows in
    "a_tamper.c,15,15,ok b_starter.c,0,15,ok c_overwrite.c,"1[0-4]",15,ok ") tamper_ok=1 ;;
    *) tamper_ok=0 ;;
esac
grade attack_tamper_after maxpool assignments/maxpool/starter.c --no-train
if [ $tamper_ok = 1 ] && [ "$score" = "0/15" ]; then ok attack_tamper "$rows; make grade of the starter after it: $score ($((SECONDS - t0)) s)"
else bad attack_tamper "rows: $rows; make grade of the starter after it: ${score:-none}"; fi
