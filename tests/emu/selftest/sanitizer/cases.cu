/* cases.cu - kernels for tests/emu/compute-sanitizer's end-to-end checks
   (part_sanitizer.sh): each case is run by name; the ones with a seeded
   error have a control beside them, the same code made correct, that the
   tool must pass clean.
     cases <case>     exit 0 when the program itself ran (errors are the tool's to report) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorName(e_)); return 2; } } while (0)

/* racecheck: every thread writes its slot, then reads its neighbour's */
__global__ void shift_racy(int *out) {
    __shared__ int tile[64];
    int t = threadIdx.x;
    tile[t] = t + 1;                         /* RACE_WRITE */
    out[t] = tile[(t + 1) % 64];             /* RACE_READ */
}
__global__ void shift_synced(int *out) {
    __shared__ int tile[64];
    int t = threadIdx.x;
    tile[t] = t + 1;
    __syncthreads();
    out[t] = tile[(t + 1) % 64];
}
/* racecheck: several __shared__ scalars declared on one line (each its own
   shared variable): thread 0 sets them, every thread reads them, with no
   barrier between unless sync */
__global__ void tile_origin(const int *in, int *out, int sync) {
    __shared__ int row0, col0, lda, ldb;
    if (threadIdx.x == 0) {
        row0 = in[0] + 1; col0 = in[1] + 2; lda = in[2] + 3; ldb = in[3] + 4;   /* MULTI_WRITE */
    }
    if (sync) __syncthreads();
    out[threadIdx.x] = row0 + col0 * lda + ldb;                              /* MULTI_READ */
}
/* racecheck: lanes of one warp exchange through shared memory; __syncwarp orders them */
__global__ void warp_exchange(int *out, int sync) {
    __shared__ int s[32];
    int t = threadIdx.x;
    s[t] = t * 2;
    if (sync) __syncwarp();
    out[t] = s[31 - t];
}
/* racecheck: every thread writes the same value (no effect: not reported) */
__global__ void same_value(int *out) {
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    flag = 1;
    __syncthreads();
    out[threadIdx.x] = flag;
}
/* racecheck: atomics are not hazards */
__global__ void shared_atomics(int *out) {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    atomicAdd(&count, 1);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = count;
}
/* initcheck: reads what nothing wrote */
__global__ void sum_first(const float *in, float *out, int n) {
    float s = 0;
    for (int i = 0; i < n; i++) s += in[i];   /* UNINIT_READ */
    out[0] = s;
}
/* initcheck --initcheck-address-space shared|all: a tile of shared memory
   read before (or, with fill, after) its threads wrote it */
__global__ void tile_sum(int *out, int fill) {
    __shared__ int tile[32];
    int t = threadIdx.x;
    if (fill) tile[t] = t;
    __syncthreads();
    out[t] = tile[t] + tile[31 - t];          /* UNINIT_SHARED */
}
/* memcheck: one element past the end */
__global__ void read_past(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[0] = in[i];               /* OOB_READ */
}
/* memcheck: a static shared array written past its end */
__global__ void shared_past(int *out, int extra) {
    __shared__ int small[8];
    int t = threadIdx.x;
    small[t + extra] = t;                     /* SHARED_OOB */
    __syncthreads();
    out[t] = small[t % 8];
}
/* memcheck: a 16-byte load at an address that is not a multiple of 16 */
__global__ void load_float4(const float *in, float *out, int shift) {
    const float4 *p = (const float4 *)(in + shift);
    float4 v = *p;                            /* MISALIGNED */
    out[0] = v.x + v.y + v.z + v.w;
}
/* synccheck: a barrier only some threads reach */
__global__ void divergent_barrier(int *out) {
    if (threadIdx.x < 16) {
        __syncthreads();
        out[threadIdx.x] = 1;
    } else {
        out[threadIdx.x] = 2;
        __syncthreads();                      /* DIVERGENT (the threads that reach it second) */
    }
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    int *d_i = nullptr;
    float *d_f = nullptr, *d_o = nullptr;
    CHECK(cudaMalloc(&d_i, 64 * sizeof(int)));
    CHECK(cudaMalloc(&d_o, 64 * sizeof(float)));
    CHECK(cudaMemset(d_i, 0, 64 * sizeof(int)));
    CHECK(cudaMemset(d_o, 0, 64 * sizeof(float)));
    int rc = 0;
    if (!strcmp(c, "race")) shift_racy<<<2, 64>>>(d_i);
    else if (!strcmp(c, "race_control")) shift_synced<<<2, 64>>>(d_i);
    else if (!strcmp(c, "race_multi")) tile_origin<<<2, 32>>>(d_i, d_i + 32, 0);
    else if (!strcmp(c, "race_multi_control")) tile_origin<<<2, 32>>>(d_i, d_i + 32, 1);
    else if (!strcmp(c, "warp_race")) warp_exchange<<<1, 32>>>(d_i, 0);
    else if (!strcmp(c, "warp_control")) warp_exchange<<<1, 32>>>(d_i, 1);
    else if (!strcmp(c, "same_value")) same_value<<<1, 64>>>(d_i);
    else if (!strcmp(c, "atomics")) shared_atomics<<<1, 64>>>(d_i);
    else if (!strcmp(c, "uninit") || !strcmp(c, "uninit_control")) {
        CHECK(cudaMalloc(&d_f, 16 * sizeof(float)));
        if (!strcmp(c, "uninit_control")) CHECK(cudaMemset(d_f, 0, 16 * sizeof(float)));
        sum_first<<<1, 1>>>(d_f, d_o, 16);
    } else if (!strcmp(c, "uninit_shared")) tile_sum<<<2, 32>>>(d_i, 0);
    else if (!strcmp(c, "uninit_shared_control")) tile_sum<<<2, 32>>>(d_i, 1);
    else if (!strcmp(c, "oob") || !strcmp(c, "oob_control")) {
        CHECK(cudaMalloc(&d_f, 100 * sizeof(float)));
        CHECK(cudaMemset(d_f, 0, 100 * sizeof(float)));
        read_past<<<1, 128>>>(d_f, d_o, !strcmp(c, "oob") ? 100 : 99);
    } else if (!strcmp(c, "shared_oob")) shared_past<<<1, 8>>>(d_i, 1);
    else if (!strcmp(c, "shared_control")) shared_past<<<1, 8>>>(d_i, 0);
    else if (!strcmp(c, "divergent")) divergent_barrier<<<1, 32>>>(d_i);
    else if (!strcmp(c, "misaligned") || !strcmp(c, "aligned")) {
        CHECK(cudaMalloc(&d_f, 64 * sizeof(float)));
        CHECK(cudaMemset(d_f, 0, 64 * sizeof(float)));
        load_float4<<<1, 1>>>(d_f, d_o, !strcmp(c, "misaligned") ? 1 : 4);
    }
    else if (!strcmp(c, "leak") || !strcmp(c, "clean")) {
        if (!strcmp(c, "leak")) CHECK(cudaMalloc(&d_f, 4096));
        shift_synced<<<1, 64>>>(d_i);
    } else {
        fprintf(stderr, "unknown case '%s'\n", c);
        return 2;
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) printf("cases: %s: %s\n", c, cudaGetErrorName(e));
    if (strcmp(c, "leak")) {
        cudaFree(d_f);
        cudaFree(d_i);
        cudaFree(d_o);
    }
    return rc;
}
