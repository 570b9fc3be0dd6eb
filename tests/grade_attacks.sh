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
# attack FILE ASSIGNMENT: fills the placeholders into $A/FILE
attack_src() {
    local f=$1 a=$2 sol
    sol=assignments/$a/solution.cu; [ "$a" = maxpool ] && sol=assignments/$a/solution.c
    python3 - "$f" "$sol" "$A/$f" "$PWD" "$LIBC" <<'PY'
import re, subprocess, sys
f, sol, out, repo, libc = sys.argv[1:]
s = open('tests/grade/attacks/' + f).read()
solution = open(sol).read().replace('student_ops', 'solution_ops')
s = s.replace('@SOLUTION@', solution).replace('@REPO@', repo)
addr = {}
for line in subprocess.run(['nm', '-D', '--defined-only', libc], capture_output=True, text=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3: addr.setdefault(parts[2].split('@')[0], int(parts[0], 16))
for name in set(re.findall(r'@OFF_(\w+)@', s)):   # the distance in libc from printf to name
    s = s.replace('@OFF_%s@' % name, str(addr[name] - addr['printf']) if name in addr and 'printf' in addr else '0')
open(out, 'w').write(s)
PY
}
# hostile NAME FILE ASSIGNMENT WANT [STATUS [MUST_FAIL [ALLOWED]]]: STATUS is a
# word the log must hold (REFUSED, "took longer", "CPU time", ...) or "".
# ATTACKS=core (grade_test.sh --core, make test): only these; make test-extra runs every one
CORE_ATTACKS=" fake_score hidden_exec loop_op exit_op escape_fifo escape_symlink "
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
hostile forge_channel    forge_channel.c     maxpool zero "wrote on the grader's channel"
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
# issue 34: the grader's escapes and the forgeries of a process that held the verdict
hostile escape_fifo      escape_fifo.c       maxpool zero "REFUSED: the program the grader linked was changed"
if [ "${ATTACKS:-all}" != core ] || [[ $CORE_ATTACKS == *" escape_symlink "* ]]; then
    # links left in the folder for the clean-up: a victim folder outside, and ../shared (the next student's objects)
    t0=$SECONDS; attacks_run=$((attacks_run + 1)); attack_src escape_symlink.c maxpool
    rm -rf /tmp/gpudl_attack_victim "$B/escape_class" "$B/escape_class.csv"
    mkdir -p /tmp/gpudl_attack_victim "$B/escape_class"; chmod 0755 /tmp/gpudl_attack_victim
    echo keep > /tmp/gpudl_attack_victim/keep.txt
    cp "$A/escape_symlink.c" "$B/escape_class/a_escape.c"; cp assignments/maxpool/solution.c "$B/escape_class/b_solution.c"
    timeout 600 make --no-print-directory grade-class A=maxpool DIR="$B/escape_class" OUT="$B/escape_class.csv" \
        GRADE_ARGS="--no-train --timeout 2 -j 1" >"$B/attack_escape_symlink.log" 2>&1
    rows=$(cut -d, -f1-4 "$B/escape_class.csv" 2>/dev/null | tail -n +2 | tr '\n' ' ')
    mode=$(stat -c %a /tmp/gpudl_attack_victim 2>/dev/null)
    if [ "$rows" = "a_escape.c,15,15,ok b_solution.c,15,15,ok " ] && [ -f /tmp/gpudl_attack_victim/keep.txt ] && [ "$mode" = 755 ]; then
        ok attack_escape_symlink "$rows; the folder outside untouched ($((SECONDS - t0)) s)"
    else bad attack_escape_symlink "rows: $rows; /tmp/gpudl_attack_victim: mode ${mode:-gone}, keep.txt $( [ -f /tmp/gpudl_attack_victim/keep.txt ] && echo there || echo GONE)"; fi
    rm -rf /tmp/gpudl_attack_victim
fi
export GPUDL_ATTACK_SECRET="s3cret-$$-$RANDOM"   # in the grader's environment: must not reach a feedback
hostile read_secrets     read_secrets.cu     sgemm   full ""
if [ "${ATTACKS:-all}" != core ]; then
    if grep -qF "$GPUDL_ATTACK_SECRET" "$B/attack_read_secrets.log"; then bad attack_read_secrets_environ "the grader's environment reached the feedback"
    elif grep -q 'secrets: .*cache holds' "$B/attack_read_secrets.log"; then bad attack_read_secrets_cache "the sandbox listed a cache: $(grep -m1 'cache holds' "$B/attack_read_secrets.log")"
    else ok attack_read_secrets_hidden "neither the grader's environment nor the caches reached the feedback"; fi
fi
unset GPUDL_ATTACK_SECRET
hostile forge_tolerance  forge_tolerance.c   maxpool zero ""
if [ "${ATTACKS:-all}" != core ]; then   # fresh inputs per grading run: a recorded answer does not fit the next run
    attack_src seed_probe.c maxpool
    grade attack_seed_probe1 maxpool "$A/seed_probe.c" --no-train; c1=$(grep -m1 -o 'checksum [0-9a-f]*' "$B/attack_seed_probe1.log")
    grade attack_seed_probe2 maxpool "$A/seed_probe.c" --no-train; c2=$(grep -m1 -o 'checksum [0-9a-f]*' "$B/attack_seed_probe2.log")
    if [ -n "$c1" ] && [ -n "$c2" ] && [ "$c1" != "$c2" ] && [ "$score" = 15/15 ]; then ok attack_seed_probe "two runs: $c1, $c2"
    else bad attack_seed_probe "two runs: '${c1:-none}', '${c2:-none}' (the same inputs twice), $score"; fi
fi
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
