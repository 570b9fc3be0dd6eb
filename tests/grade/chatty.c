/* chatty.c - the solution, printing 6 KB without a newline in student_ops
   and in every call. Before issue 34 the cut of the student's output left
   the grader's last line glued to it ("...xxxxscore: 15/15"), so grep
   '^score:' failed. Expected: full marks, the score on a line of its own. */
#include "gpudl.h"
#include <string.h>

/* The plane index (h * W + w) of the maximum of window (oh, ow) of plane xp:
   the first one in row-major window order on ties, and a NaN beats any
   number (the first NaN), so a NaN in the input shows up in the output
   instead of being silently dropped. */
static int64_t window_argmax(const float *xp, const gpudl_pool_shape *s, int64_t oh, int64_t ow) {
    int64_t h0 = oh * s->stride_h - s->pad_h, w0 = ow * s->stride_w - s->pad_w, arg = -1, i, j;
    float best = 0.0f;
    for (i = 0; i < s->k_h; i++) {
        int64_t h = h0 + i;
        if (h < 0 || h >= s->H) continue;
        for (j = 0; j < s->k_w; j++) {
            int64_t w = w0 + j;
            float v;
            if (w < 0 || w >= s->W) continue;
            v = xp[h * s->W + w];
            /* the first real cell starts the search (not -INFINITY: a window
               of -Inf values must still pick a cell); then only a larger
               value, or the first NaN, replaces it */
            if (arg < 0 || v > best || (v != v && best == best)) { best = v; arg = h * s->W + w; }
        }
    }
    return arg;
}

static gpudl_status maxpool_forward(void *user, void *stream, float *y, const float *x, const gpudl_pool_shape *s) {
    int64_t p, oh, ow;
    (void)user; (void)stream;
    for (p = 0; p < s->NC; p++) {
        const float *xp = x + p * s->H * s->W;
        float *yp = y + p * s->Ho * s->Wo;
        for (oh = 0; oh < s->Ho; oh++)
            for (ow = 0; ow < s->Wo; ow++) {
                int64_t arg = window_argmax(xp, s, oh, ow);
                if (arg < 0) return GPUDL_ERR_INVALID_ARG;   /* a window of padding only: gpudl never asks for one */
                yp[oh * s->Wo + ow] = xp[arg];
            }
    }
    return GPUDL_OK;
}

/* Each output's gradient goes to the cell that was its window's maximum.
   When windows overlap (stride < kernel) one cell can be the maximum of
   several windows: its gradient is the SUM of theirs, hence += into a dx
   that starts at zero. Every cell that was nobody's maximum gets 0. */
static gpudl_status maxpool_backward(void *user, void *stream, float *dx, const float *dy, const float *x,
                                     const gpudl_pool_shape *s) {
    int64_t p, oh, ow;
    (void)user; (void)stream;
    memset(dx, 0, sizeof(float) * (size_t)(s->NC * s->H * s->W));
    for (p = 0; p < s->NC; p++) {
        const float *xp = x + p * s->H * s->W, *dyp = dy + p * s->Ho * s->Wo;
        float *dxp = dx + p * s->H * s->W;
        for (oh = 0; oh < s->Ho; oh++)
            for (ow = 0; ow < s->Wo; ow++) {
                int64_t arg = window_argmax(xp, s, oh, ow);
                if (arg < 0) return GPUDL_ERR_INVALID_ARG;
                dxp[arg] += dyp[oh * s->Wo + ow];
            }
    }
    return GPUDL_OK;
}

static void solution_ops(gpudl_ops *ops) {
    ops->maxpool_forward = maxpool_forward;
    ops->maxpool_backward = maxpool_backward;
}

#include <stdio.h>
static gpudl_ops real;
static void chatter(void) { int i; for (i = 0; i < 6000; i++) putchar('x'); fflush(stdout); }
static gpudl_status fwd(void *u, void *st, float *y, const float *x, const gpudl_pool_shape *s) {
    chatter();
    return real.maxpool_forward(u, st, y, x, s);
}
void student_ops(gpudl_ops *ops) {
    chatter();
    solution_ops(&real);
    *ops = real;
    ops->maxpool_forward = fwd;
}
