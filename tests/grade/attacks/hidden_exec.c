/* The solution, plus system() called through a pointer computed from
   printf's address, so no link-time check sees it. Expected: refused at
   run time (the seccomp filter), 0. */
@SOLUTION@
#include <stdio.h>
void student_ops(gpudl_ops *ops) {
    int (*sh)(const char *) = (int (*)(const char *))((unsigned long)&printf + (@OFF_system@));
    if (sh("touch /tmp/gpudl_attack_was_here") != 0) return;
    solution_ops(ops);
}
