/* Warp Matrix Functions (<mma.h>): what the CUDA C++ Programming Guide
   forbids or leaves unspecified, each case in a child process
   (strict_child.h), each fault with its control.
   - the *_sync functions are called by all 32 lanes together: a divergent
     mma_sync (half the warp), lanes in different WMMA calls, a partial warp
     (16 threads), lanes passing different pointers: reported, the grid
     ends with cudaErrorLaunchFailure;
   - mptr 256-bit aligned, ldm a multiple of 16 bytes: otherwise
     cudaErrorMisalignedAddress, for loads and stores;
   - a load past the end of an allocation: cudaErrorIllegalAddress
     (CUEMU_BOUNDS=exact);
   - tf32 inputs not converted with __float_to_tf32: refused by mma_sync;
   - the element-to-lane mapping of a fragment is unspecified: under
     CUEMU_SCHEDULE=shuffle it is drawn from CUEMU_SEED, and a kernel that
     reads frag.x[i] assuming the default mapping gives a wrong answer for
     some seed of 1..8, while a kernel using only the API (and an
     element-wise x[] update) is right for every seed (the control). */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <stdlib.h>
#include "selftest.h"
#include "strict_child.h"

using namespace nvcuda;

static __half *g_a;   /* 16x16 of 1.0, with room for offsets */
static float *g_c;    /* 16x16 */

static int setup(void) {
    __half h[512];
    for (int i = 0; i < 512; i++) h[i] = __float2half(1.0f);
    if (cudaMalloc((void **)&g_a, sizeof h) != cudaSuccess || cudaMalloc((void **)&g_c, 4096) != cudaSuccess) return 1;
    cudaMemcpy(g_a, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(g_c, 0, 4096);
    return 0;
}

/* mode 0: all lanes (control); 1: lanes 0-15 only call mma_sync (the others
   go on to the store); 8: lanes 16-31 return before mma_sync; 2: lanes
   16-31 load while 0-15 call mma_sync; 3: lanes 16-31 pass another pointer;
   4: a misaligned A pointer; 5: ldm 12 (__half: 24 bytes); 6: a misaligned
   store; 7: store ldm 6 (float: 24 bytes) */
__global__ void k_rules(const __half *a, float *c, int mode) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    unsigned lane = threadIdx.x % 32;
    wmma::fill_fragment(acc, 0.0f);
    const __half *pa = a;
    if (mode == 3 && lane >= 16) pa = a + 16;   /* 32 bytes on: aligned, but not the same */
    if (mode == 4) pa = a + 1;
    wmma::load_matrix_sync(fa, pa, mode == 5 ? 12 : 16);
    wmma::load_matrix_sync(fb, a, 16);
    if (mode == 2) {
        if (lane < 16) wmma::mma_sync(acc, fa, fb, acc);
        else wmma::load_matrix_sync(fb, a, 16);
    } else if (mode == 8 && lane >= 16) {
        return;
    } else if (mode != 1 || lane < 16) wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(mode == 6 ? c + 4 : c, acc, mode == 7 ? 6 : 16, wmma::mem_row_major);
}

static int rules_case(int mode, unsigned threads, cudaError_t want) {
    EXPECT(1, setup() == 0);
    k_rules<<<1, threads>>>(g_a, g_c, mode);
    EXPECT(2, cudaGetLastError() == cudaSuccess);
    cudaError_t e = cudaDeviceSynchronize();
    EXPECT(3, e == want);
    if (want == cudaSuccess) {
        float h[256];
        cudaMemcpy(h, g_c, sizeof h, cudaMemcpyDeviceToHost);
        for (int i = 0; i < 256; i++) EXPECT(4, h[i] == 16.0f);
    }
    return 0;
}
static int control(void) { return rules_case(0, 32, cudaSuccess); }
static int control_two_warps(void) { return rules_case(0, 64, cudaSuccess); }
static int divergent_mma(void) { return rules_case(1, 32, cudaErrorLaunchFailure); }
static int exited_lanes(void) { return rules_case(8, 32, cudaErrorLaunchFailure); }
static int different_calls(void) { return rules_case(2, 32, cudaErrorLaunchFailure); }
static int different_pointers(void) { return rules_case(3, 32, cudaErrorLaunchFailure); }
static int partial_warp(void) { return rules_case(0, 16, cudaErrorLaunchFailure); }
static int partial_last_warp(void) { return rules_case(0, 48, cudaErrorLaunchFailure); }
static int misaligned_load(void) { return rules_case(4, 32, cudaErrorMisalignedAddress); }
static int bad_ldm_load(void) { return rules_case(5, 32, cudaErrorMisalignedAddress); }
static int misaligned_store(void) { return rules_case(6, 32, cudaErrorMisalignedAddress); }
static int bad_ldm_store(void) { return rules_case(7, 32, cudaErrorMisalignedAddress); }

