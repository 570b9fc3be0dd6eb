/* The solution, plus rename() called through a pointer computed from
   printf's address: student_ops (run in the first child) puts student.o
   in place of the program the grader linked in the submission's folder,
   which the children may write. A program put there would be started by
   the next child with the run's key on its command line (a forger's
   dream); this one is only a stand-in. Expected: the grader notices the
   change before starting the next child: refused, 0. */
@SOLUTION@
#include <stdio.h>
void student_ops(gpudl_ops *ops) {
    int (*mv)(const char *, const char *) = (int (*)(const char *, const char *))((unsigned long)&printf + (@OFF_rename@));
    mv("student.o", "runner");
    solution_ops(ops);
}
