/* The implementation as one translation unit sees it. */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"
int main(void) {
    gpudl_ctx *ctx = NULL;
    gpudl_status s = gpudl_ctx_create(NULL, &ctx);
    gpudl_ctx_destroy(ctx);
    return s == GPUDL_OK ? 0 : 1;
}
