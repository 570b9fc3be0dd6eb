/* Writes the seed corpora: valid IDX files of each type and a valid
   checkpoint of the fuzz_ckpt model (so the fuzzer starts from files that
   load and mutates them). cc -DGPUDL_NO_CUDA tests/fuzz/make_seeds.c -lm */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"

static void put(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    fwrite(b, 1, n, f);
    fclose(f);
}

int main(void) {
    static const unsigned char u8[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
    static const unsigned char i32[] = {0, 0, 0x0c, 1, 0, 0, 0, 2, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xfe};
    static const unsigned char f32[] = {0, 0, 0x0d, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0x3f, 0x80, 0, 0};
    gpudl_ctx *ctx;
    gpudl_model *m;
    gpudl_ctx_desc d;
    gpudl_optim_desc od;
    int64_t img[3] = {1, 4, 4};
    put("tests/fuzz/corpus_idx/u8_3d", u8, sizeof u8);
    put("tests/fuzz/corpus_idx/i32_1d", i32, sizeof i32);
    put("tests/fuzz/corpus_idx/f32_2d", f32, sizeof f32);
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;
    GPUDL_CHECK(gpudl_ctx_create(&d, &ctx));
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, img));
    gpudl_model_add_conv2d(m, 1, 2, 3, NULL);
    gpudl_model_add_batchnorm2d(m, 2);
    gpudl_model_add_relu(m);
    gpudl_model_add_flatten(m);
    gpudl_model_add_linear(m, 8, 3);
    GPUDL_CHECK(gpudl_model_build(m, NULL));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAM;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));
    GPUDL_CHECK(gpudl_model_save(ctx, m, "tests/fuzz/corpus_ckpt/valid.safetensors"));
    gpudl_model_destroy(m);
    gpudl_ctx_destroy(ctx);
    return 0;
}
