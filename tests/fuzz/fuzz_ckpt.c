/* libFuzzer target: the checkpoint (safetensors) loader on arbitrary bytes,
   into a small model with an optimizer. A failed load must leave the model
   exactly as it was.
   clang -O1 -g -fsanitize=fuzzer,address,undefined -DGPUDL_NO_CUDA tests/fuzz/fuzz_ckpt.c -lm */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gpudl_ctx *ctx;
static gpudl_model *m;
static float *before;

static int setup(void) {
    gpudl_ctx_desc d;
    gpudl_optim_desc od;
    gpudl_tensor p;
    int64_t img[3] = {1, 4, 4};
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK || gpudl_model_create(ctx, &m, 3, img) != GPUDL_OK) return 0;
    gpudl_model_add_conv2d(m, 1, 2, 3, NULL);
    gpudl_model_add_batchnorm2d(m, 2);
    gpudl_model_add_relu(m);
    gpudl_model_add_flatten(m);
    gpudl_model_add_linear(m, 8, 3);
    if (gpudl_model_build(m, NULL) != GPUDL_OK) return 0;
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    if (gpudl_model_set_optimizer(m, &od) != GPUDL_OK) return 0;
    gpudl_model_params(m, &p, NULL);   /* the flat buffer, padding included */
    before = (float *)malloc(gpudl_tensor_bytes(&p));
    return before != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpudl_tensor p;
    size_t bytes;
    if (!m && !setup()) return 0;
    gpudl_model_params(m, &p, NULL);
    bytes = gpudl_tensor_bytes(&p);
    memcpy(before, p.data, bytes);
    if (gpudl_model_load_memory(ctx, m, "fuzz", data, size) != GPUDL_OK) {
        if (memcmp(before, p.data, bytes) != 0) __builtin_trap();   /* a failed load changed the model */
        if (!gpudl_ctx_last_error(ctx)[0]) __builtin_trap();
    }
    return 0;
}
