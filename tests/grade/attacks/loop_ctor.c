/* An endless loop in a static constructor: it runs before main. Expected:
   0, status timeout, and the grading ends. */
@SOLUTION@
__attribute__((constructor)) static void stuck(void) {
    volatile int spin = 1;
    while (spin) {}
}
void student_ops(gpudl_ops *ops) { solution_ops(ops); }
