/* Replaces the linked program, runner, in its folder with a FIFO (hidden
   unlink and mkfifo): the grader before issue 34 checked the program's hash
   with fopen + fread before each child, which blocks on a FIFO for ever, in
   single and in class mode. Expected: refused (the program the grader
   linked was changed), at once. */
@SOLUTION@
#include <stdio.h>
#include <sys/types.h>
typedef int (*unlink_fn)(const char *);
typedef int (*mkfifo_fn)(const char *, mode_t);
void student_ops(gpudl_ops *ops) {
    unlink_fn rm = (unlink_fn)((unsigned long)&printf + (@OFF_unlink@));
    mkfifo_fn mk = (mkfifo_fn)((unsigned long)&printf + (@OFF_mkfifo@));
    rm("runner");
    mk("runner", 0666);
    solution_ops(ops);
}
