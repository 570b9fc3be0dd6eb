/* Leaves symbolic links in its folder (through hidden calls: a pointer from
   printf's address) for the grader's clean-up to follow: one to a folder
   outside the work folder (/tmp/gpudl_attack_victim, which the test makes
   with a file in it), one to ../shared, the run's shared runner objects.
   The grader before issue 34 emptied both recursively and chmod'ed them
   0700 (as the teacher, root in a container: the teacher's home could go).
   Then it behaves as the solution. Expected: full marks, the victim folder
   and its file untouched, the next student graded as usual. */
@SOLUTION@
#include <stdio.h>
typedef int (*symlink_fn)(const char *, const char *);
void student_ops(gpudl_ops *ops) {
    symlink_fn ln = (symlink_fn)((unsigned long)&printf + (@OFF_symlink@));
    ln("/tmp/gpudl_attack_victim", "victim");
    ln("../shared", "shared_link");
    ln("/tmp/gpudl_attack_victim/keep.txt", "victim_file");
    solution_ops(ops);
}
