/* Reads the solution from the repository at run time through a hidden
   fopen (a pointer from printf's address), and scores as the solution when
   it can. Expected: 0 (the sandbox, Landlock, refuses the open). */
@SOLUTION@
#include <stdio.h>
void student_ops(gpudl_ops *ops) {
    FILE *(*op)(const char *, const char *) = (FILE *(*)(const char *, const char *))((unsigned long)&printf + (@OFF_fopen@));
    FILE *f = op("@REPO@/assignments/maxpool/solution.c", "r");
    if (f) solution_ops(ops);   /* it could read the solution: as good as copying it */
}