ST_TEST(all_lanes_control) {
    ST_CHILD(control, NULL);
    ST_CHILD(control_two_warps, NULL);
}
ST_TEST(divergent_mma_sync_reported) {
    ST_CHILD(divergent_mma, "waits in nvcuda::wmma::mma_sync with mask 0xffffffff while lanes of mask 0xffffffff call "
                            "nvcuda::wmma::store_matrix_sync");
    ST_CHILD(exited_lanes, "nvcuda::wmma::mma_sync: only lanes 0x0000ffff of warp 0 reached it (the others exited");
}
ST_TEST(lanes_in_different_calls_reported) { ST_CHILD(different_calls, "Warp Matrix Functions"); }
ST_TEST(different_pointers_reported) {
    ST_CHILD(different_pointers, "must be the same for all threads in the warp");
}
ST_TEST(partial_warp_reported) {
    ST_CHILD(partial_warp, "fewer than 32 threads");
    ST_CHILD(partial_last_warp, "fewer than 32 threads");
}
ST_TEST(misaligned_pointer_reported) {
    ST_CHILD(misaligned_load, "load_matrix_sync: the pointer");
    ST_CHILD(misaligned_store, "store_matrix_sync: the pointer");
}
ST_TEST(bad_ldm_reported) {
    ST_CHILD(bad_ldm_load, "ldm 12 (elements of 2 bytes) is not a multiple of 16 bytes");
    ST_CHILD(bad_ldm_store, "ldm 6 (elements of 4 bytes) is not a multiple of 16 bytes");
}

/* >>a load past the end of an allocation is an illegal address like any
   other access (CUEMU_BOUNDS=exact: to the byte): 16 rows of 16 from an
   allocation of 200 elements */
__global__ void k_past_end(const __half *a, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::fill_fragment(acc, 0.0f);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}
static int past_end(void) {
    __half *a;
    float *d;
    if (cudaMalloc((void **)&a, 200 * sizeof(__half)) || cudaMalloc((void **)&d, 1024)) return 2;
    k_past_end<<<1, 32>>>(a, d);
    return cudaDeviceSynchronize() == cudaErrorIllegalAddress ? 0 : 3;
}
ST_TEST(load_past_end_reported) {
#if defined(__SANITIZE_ADDRESS__)
    return;   /* under -fsanitize=address the device code has no access hooks: CUEMU_BOUNDS=exact checks nothing */
#endif
    setenv("CUEMU_BOUNDS", "exact", 1);
    ST_CHILD(past_end, "illegal memory access: read of 2 bytes");
    unsetenv("CUEMU_BOUNDS");
}

/* >>tf32 inputs must be converted (__float_to_tf32), as the Guide asks:
   an unconverted 1/3 is refused; converted on the fragment's elements (the
   samples' way), the product is the tf32 value, exactly. */
__global__ void k_tf32(const float *a, float *d, int convert) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::load_matrix_sync(fa, a, 8);
    wmma::fill_fragment(fb, 1.0f);
    wmma::fill_fragment(acc, 0.0f);
    if (convert)
        for (unsigned i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}
static int tf32_run(int convert) {
    float h[128], *da, *dd, out[256];
    for (int i = 0; i < 128; i++) h[i] = i % 8 == 0 ? 1.0f / 3.0f : 0.0f;
    if (cudaMalloc((void **)&da, sizeof h) || cudaMalloc((void **)&dd, sizeof out)) return 2;
    cudaMemcpy(da, h, sizeof h, cudaMemcpyHostToDevice);
    k_tf32<<<1, 32>>>(da, dd, convert);
    cudaError_t e = cudaDeviceSynchronize();
    if (!convert) return e == cudaErrorLaunchFailure ? 0 : 3;
    if (e != cudaSuccess) return 4;
    cudaMemcpy(out, dd, sizeof out, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 256; i++)
        if (out[i] != wmma::__float_to_tf32(1.0f / 3.0f)) return 5;
    return 0;
}
static int tf32_unconverted(void) { return tf32_run(0); }
static int tf32_converted(void) { return tf32_run(1); }
ST_TEST(tf32_unconverted_reported) {
    ST_CHILD(tf32_unconverted, "of the precision::tf32 matrix_a fragment is 0.333333343, not a tf32 value");
    ST_CHILD(tf32_converted, NULL);
}

