#ifdef GPUDL_TU_STATIC
#  define GPUDL_IMPLEMENTATION
#endif
#include "../../gpudl.h"
int other_tu_matmul(void) {
    gpudl_ctx *ctx;
    gpudl_tensor a, c;
    int64_t s[2] = {3, 3};
    float v = 0;
    int ok;
    if (gpudl_ctx_create(NULL, &ctx) != GPUDL_OK) return 1;
    ok = gpudl_tensor_create(ctx, &a, GPUDL_F32, 2, s) == GPUDL_OK && gpudl_tensor_create(ctx, &c, GPUDL_F32, 2, s) == GPUDL_OK
      && gpudl_tensor_fill(ctx, &a, 2.0f) == GPUDL_OK && gpudl_matmul(ctx, &c, &a, &a, 0, 0, 1.0f, 0.0f) == GPUDL_OK
      && gpudl_tensor_item(ctx, &c, 8, &v) == GPUDL_OK && v == 12.0f;
    gpudl_tensor_free(ctx, &a);
    gpudl_tensor_free(ctx, &c);
    gpudl_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
