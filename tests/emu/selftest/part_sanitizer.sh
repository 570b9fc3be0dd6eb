# part_sanitizer.sh - tests/emu/compute-sanitizer end to end (sourced by
# run.sh: ok, bad, skip, QUICK, OUT, NVCC_EMU, HERE are its). Each seeded
# error (sanitizer/cases.cu) must be flagged with its source lines; each
# control, the same code made correct, must run clean, which proves the
# tool ran and not that a build broke. --quick runs a few of them.
echo "== compute-sanitizer (memcheck, racecheck, initcheck, synccheck)"
SAN_CS="$HERE/../compute-sanitizer"
SAN_SRC="$HERE/sanitizer/cases.cu"
SAN_BIN="$OUT/sanitizer_cases"
san_line() { grep -n "$1" "$SAN_SRC" | head -1 | cut -d: -f1; }

# san_case NAME WANT_RC "TOOL OPTIONS" CASE PATTERN...: the tool's output has every pattern
san_case() {
    local name=$1 want=$2 opts=$3 case=$4 out rc p; shift 4
    # shellcheck disable=SC2086
    out=$(env -u CUEMU_SCHEDULE "$SAN_CS" $opts "$SAN_BIN" "$case" 2>"$OUT/san_$name.stderr"); rc=$?
    printf '%s\n' "$out" >"$OUT/san_$name.log"
    if [ "$rc" -ne "$want" ]; then
        bad "sanitizer_$name" "(exit $rc, want $want: compute-sanitizer $opts cases $case)"
        sed 's/^/        /' "$OUT/san_$name.log" | tail -15; tail -5 "$OUT/san_$name.stderr" | sed 's/^/        /'
        return
    fi
    for p in "$@"; do
        if ! printf '%s\n' "$out" | grep -qF -- "$p"; then
            bad "sanitizer_$name" "(no '$p' in the report: compute-sanitizer $opts cases $case)"
            sed 's/^/        /' "$OUT/san_$name.log" | tail -15
            return
        fi
    done
    ok "sanitizer_$name"
}

if ! "$NVCC_EMU" -g -O1 -o "$SAN_BIN" "$SAN_SRC" >"$OUT/sanitizer_cases.build.log" 2>&1; then
    bad sanitizer_cases_build "(build failed)"; grep -E 'error|fatal' "$OUT/sanitizer_cases.build.log" | head -10 | sed 's/^/        /'
