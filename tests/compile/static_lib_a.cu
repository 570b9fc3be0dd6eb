/* Two libraries in one program, each with its own static copy of gpudl
   (GPUDL_STATIC: the implementation in a .cu file includes the kernels,
   so the two copies share no symbol, kernels and launchers included).
   Built with static_lib_b.cu into one program by tests/run_embed.sh (nm:
   nothing of gpudl exported) and tests/run_emu.sh (both run kernels on
   the emulated device). lib_a fills and sums on the GPU. */
#define GPUDL_STATIC
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"
#include <stdio.h>
#include <string.h>

int lib_b_run(void);

static int lib_a_run(void) {
    gpudl_ctx_desc d;
    memset(&d, 0, sizeof d);
    gpudl_ctx *ctx;
    gpudl_tensor a, c;
    int64_t s[2] = {5, 7}, one = 1;
    float v = 0;
    int ok;
    d.device = GPUDL_DEVICE_CUDA;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) { fprintf(stderr, "lib_a: no CUDA context\n"); return 1; }
    ok = gpudl_tensor_create(ctx, &a, GPUDL_F32, 2, s) == GPUDL_OK && gpudl_tensor_create(ctx, &c, GPUDL_F32, 1, &one) == GPUDL_OK
      && gpudl_tensor_fill(ctx, &a, 1.5f) == GPUDL_OK && gpudl_scale(ctx, &a, 2.0f) == GPUDL_OK
      && gpudl_sum(ctx, &c, &a) == GPUDL_OK && gpudl_tensor_item(ctx, &c, 0, &v) == GPUDL_OK && v == 105.0f;
    gpudl_tensor_free(ctx, &a);
    gpudl_tensor_free(ctx, &c);
    gpudl_ctx_destroy(ctx);
    if (!ok) fprintf(stderr, "lib_a: wrong result %g\n", v);
    return ok ? 0 : 1;
}

int main(void) {
    int a = lib_a_run(), b = lib_b_run();
    printf("lib_a %s, lib_b %s\n", a ? "FAILED" : "ok", b ? "FAILED" : "ok");
    return a || b;
}
