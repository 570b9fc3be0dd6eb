/* Reads the solution at run time, compiles it (system) and loads it
   (dlopen). Expected: refused at link time, 0. */
#include "gpudl.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
void student_ops(gpudl_ops *ops) {
    FILE *f = fopen("@REPO@/assignments/maxpool/solution.c", "r");
    void *h;
    void (*real)(gpudl_ops *);
    if (!f) return;
    fclose(f);
    if (system("cc -O2 -fPIC -shared -DGPUDL_NO_CUDA -I@REPO@ -o /tmp/gpudl_attack_sol.so @REPO@/assignments/maxpool/solution.c") != 0) return;
    h = dlopen("/tmp/gpudl_attack_sol.so", RTLD_NOW);
    real = h ? (void (*)(gpudl_ops *))dlsym(h, "student_ops") : NULL;
    if (real) real(ops);
}
