/* The solution, plus a shell command (system) and a pipe (popen) from
   student_ops: a submission that starts programs. Expected: refused, 0. */
@SOLUTION@
#include <stdio.h>
#include <stdlib.h>
void student_ops(gpudl_ops *ops) {
    FILE *p = popen("id", "r");
    if (p) pclose(p);
    if (system("touch /tmp/gpudl_attack_was_here") != 0) return;
    solution_ops(ops);
}