else
    L_RW=$(san_line RACE_WRITE); L_RR=$(san_line RACE_READ); L_UN=$(san_line UNINIT_READ)
    L_OOB=$(san_line OOB_READ); L_SH=$(san_line SHARED_OOB); L_DIV=$(san_line DIVERGENT)
    CLEAN="ERROR SUMMARY: 0 errors"
    RCLEAN="RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    # racecheck: a seeded race, with both lines; the control with __syncthreads() is clean
    san_case race_flagged 0 "--tool racecheck" race "========= COMPUTE-SANITIZER" \
        "Error: Race reported between Write access at shift_racy(int*)" "in cases.cu:$L_RW" "in cases.cu:$L_RR" \
        "RAW hazard on __shared__ variable 'int [64]'" "threads (" "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"
    san_case race_control_clean 0 "--tool racecheck" race_control "$RCLEAN"
    # racecheck: four __shared__ scalars declared on one line are four shared variables (nvcc-emu's
    # rewrite of every declarator): thread 0's writes race with the others' reads; with the barrier, clean
    L_MW=$(san_line MULTI_WRITE); L_MR=$(san_line MULTI_READ)
    san_case race_one_line_declarators_flagged 0 "--tool racecheck" race_multi \
        "Error: Race reported between Write access at tile_origin(int const*, int*, int)" "in cases.cu:$L_MW" \
        "in cases.cu:$L_MR" "RAW hazard on __shared__ variable 'int' (4 bytes)" \
        "RACECHECK SUMMARY: 4 hazards displayed (4 errors, 0 warnings)"
    san_case race_one_line_declarators_control_clean 0 "--tool racecheck" race_multi_control "$RCLEAN"
    # initcheck: a read of what nothing wrote; the control after cudaMemset is clean
    san_case uninit_flagged 0 "--tool initcheck" uninit "Uninitialized __global__ memory read of size 4 bytes" \
        "at sum_first(float const*, float*, int)+0x" "in cases.cu:$L_UN" "by thread (0,0,0) in block (0,0,0)" \
        "ERROR SUMMARY: 16 errors"
    san_case uninit_control_clean 0 "--tool initcheck" uninit_control "$CLEAN"
    # initcheck of shared memory: NVIDIA's initcheck checks global memory unless
    # --initcheck-address-space says shared or all; a tile read before any thread wrote it
    # (CUEMU_THREADS=1: the two blocks in order on one host thread; on two, a busy machine sometimes ran block 1
    # first, and the emulator's cap of full reports per site then left block 0's thread (0,0,0) unprinted)
    L_US=$(san_line UNINIT_SHARED)
    CUEMU_THREADS=1 san_case uninit_shared_flagged 0 "--tool initcheck --initcheck-address-space shared" uninit_shared \
        "Uninitialized __shared__ memory read of size 4 bytes" "at tile_sum(int*, int)+0x" "in cases.cu:$L_US" \
        "by thread (0,0,0) in block (0,0,0)" "ERROR SUMMARY: 128 errors"
    san_case uninit_shared_not_by_default 0 "--tool initcheck" uninit_shared "$CLEAN"
    san_case uninit_shared_control_clean 0 "--tool initcheck --initcheck-address-space all" uninit_shared_control "$CLEAN"
    san_case uninit_global_with_all 0 "--tool initcheck --initcheck-address-space all" uninit \
        "Uninitialized __global__ memory read of size 4 bytes" "ERROR SUMMARY: 16 errors"
    # --error-exitcode: N when errors were found, the program's status when none
    san_case error_exitcode_7 7 "--tool racecheck --error-exitcode 7" race "RACECHECK SUMMARY: 2 hazards"
    san_case error_exitcode_clean 0 "--tool initcheck --error-exitcode 7" uninit_control "$CLEAN"
    # the application inherits the tool's descriptors (a program that talks to its parent on fd 3 and 4,
    # the course grader's runner, works under the tool); control: a descriptor the shell did not open stays closed
    rm -f "$OUT/san_fd7.txt"
    ( exec 7>"$OUT/san_fd7.txt"; "$SAN_CS" --tool memcheck /bin/sh -c 'echo inherited >&7' >"$OUT/san_fd.log" 2>&1 )
    if [ "$(cat "$OUT/san_fd7.txt" 2>/dev/null)" = inherited ] && \
       ! "$SAN_CS" --tool memcheck /bin/sh -c 'echo leaked >&8' >"$OUT/san_fd_ctl.log" 2>&1 8>&-; then
        ok sanitizer_application_inherits_fds
    else bad sanitizer_application_inherits_fds "(fd 7 not passed to the application, or fd 8 open: $OUT/san_fd.log)"; fi
    if [ "$QUICK" = 0 ]; then
        san_case warp_race_flagged 0 "--tool racecheck" warp_race "RAW hazard on __shared__ variable 'int [32]'"
        san_case warp_syncwarp_clean 0 "--tool racecheck" warp_control "$RCLEAN"
        san_case same_value_clean 0 "--tool racecheck" same_value "$RCLEAN"
        san_case shared_atomics_clean 0 "--tool racecheck" atomics "$RCLEAN"
        san_case race_hazard_report 0 "--tool racecheck --racecheck-report hazard" race \
            "hazard detected at __shared__ 0x" "Write Thread (" "Read Thread ("
        # memcheck: one past the end of an allocation (inside its padding: no fault without the tool)
        san_case oob_flagged 0 "--tool memcheck" oob "Invalid __global__ read of size 4 bytes" "in cases.cu:$L_OOB" \
            "by thread (100,0,0) in block (0,0,0)" "is out of bounds" "and is 0 bytes after the nearest allocation" \
            "ERROR SUMMARY: 1 error"
        san_case oob_control_clean 0 "--tool memcheck" oob_control "$CLEAN"
        # (the report comes from the instrumentation's san_bad_access call
        # before it faults the access: checked once access.cpp makes it)
        if grep -q san_bad_access "$HERE/../src/access.cpp" 2>/dev/null; then
            san_case shared_oob_flagged 0 "--tool memcheck" shared_oob "Invalid __shared__ write of size 4 bytes" \
                "in cases.cu:$L_SH" "is out of bounds" "ERROR SUMMARY: 1 error"
        fi
        san_case shared_oob_control_clean 0 "--tool memcheck" shared_control "$CLEAN"
        if grep -q SAN_BAD_ALIGN "$HERE/../src/access.cpp" 2>/dev/null; then
            L_MA=$(san_line MISALIGNED)
            san_case misaligned_flagged 0 "--tool memcheck" misaligned "Invalid __global__ read of size 16 bytes" \
                "in cases.cu:$L_MA" "is misaligned" "ERROR SUMMARY: 1 error"
            san_case misaligned_control_clean 0 "--tool memcheck" aligned "$CLEAN"
        fi
        # --leak-check full: the allocations live at exit, and none without it
        san_case leak_flagged 0 "--tool memcheck --leak-check full" leak "Leaked 4096 bytes at 0x" \
            "Host Frame: main" "LEAK SUMMARY: 4608 bytes leaked in 3 allocations" "ERROR SUMMARY: 3 errors"
        san_case leak_not_checked 0 "--tool memcheck" leak "$CLEAN"
        san_case leak_control_clean 0 "--tool memcheck --leak-check full" clean "$CLEAN"
        # synccheck: a barrier in a divergent branch
        san_case divergent_flagged 0 "--tool synccheck" divergent "Barrier error detected. Divergent thread(s) in block" \
            "in cases.cu:$L_DIV" "ERROR SUMMARY: 1 error"
        san_case synccheck_control_clean 0 "--tool synccheck" race_control "$CLEAN"
        san_case print_limit 0 "--tool initcheck --print-limit 2" uninit "ERROR SUMMARY: 16 errors" \
            "ERROR SUMMARY: 14 errors were not printed"
        san_case kernel_name_filter 0 "--tool initcheck --kernel-name kns=other" uninit "$CLEAN"
        san_case log_file 0 "--tool racecheck --log-file $OUT/san_log_%p.txt" race ""
        if ls "$OUT"/san_log_*.txt >/dev/null 2>&1 && grep -q "RACECHECK SUMMARY: 2 hazards" "$OUT"/san_log_*.txt; then
            ok sanitizer_log_file_written; else bad sanitizer_log_file_written "(--log-file wrote no report)"; fi
        rm -f "$OUT"/san_log_*.txt
    fi
fi
