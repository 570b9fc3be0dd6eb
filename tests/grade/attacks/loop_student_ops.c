/* An endless loop in student_ops (which the old grader ran in its own
   process). Expected: 0, status timeout, and the grading ends. */
@SOLUTION@
void student_ops(gpudl_ops *ops) {
    volatile int spin = 1;
    while (spin) {}
    solution_ops(ops);
}
