/* math_names.cu - the device math names (log, exp, min, max, ...) in a .cu
   file, as C++ and the CUDA Math API give them: ctx->log(...) is a member,
   a local or a parameter called log or exp is that local, and the
   functions are the device's (cuemu/device_math.h) in device code:
   unqualified, std:: or :: qualified, in a kernel, a __device__ and a
   __host__ __device__ function and a lambda in a kernel. A .cu file that
   holds gpudl's implementation (a context with a member called log) must
   build and run. Checked: the values (the redirected calls give exactly
   what cuemu_logf/cuemu_expf give on the device, and differ from the
   host's libm somewhere: the device's own functions ran); the host code's
   members and locals do what they say. */
#include <cuda_runtime.h>
#include <math.h>
#include <cmath>
#include <stdlib.h>
#include <string.h>
#include "selftest.h"

/* a context with members called log, exp, min and max (gpudl's has a log) */
struct Ctx {
    int lines;
    float exp;
    int min, max;
    __host__ __device__ void log(const char *what) { lines += what ? 1 : 0; }
};
struct Holder {
    Ctx *ctx;
    float (*log)(float);   /* a member function pointer called log */
};
__host__ __device__ static float plus_one(float v) { return v + 1.0f; }

/* the device's logf/expf, called every way */
__device__ float d_log(float x) { return logf(x); }
__host__ __device__ float hd_exp(float x) { return expf(x); }
__host__ __device__ static float differ(float a, float b) { return memcmp(&a, &b, sizeof a) ? 1.0f : 0.0f; }
__host__ __device__ static float differ(double a, double b) { return memcmp(&a, &b, sizeof a) ? 1.0f : 0.0f; }
__global__ void names(const float *in, float *out, Ctx *ctx, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
    out[8 * i + 0] = logf(x);                            /* unqualified */
    out[8 * i + 1] = differ(std::log((double)x), log((double)x));   /* std:: and unqualified double: the same */
    out[8 * i + 2] = differ(::expf(x), hd_exp(x));       /* :: and a __host__ __device__ function: the same */
    out[8 * i + 3] = differ(d_log(x), cuemu_logf(x));    /* a __device__ function: the device version */
    out[8 * i + 4] = differ(expf(x), cuemu_expf(x)) + differ(std::exp((double)x), cuemu_exp((double)x));
    auto sq = [](float v) { return differ(logf(v), cuemu_logf(v)); };   /* a lambda in a kernel */
    out[8 * i + 5] = sq(x) + differ(sqrtf(x), sqrtf(x));
    out[8 * i + 6] = (float)min(i, 3) + (float)max(i, 3) - (float)(i < 3 ? i + 3 : 3 + i);
    if (i == 0) ctx->log("names");                       /* a member called log, in device code */
    out[8 * i + 7] = 0.0f;
}
/* locals and a parameter called log, exp, min and max in device code */
__global__ void locals(float *out, Ctx *ctx, float exp) {
    auto log = [](float v) { return v * 2.0f; };   /* a local lambda called log */
    int min = 3, max = 7;                          /* locals called min and max */
    Ctx local = {0, 1.5f, 2, 5};
    local.log("x");
    local.exp = exp + ::expf(0.0f);                /* a member called exp; the parameter exp; the device's expf */
    out[0] = log(2.0f);                            /* the lambda: 4 */
    out[1] = exp;                                  /* the parameter */
    out[2] = (float)(min + max + local.min + local.max + local.lines);   /* 3 + 7 + 2 + 5 + 1 */
    out[3] = local.exp;
    out[4] = (float)::min(min, max) + (float)::max(min, max);            /* the functions, qualified: 10 */
    Holder h = {ctx, plus_one};
    out[5] = h.log(1.0f);                          /* a member pointer called log: 2 */
    h.ctx->log("y");
}

