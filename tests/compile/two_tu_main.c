/* Two translation units include gpudl.h; only this one holds the
   implementation (or, with GPUDL_TU_STATIC, each holds a static copy). */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"
int other_tu_matmul(void);
int main(void) {
    gpudl_ctx *ctx;
    if (gpudl_ctx_create(NULL, &ctx) != GPUDL_OK) return 1;
    gpudl_ctx_destroy(ctx);
    return other_tu_matmul();
}
