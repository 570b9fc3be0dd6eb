/* exit(0) in student_ops: the old grader ended with no score line and
   exit status 0. Expected: 0, and a score line. */
@SOLUTION@
#include <stdlib.h>
void student_ops(gpudl_ops *ops) { solution_ops(ops); exit(0); }
