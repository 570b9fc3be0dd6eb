/* libFuzzer target: the IDX loader on arbitrary bytes, plain or gzip (gpudl's own inflate).
   clang -O1 -g -fsanitize=fuzzer,address,undefined -DGPUDL_NO_CUDA tests/fuzz/fuzz_idx.c -lm
   Any input must give GPUDL_OK (then a well-formed tensor) or a clean error
   with nothing allocated; crashes, leaks and UB are what the sanitizers catch. */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    gpudl_tensor t;
    gpudl_status s;
    if (!ctx) {
        memset(&d, 0, sizeof d);
        d.device = GPUDL_DEVICE_CPU;
        if (gpudl_ctx_create(&d, &ctx) != GPUDL_OK) return 0;
    }
    s = gpudl_idx_load_memory(ctx, "fuzz", data, size, &t);
    if (s == GPUDL_OK) {
        size_t bytes = gpudl_tensor_bytes(&t), n = size;
        unsigned char *plain = NULL;
        if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b && gpudl__gunzip_builtin(data, size, &plain, &n)) __builtin_trap();
        free(plain);   /* gzip: the IDX is what it inflates to (gpudl's own inflate, read by the fuzzer) */
        if (!t.data || t.ndim < 1 || t.ndim > 4 || bytes + 4 + 4 * (size_t)t.ndim != n) __builtin_trap();   /* every byte accounted for */
        gpudl_tensor_free(ctx, &t);
    } else if (t.data || !gpudl_ctx_last_error(ctx)[0]) {
        __builtin_trap();   /* an error must leave nothing allocated and say why */
    }
    return 0;
}
