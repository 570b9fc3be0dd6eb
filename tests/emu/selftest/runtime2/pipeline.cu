/* pipeline.cu - the pipeline primitives (CUDA C++ Programming Guide,
   "Pipeline Primitives Interface") and nvcuda::experimental::pipeline:
   batches of asynchronous global-to-shared copies, zfill, waits on all but
   the last N batches. CUEMU_ST_CASE=misaligned: a source not aligned to the
   copy size is an error (it leaves a sticky error). */
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include "selftest.h"

__global__ void two_batches(const int4 *g, int *out) {
    __shared__ int4 a[64], b[64];
    unsigned t = threadIdx.x;
    __pipeline_memcpy_async(&a[t], &g[t], sizeof(int4));
    __pipeline_commit();
    __pipeline_memcpy_async(&b[t], &g[64 + t], sizeof(int4), 4);   /* the last 4 bytes zeroed */
    __pipeline_commit();
    __pipeline_wait_prior(1);   /* the first batch is complete */
    __syncthreads();
    out[t] = a[(t + 1) % 64].x + a[(t + 1) % 64].w;
    __pipeline_wait_prior(0);
    __syncthreads();
    out[64 + t] = b[(t + 3) % 64].z * 1000 + b[(t + 3) % 64].w;
}
__global__ void with_class(const float *g, float *out) {
    __shared__ float s[32];
    nvcuda::experimental::pipeline pipe;
    nvcuda::experimental::memcpy_async(s[threadIdx.x], g[threadIdx.x], pipe);
    unsigned batch = pipe.commit();
    pipe.wait(batch);
    __syncthreads();
    out[threadIdx.x] = s[31 - threadIdx.x];
}
ST_TEST(pipeline_batches) {
    int4 h[128];
    for (int i = 0; i < 128; i++) h[i] = make_int4(i, 2 * i, 3 * i, 7);
    int4 *g;
    int *o, r[128];
    cudaMalloc(&g, sizeof h);
    cudaMalloc(&o, sizeof r);
    cudaMemcpy(g, h, sizeof h, cudaMemcpyHostToDevice);
    two_batches<<<1, 64>>>(g, o);
    ST_CHECK(cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost) == cudaSuccess);
    bool ok = true;
    for (int t = 0; t < 64 && ok; t++) {
        int j = (t + 1) % 64, k = 64 + (t + 3) % 64;
        ok = r[t] == j + 7 && r[64 + t] == 3 * k * 1000 + 0;
        ST_CHECKF(ok, "thread %d: %d %d", t, r[t], r[64 + t]);
    }
    float fh[32], fr[32], *fg, *fo;
    for (int i = 0; i < 32; i++) fh[i] = 0.5f * i;
    cudaMalloc(&fg, sizeof fh);
    cudaMalloc(&fo, sizeof fr);
    cudaMemcpy(fg, fh, sizeof fh, cudaMemcpyHostToDevice);
    with_class<<<1, 32>>>(fg, fo);
    ST_CHECK(cudaMemcpy(fr, fo, sizeof fr, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(fr[0] == fh[31] && fr[31] == fh[0]);
    cudaFree(g);
    cudaFree(o);
    cudaFree(fg);
    cudaFree(fo);
}

__global__ void misaligned(const char *g) {
    __shared__ int4 a[1];
    __pipeline_memcpy_async(&a[0], g + 4, 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
}
ST_TEST(pipeline_misaligned_source) {
    char *g;
    cudaMalloc(&g, 64);
    misaligned<<<1, 1>>>(g);
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e == cudaErrorMisalignedAddress, "%s", cudaGetErrorName(e));
}

int main() {
    const char *c = getenv("CUEMU_ST_CASE");
    if (c && !strcmp(c, "misaligned")) ST_RUN(pipeline_misaligned_source);
    else ST_RUN(pipeline_batches);
    return st_summary();
}