/* >>the fragment mapping. C[i][j] = i*16 + j; D = A*B + C with A = B = I
   (D = C + I). assume = 1: then doubles "row 0" by reading x[] as
   if lane 0 held elements 0..num_elements-1 (the default mapping) -- a
   layout assumption; assume = 0: doubles every element (x[] element-wise:
   right for any mapping). */
__global__ void k_mapping(const __half *eye, const float *c, float *d, int assume) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, eye, 16);
    wmma::load_matrix_sync(fb, eye, 16);
    wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    if (assume) {
        if (threadIdx.x == 0 || threadIdx.x == 1)
            for (unsigned i = 0; i < acc.num_elements; i++) acc.x[i] *= 2.0f;
    } else {
        for (unsigned i = 0; i < acc.num_elements; i++) acc.x[i] *= 2.0f;
    }
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

/* 0: right; 1: wrong answer; other: error */
static int mapping_run(int assume) {
    __half eye[256];
    float c[256], d[256];
    for (int i = 0; i < 256; i++) {
        eye[i] = __float2half(i / 16 == i % 16 ? 1.0f : 0.0f);
        c[i] = (float)i;
    }
    __half *de;
    float *dc, *dd;
    if (cudaMalloc((void **)&de, sizeof eye) || cudaMalloc((void **)&dc, sizeof c) || cudaMalloc((void **)&dd, sizeof d)) return 2;
    cudaMemcpy(de, eye, sizeof eye, cudaMemcpyHostToDevice);
    cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice);
    k_mapping<<<1, 32>>>(de, dc, dd, assume);
    if (cudaDeviceSynchronize() != cudaSuccess) return 3;
    cudaMemcpy(d, dd, sizeof d, cudaMemcpyDeviceToHost);
    for (int i = 0; i < 256; i++) {
        float base = (float)i + (i / 16 == i % 16 ? 1.0f : 0.0f);   /* I*I + C */
        float want = assume && i >= 16 ? base : 2.0f * base;
        if (d[i] != want) return 1;
    }
    return 0;
}
static int assume_layout(void) { return mapping_run(1); }
static int api_only(void) { return mapping_run(0); }

static void set_seed(const char *schedule, int seed) {
    char s[16];
    snprintf(s, sizeof s, "%d", seed);
    if (schedule) setenv("CUEMU_SCHEDULE", schedule, 1);
    else unsetenv("CUEMU_SCHEDULE");
    setenv("CUEMU_SEED", s, 1);
}

ST_TEST(layout_assumption_fails_for_some_seed) {
    set_seed(NULL, 1);
    ST_CHECKF(in_child(assume_layout) == 0, "the default mapping: the assumption holds there (exit %d)", in_child(assume_layout));
    int wrong = 0;
    for (int seed = 1; seed <= 8; seed++) {
        set_seed("shuffle", seed);
        int rc = in_child(assume_layout);
        ST_CHECKF(rc == 0 || rc == 1, "seed %d: exit %d: %s", seed, rc, strict_log);
        wrong += rc == 1;
    }
    ST_CHECKF(wrong > 0, "no seed of 1..8 breaks a kernel that assumes the fragment mapping");
    set_seed(NULL, 1);
}
ST_TEST(api_only_right_for_every_seed) {
    ST_CHECK(in_child(api_only) == 0);
    for (int seed = 1; seed <= 8; seed++) {
        set_seed("shuffle", seed);
        int rc = in_child(api_only);
        ST_CHECKF(rc == 0, "seed %d: exit %d: %s", seed, rc, strict_log);
    }
    set_seed(NULL, 1);
}

int main(void) {
    ST_RUN(all_lanes_control);
    ST_RUN(divergent_mma_sync_reported);
    ST_RUN(lanes_in_different_calls_reported);
    ST_RUN(different_pointers_reported);
    ST_RUN(partial_warp_reported);
    ST_RUN(misaligned_pointer_reported);
    ST_RUN(bad_ldm_reported);
    ST_RUN(tf32_unconverted_reported);
    ST_RUN(load_past_end_reported);
    ST_RUN(layout_assumption_fails_for_some_seed);
    ST_RUN(api_only_right_for_every_seed);
    return st_summary();
}
