/* The second library of static_lib_a.cu: its own static gpudl, a GEMM
   (cuBLAS) and a cast (a kernel) on the GPU. */
#define GPUDL_STATIC
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"
#include <stdio.h>
#include <string.h>

int lib_b_run(void) {
    gpudl_ctx_desc d;
    memset(&d, 0, sizeof d);
    gpudl_ctx *ctx;
    gpudl_tensor a, c, h;
    int64_t s[2] = {3, 3};
    float v = 0;
    int ok;
    d.device = GPUDL_DEVICE_CUDA;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) { fprintf(stderr, "lib_b: no CUDA context\n"); return 1; }
    ok = gpudl_tensor_create(ctx, &a, GPUDL_F32, 2, s) == GPUDL_OK && gpudl_tensor_create(ctx, &c, GPUDL_F32, 2, s) == GPUDL_OK
      && gpudl_tensor_create(ctx, &h, GPUDL_F16, 2, s) == GPUDL_OK
      && gpudl_tensor_fill(ctx, &a, 2.0f) == GPUDL_OK && gpudl_matmul(ctx, &c, &a, &a, 0, 0, 1.0f, 0.0f) == GPUDL_OK
      && gpudl_tensor_cast(ctx, &h, &c) == GPUDL_OK && gpudl_tensor_item(ctx, &h, 8, &v) == GPUDL_OK && v == 12.0f;
    gpudl_tensor_free(ctx, &a);
    gpudl_tensor_free(ctx, &c);
    gpudl_tensor_free(ctx, &h);
    gpudl_ctx_destroy(ctx);
    if (!ok) fprintf(stderr, "lib_b: wrong result %g\n", v);
    return ok ? 0 : 1;
}
