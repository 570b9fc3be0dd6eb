/* gradcheck.c - how to check a layer's backward pass.

   The backward pass of every layer is a derivative written by hand. A
   gradient check compares it with the slope the forward pass itself shows:
   nudge one number by +-eps, run forward twice, and (L(+eps) - L(-eps)) / 2 eps
   must match the gradient backward computed for that number. gpudl_gradcheck
   does this for every parameter and every input of a model on the CPU.

   GPU build (the check itself runs on the CPU):
         nvcc -O2 -o gradcheck gradcheck.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   CPU:  cc -O2 -DGPUDL_NO_CUDA -o gradcheck gradcheck.c -lm

   Two things make a check lie, and the inputs below avoid both:
   - kinks: ReLU at 0 and max-pool ties have no derivative; a step of eps
     across a kink measures something else. Keep inputs away from them.
   - float32 noise: the forward runs in float32, so a difference of losses
     is only good to about 1e-7 |L| / eps. Use eps around 1e-2 for smooth
     layers and compare with a small absolute tolerance. */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"

typedef gpudl_status (*add_fn)(gpudl_model *m);

static gpudl_status conv_pool(gpudl_model *m) {
    gpudl_conv2d_desc d;
    memset(&d, 0, sizeof d);
    d.pad_h = d.pad_w = 1;
    GPUDL_CHECK(gpudl_model_add_conv2d(m, 2, 4, 3, &d));
    GPUDL_CHECK(gpudl_model_add_batchnorm2d(m, 4));
    GPUDL_CHECK(gpudl_model_add_relu(m));
    GPUDL_CHECK(gpudl_model_add_maxpool2d(m, 2, 2));
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    return gpudl_model_add_linear(m, 4 * 3 * 3, 5);
}

static gpudl_status mlp(gpudl_model *m) {
    GPUDL_CHECK(gpudl_model_add_flatten(m));
    GPUDL_CHECK(gpudl_model_add_linear(m, 2 * 6 * 6, 8));
    GPUDL_CHECK(gpudl_model_add_act(m, GPUDL_ACT_GELU, 0));
    GPUDL_CHECK(gpudl_model_add_dropout(m, 0.3f));
    return gpudl_model_add_linear(m, 8, 5);
}

static void check(gpudl_ctx *ctx, const char *name, add_fn add, double eps, double atol) {
    gpudl_model *m;
    gpudl_model_desc md;
    gpudl_gradcheck_result r;
    gpudl_tensor x, labels;
    int64_t img[3] = {2, 6, 6}, xs[4] = {3, 2, 6, 6}, n = 3, i;
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, img));
    GPUDL_CHECK(add(m));
    memset(&md, 0, sizeof md);
    md.max_batch = 3;
    GPUDL_CHECK(gpudl_model_build(m, &md));
    /* inputs: distinct values 0.01 apart, so no max-pool tie and no ReLU
       input sits within eps of a kink... in the input layer at least */
    GPUDL_CHECK(gpudl_tensor_create(ctx, &x, GPUDL_F32, 4, xs));
    for (i = 0; i < 216; i++) ((float *)x.data)[i] = (float)((i * 97) % 216 - 108) * 0.01f + 0.005f;
    GPUDL_CHECK(gpudl_tensor_create(ctx, &labels, GPUDL_I32, 1, &n));
    for (i = 0; i < n; i++) ((int32_t *)labels.data)[i] = (int32_t)i;
    GPUDL_CHECK(gpudl_gradcheck(m, &x, &labels, eps, atol, 1e-2, 0, &r));
    printf("%-28s %6lld checked %4lld failed  max |err| %.2e  max rel %.2e  %s\n", name, (long long)r.checked,
           (long long)r.failed, r.max_abs_err, r.max_rel_err, r.failed ? "FAIL" : "ok");
    if (r.failed) printf("    worst: %s\n", r.worst);
    gpudl_tensor_free(ctx, &x);
    gpudl_tensor_free(ctx, &labels);
    gpudl_model_destroy(m);
}

int main(void) {
    gpudl_ctx *ctx;
    gpudl_ctx_desc d;
    memset(&d, 0, sizeof d);
    d.device = GPUDL_DEVICE_CPU;   /* gradcheck runs on the CPU, in float64 arithmetic on float32 forwards */
    GPUDL_CHECK(gpudl_ctx_create(&d, &ctx));
    printf("central differences vs backward, every parameter and input:\n");
    check(ctx, "conv+bn+relu+maxpool+linear", conv_pool, 1e-3, 3e-4);
    check(ctx, "flatten+linear+gelu+dropout", mlp, 1e-2, 5e-5);
    printf("\nTo check your own layer: put it in a model of one or two layers,\n"
           "feed inputs that avoid its kinks, and call gpudl_gradcheck.\n");
    gpudl_ctx_destroy(ctx);
    return 0;
}
