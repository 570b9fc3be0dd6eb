/* The README's "short tour", compiled as C99 so the README stays true. */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"

int main(void) {
    gpudl_ctx *ctx;
    gpudl_model *m;
    gpudl_tensor images, labels, x, y;
    gpudl_dataset train;
    int64_t img[3] = {1, 28, 28};

    GPUDL_CHECK(gpudl_ctx_create(NULL, &ctx));                  /* the GPU if usable, else the CPU */
    GPUDL_CHECK(gpudl_mnist_load(ctx, "data/fashion-mnist", 1, &images, &labels));
    GPUDL_CHECK(gpudl_dataset_create(ctx, &train, &images, &labels, 128, 0.286f, 0.353f));

    GPUDL_CHECK(gpudl_model_create(ctx, &m, 3, img));            /* a sequential model */
    gpudl_model_add_conv2d(m, 1, 16, 5, &(gpudl_conv2d_desc){.pad_h = 2, .pad_w = 2});
    gpudl_model_add_relu(m);
    gpudl_model_add_maxpool2d(m, 2, 2);
    gpudl_model_add_flatten(m);
    gpudl_model_add_linear(m, 16 * 14 * 14, 10);
    GPUDL_CHECK(gpudl_model_build(m, NULL));                     /* one allocation each: params, grads */
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &(gpudl_optim_desc){.kind = GPUDL_OPTIM_ADAM}));

    for (int64_t b = 0; b < gpudl_dataset_num_batches(&train); b++) {
        GPUDL_CHECK(gpudl_dataset_batch(ctx, &train, b, &x, &y)); /* gathered on the device */
        GPUDL_CHECK(gpudl_model_zero_grad(m));                   /* one memset */
        GPUDL_CHECK(gpudl_model_forward(m, &x, NULL));
        GPUDL_CHECK(gpudl_model_loss(m, &y));                    /* fused softmax + cross-entropy */
        GPUDL_CHECK(gpudl_model_backward(m));
        GPUDL_CHECK(gpudl_model_step(m));                        /* one fused kernel, no host sync */
    }
    GPUDL_CHECK(gpudl_model_save(ctx, m, "model.safetensors"));   /* atomic; PyTorch's safetensors reads it */
    return 0;
}