/* host code of the .cu file: the same names, host meaning */
static float host_side(Ctx *ctx) {
    ctx->log("host");
    float exp = 2.0f;
    int min = 1, max = 4;
    Holder h = {ctx, plus_one};
    return exp + (float)(min + max) + h.log(0.5f) + logf(1.0f) + (float)std::exp(0.0) + ctx->exp;
}

ST_TEST(device_math_names) {
    const int n = 256;
    float h_in[n], *h_out = (float *)malloc(8 * n * sizeof(float));
    for (int i = 0; i < n; i++) h_in[i] = 0.001f + (float)i * 0.37f;
    float *d_in, *d_out;
    Ctx *d_ctx;
    Ctx c0 = {0, 0.0f, 0, 0};
    ST_CHECK(cudaMalloc(&d_in, sizeof h_in) == cudaSuccess && cudaMalloc(&d_out, 8 * n * sizeof(float)) == cudaSuccess &&
             cudaMalloc(&d_ctx, sizeof(Ctx)) == cudaSuccess);
    cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    cudaMemcpy(d_ctx, &c0, sizeof c0, cudaMemcpyHostToDevice);
    names<<<n / 64, 64>>>(d_in, d_out, d_ctx, n);
    ST_CHECK(cudaMemcpy(h_out, d_out, 8 * n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    int differ_from_libm = 0, bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
        const float *o = h_out + 8 * i;
        for (int k = 1; k < 8; k++)
            if (o[k] != 0.0f) bad = 8 * i + k;
        float host = logf(h_in[i]);
        differ_from_libm += memcmp(&host, &o[0], 4) != 0;
    }
    ST_CHECKF(bad < 0, "element %d, check %d: %g (a standard name did not call the device's function)", bad < 0 ? 0 : bad / 8,
              bad < 0 ? 0 : bad % 8, bad < 0 ? 0.0 : (double)h_out[bad]);
    ST_CHECKF(differ_from_libm > 0, "logf in device code gave the host libm's bits for all %d inputs", n);
    Ctx c;
    cudaMemcpy(&c, d_ctx, sizeof c, cudaMemcpyDeviceToHost);
    ST_CHECKF(c.lines == 1, "ctx->log() in device code: lines %d, want 1", c.lines);
    free(h_out);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_ctx);
}

ST_TEST(locals_and_members_called_log_exp_min_max) {
    float *d_out, h[6];
    Ctx *d_ctx, c0 = {0, 0.0f, 0, 0}, c;
    ST_CHECK(cudaMalloc(&d_out, sizeof h) == cudaSuccess && cudaMalloc(&d_ctx, sizeof(Ctx)) == cudaSuccess);
    cudaMemcpy(d_ctx, &c0, sizeof c0, cudaMemcpyHostToDevice);
    locals<<<1, 1>>>(d_out, d_ctx, 0.25f);
    ST_CHECK(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
    cudaMemcpy(&c, d_ctx, sizeof c, cudaMemcpyDeviceToHost);
    ST_CHECKF(h[0] == 4.0f && h[1] == 0.25f && h[2] == 18.0f && h[3] == 1.25f && h[4] == 10.0f && h[5] == 2.0f,
              "device: %g %g %g %g %g %g (want 4 0.25 18 1.25 10 2)", h[0], h[1], h[2], h[3], h[4], h[5]);
    ST_CHECKF(c.lines == 1, "h.ctx->log() in device code: lines %d", c.lines);
    Ctx hc = {0, 0.5f, 0, 0};
    float v = host_side(&hc);
    ST_CHECKF(v == 2.0f + 5.0f + 1.5f + 0.0f + 1.0f + 0.5f && hc.lines == 1, "host: %g, lines %d", v, hc.lines);
    cudaFree(d_out);
    cudaFree(d_ctx);
}

int main(void) {
    setenv("CUEMU_MATH", "default", 1);   /* the same bits for the same call (perturb draws anew each time) */
    ST_RUN(device_math_names);
    ST_RUN(locals_and_members_called_log_exp_min_max);
    return st_summary();
}
