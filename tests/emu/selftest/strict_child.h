/* strict_child.h - the strict_*.cu self-tests run each faulting case in a
   child process (a sticky error ends the child's use of the device, as on a
   GPU); the parent never touches CUDA. */
#ifndef STRICT_CHILD_H
#define STRICT_CHILD_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char strict_log[4096];   /* the last child's stderr */

/* Runs body in a child; returns its exit status (128 + signal). Its stderr
   is kept in strict_log (and shown when ST_VERBOSE is set). */
static int in_child(int (*body)(void)) {
    char path[] = "/tmp/strict_child_XXXXXX";
    int fd = mkstemp(path);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        if (fd >= 0) dup2(fd, 2);
        _exit(body());
    }
    int st = 0;
    waitpid(pid, &st, 0);
    strict_log[0] = 0;
    if (fd >= 0) {
        ssize_t n = pread(fd, strict_log, sizeof strict_log - 1, 0);
        strict_log[n > 0 ? n : 0] = 0;
        close(fd);
        unlink(path);
        if (getenv("ST_VERBOSE")) fputs(strict_log, stderr);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A child's result: 0 = as expected; 10 + n = check n failed. */
#define EXPECT(n, cond) do { if (!(cond)) return 10 + (n); } while (0)
/* The child ran as expected and its stderr says what. */
#define ST_CHILD(body, says) do { int rc_ = in_child(body); \
    ST_CHECKF(rc_ == 0, "%s: child exit %d", #body, rc_); \
    ST_CHECKF(!(says) || strstr(strict_log, (says) ? (says) : ""), "%s: stderr lacks \"%s\": %s", #body, \
              (says) ? (says) : "", strict_log); } while (0)
#endif
