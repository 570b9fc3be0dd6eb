/* Warp Matrix Functions (<mma.h>, nvcuda::wmma; CUDA C++ Programming
   Guide, "Warp Matrix Functions"): results through the API only.
   - a 16x16x16 __half -> float GEMM against a float64 reference, and equal
     to the emulator's documented order (d = c, then d = fmaf(a, b, d) for
     k = 0..15: each product exact, each sum rounded to float);
   - every shape and type of the Guide's table the emulator provides
     (__half -> float/__half, __nv_bfloat16 -> float, tf32 -> float,
     signed/unsigned char -> int, double 8x8x4) with D = A*B + C, on small
     integers (the results are exact, so compared for equality);
   - ldm and layout variants (row/col major A and B, padded ldm, C loaded and
     D stored with mem_col_major), and that a store writes nothing outside
     its matrix (the padding keeps its pattern);
   - accumulation into C over two mma_sync calls;
   - a tiled GEMM over odd sizes (37x45x53) with shared-memory staging and
     zero padding, four warps per block (written for this test).
   The faults and the unspecified fragment mapping: strict_wmma.cu. */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <math.h>
#include <stdlib.h>
#include "selftest.h"

using namespace nvcuda;

/* >>one warp: D = A*B + C with the given ldm and layouts */
template <class Tab, class Tc, int M, int N, int K, class LA, class LB>
__global__ void k_mma(const typename wmma::fragment<wmma::matrix_a, M, N, K, Tab, LA>::storage_element_type *a, unsigned lda,
                      const typename wmma::fragment<wmma::matrix_b, M, N, K, Tab, LB>::storage_element_type *b, unsigned ldb,
                      const Tc *c, unsigned ldc, int c_col, Tc *d, unsigned ldd, int d_col, int twice) {
    wmma::fragment<wmma::matrix_a, M, N, K, Tab, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, Tab, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, Tc> fc;
    wmma::load_matrix_sync(fa, a, lda);
    wmma::load_matrix_sync(fb, b, ldb);
    wmma::load_matrix_sync(fc, c, ldc, c_col ? wmma::mem_col_major : wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    if (twice) wmma::mma_sync(fc, fa, fb, fc);   /* accumulates into c again */
    wmma::store_matrix_sync(d, fc, ldd, d_col ? wmma::mem_col_major : wmma::mem_row_major);
}

template <class S> static S from_int(int v) { return (S)v; }
template <> __half from_int<__half>(int v) { return __float2half((float)v); }
template <> __nv_bfloat16 from_int<__nv_bfloat16>(int v) { return __float2bfloat16((float)v); }
template <class S> static double to_d(S v) { return (double)v; }
template <> double to_d<__half>(__half v) { return __half2float(v); }
template <> double to_d<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

static unsigned g_rng = 12345;
static int small(int lo, int hi) {
    g_rng = g_rng * 1103515245u + 12345u;
    return lo + (int)((g_rng >> 16) % (unsigned)(hi - lo + 1));
}

template <class T> static T *dev(const T *h, size_t n) {
    T *p = nullptr;
    cudaMalloc((void **)&p, n * sizeof(T) + 64);
    cudaMemcpy(p, h, n * sizeof(T), cudaMemcpyHostToDevice);
    return p;
}

/* Runs k_mma; returns 0 when D is right and the padding of D untouched. */
template <class Tab, class Tc, int M, int N, int K, class LA, class LB>
static int mma_case(unsigned lda, unsigned ldb, unsigned ldc, int c_col, unsigned ldd, int d_col, int twice) {
    using SA = typename wmma::fragment<wmma::matrix_a, M, N, K, Tab, LA>::storage_element_type;
    using SB = typename wmma::fragment<wmma::matrix_b, M, N, K, Tab, LB>::storage_element_type;
    const bool acol = std::is_same_v<LA, wmma::col_major>, bcol = std::is_same_v<LB, wmma::col_major>;
    const bool uns = std::is_same_v<Tab, unsigned char>;
    size_t na = (acol ? K : M) * (size_t)lda, nb = (bcol ? N : K) * (size_t)ldb;
    size_t nc = (c_col ? N : M) * (size_t)ldc, nd = (d_col ? N : M) * (size_t)ldd;
    SA *ha = (SA *)calloc(na, sizeof(SA));
    SB *hb = (SB *)calloc(nb, sizeof(SB));
    Tc *hc = (Tc *)calloc(nc, sizeof(Tc)), *hd = (Tc *)malloc(nd * sizeof(Tc));
    double A[32][16], B[16][32], C[32][32];
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) {
            int v = uns ? small(0, 6) : small(-3, 3);
            A[i][k] = v;
            ha[acol ? k * lda + i : i * lda + k] = from_int<SA>(v);
        }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            int v = uns ? small(0, 6) : small(-3, 3);
            B[k][j] = v;
            hb[bcol ? j * ldb + k : k * ldb + j] = from_int<SB>(v);
        }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int v = small(-20, 20);
            C[i][j] = v;
            hc[c_col ? j * ldc + i : i * ldc + j] = from_int<Tc>(v);
        }
    SA *da = dev(ha, na);
    SB *db = dev(hb, nb);
    Tc *dc = dev(hc, nc), *dd = nullptr;
    cudaMalloc((void **)&dd, nd * sizeof(Tc));
    cudaMemset(dd, 0x5a, nd * sizeof(Tc));
    k_mma<Tab, Tc, M, N, K, LA, LB><<<1, 32>>>(da, lda, db, ldb, dc, ldc, c_col, dd, ldd, d_col, twice);
    int bad = 0;
    if (cudaDeviceSynchronize() != cudaSuccess) bad = 1;
    cudaMemcpy(hd, dd, nd * sizeof(Tc), cudaMemcpyDeviceToHost);
    Tc pad;
    memset(&pad, 0x5a, sizeof pad);
    for (size_t e = 0; e < nd && !bad; e++) {
        size_t r = d_col ? e % ldd : e / ldd, c = d_col ? e / ldd : e % ldd;
        if (r < (size_t)M && c < (size_t)N) {
            double want = C[r][c];
            for (int t = 0; t < (twice ? 2 : 1); t++)
                for (int k = 0; k < K; k++) want += A[r][k] * B[k][c];
            if (to_d(hd[e]) != want) {
                printf("  D[%zu][%zu] = %g, want %g\n", r, c, to_d(hd[e]), want);
                bad = 2;
            }
        } else if (memcmp(&hd[e], &pad, sizeof pad)) {
            printf("  the store wrote outside the matrix (element %zu of the buffer)\n", e);
            bad = 3;
        }
    }
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
    free(ha); free(hb); free(hc); free(hd);
    return bad;
}

using RM = wmma::row_major;
using CM = wmma::col_major;

/* >>each shape and type, plain layouts (A row major, B column major) */
#define PLAIN(Tab, Tc, M, N, K) mma_case<Tab, Tc, M, N, K, RM, CM>(K, K, N, 0, N, 0, 0)
ST_TEST(half_float_shapes) {
    ST_CHECK(PLAIN(__half, float, 16, 16, 16) == 0);
    ST_CHECK(PLAIN(__half, float, 32, 8, 16) == 0);
    ST_CHECK(PLAIN(__half, float, 8, 32, 16) == 0);
}
ST_TEST(half_half_shapes) {
    ST_CHECK(PLAIN(__half, __half, 16, 16, 16) == 0);
    ST_CHECK(PLAIN(__half, __half, 32, 8, 16) == 0);
    ST_CHECK(PLAIN(__half, __half, 8, 32, 16) == 0);
}
ST_TEST(bf16_float_shapes) {
    ST_CHECK(PLAIN(__nv_bfloat16, float, 16, 16, 16) == 0);
    ST_CHECK(PLAIN(__nv_bfloat16, float, 32, 8, 16) == 0);
    ST_CHECK(PLAIN(__nv_bfloat16, float, 8, 32, 16) == 0);
}
ST_TEST(tf32_float_16x16x8) { ST_CHECK(PLAIN(wmma::precision::tf32, float, 16, 16, 8) == 0); }
ST_TEST(s8_int_shapes) {
    ST_CHECK(PLAIN(signed char, int, 16, 16, 16) == 0);
    ST_CHECK(PLAIN(signed char, int, 32, 8, 16) == 0);
    ST_CHECK(PLAIN(signed char, int, 8, 32, 16) == 0);
}
ST_TEST(u8_int_shapes) {
    ST_CHECK(PLAIN(unsigned char, int, 16, 16, 16) == 0);
    ST_CHECK(PLAIN(unsigned char, int, 32, 8, 16) == 0);
    ST_CHECK(PLAIN(unsigned char, int, 8, 32, 16) == 0);
}
ST_TEST(double_8x8x4) { ST_CHECK(PLAIN(double, double, 8, 8, 4) == 0); }

/* >>ldm and layouts: padded strides, every A/B layout, C and D column major */
ST_TEST(ldm_and_layouts) {
    ST_CHECK((mma_case<__half, float, 16, 16, 16, CM, RM>(24, 40, 20, 1, 28, 1, 0)) == 0);
    ST_CHECK((mma_case<__half, float, 16, 16, 16, RM, RM>(32, 16, 16, 0, 24, 1, 0)) == 0);
    ST_CHECK((mma_case<__half, float, 16, 16, 16, CM, CM>(16, 48, 24, 1, 16, 0, 0)) == 0);
    ST_CHECK((mma_case<__half, float, 32, 8, 16, CM, RM>(40, 8, 12, 0, 36, 1, 0)) == 0);
    ST_CHECK((mma_case<__half, __half, 8, 32, 16, RM, RM>(24, 40, 48, 1, 40, 0, 0)) == 0);
    ST_CHECK((mma_case<__nv_bfloat16, float, 16, 16, 16, CM, RM>(24, 24, 16, 1, 20, 1, 0)) == 0);
    ST_CHECK((mma_case<wmma::precision::tf32, float, 16, 16, 8, CM, RM>(20, 20, 20, 1, 24, 0, 0)) == 0);
    ST_CHECK((mma_case<signed char, int, 16, 16, 16, CM, RM>(32, 48, 20, 1, 24, 1, 0)) == 0);
    ST_CHECK((mma_case<double, double, 8, 8, 4, CM, RM>(10, 12, 8, 1, 10, 1, 0)) == 0);
}

/* >>accumulate: C, then D = A*B + (A*B + C) */
ST_TEST(accumulate_into_c) {
    ST_CHECK((mma_case<__half, float, 16, 16, 16, RM, CM>(16, 16, 16, 0, 16, 0, 1)) == 0);
    ST_CHECK((mma_case<signed char, int, 32, 8, 16, RM, CM>(16, 16, 8, 0, 8, 0, 1)) == 0);
    ST_CHECK((mma_case<double, double, 8, 8, 4, RM, RM>(4, 8, 8, 1, 8, 0, 1)) == 0);
}

/* >>16x16x16 half -> float on random inputs: float64 reference, and the documented order */
__global__ void k_gemm16(const __half *a, const __half *b, const float *c, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}
ST_TEST(gemm16_half_float_vs_float64) {
    __half ha[256], hb[256];
    float hc[256], hd[256];
    srand(7);
    for (int i = 0; i < 256; i++) {
        ha[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
        hb[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
        hc[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    __half *da = dev(ha, 256), *db = dev(hb, 256);
    float *dc = dev(hc, 256), *dd = nullptr;
    cudaMalloc((void **)&dd, sizeof hd);
    k_gemm16<<<1, 32>>>(da, db, dc, dd);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost);
    double worst = 0;
    int order_diffs = 0;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            double ref = hc[i * 16 + j], mag = fabs(ref);
            float f = hc[i * 16 + j];
            for (int k = 0; k < 16; k++) {
                double p = (double)__half2float(ha[i * 16 + k]) * __half2float(hb[k * 16 + j]);
                ref += p;
                mag += fabs(p);
                f = fmaf(__half2float(ha[i * 16 + k]), __half2float(hb[k * 16 + j]), f);
            }
            double err = fabs(hd[i * 16 + j] - ref) / (mag * 0x1p-24 * 17);
            if (err > worst) worst = err;
            if (f != hd[i * 16 + j]) order_diffs++;
        }
    ST_CHECKF(worst <= 1.0, "error %g of the float accumulation bound", worst);
    ST_CHECKF(order_diffs == 0, "%d results differ from the documented order", order_diffs);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dd);
}

/* >>tiled GEMM, C[MxN] = A[MxK] * B[KxN], all row major, any sizes: a block
   computes a 32x32 tile of C with four warps (2x2 of 16x16); each K step
   stages 32x16 of A and 16x32 of B in shared memory, zero past the edges;
   the warps' results go through shared memory to the bounded store. */
#define TM 32
#define TN 32
#define TK 16
#define PADH 8   /* halves: keeps ldm a multiple of 8 and rows 32-byte aligned at tile offsets */
__global__ void k_tiled(const __half *A, const __half *B, float *C, int M, int N, int K) {
    __shared__ __align__(32) __half As[TM][TK + PADH];
    __shared__ __align__(32) __half Bs[TK][TN + PADH];
    __shared__ __align__(32) float Cs[TM][TN + 8];
    int tid = threadIdx.x, warp = tid / 32, wr = warp / 2, wc = warp % 2;
    int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += TK) {
        for (int i = tid; i < TM * TK; i += blockDim.x) {
            int r = i / TK, c = i % TK;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : __float2half(0.0f);
        }
        for (int i = tid; i < TK * TN; i += blockDim.x) {
            int r = i / TN, c = i % TN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : __float2half(0.0f);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, &As[wr * 16][0], TK + PADH);
        wmma::load_matrix_sync(fb, &Bs[0][wc * 16], TN + PADH);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncthreads();
    }
    wmma::store_matrix_sync(&Cs[wr * 16][wc * 16], acc, TN + 8, wmma::mem_row_major);
    __syncthreads();
    for (int i = tid; i < TM * TN; i += blockDim.x) {
        int r = i / TN, c = i % TN;
        if (row0 + r < M && col0 + c < N) C[(size_t)(row0 + r) * N + col0 + c] = Cs[r][c];
    }
}
ST_TEST(tiled_gemm_odd_sizes) {
    const int M = 37, N = 45, K = 53;
    __half *ha = (__half *)malloc(sizeof(__half) * M * K), *hb = (__half *)malloc(sizeof(__half) * K * N);
    float *hc = (float *)malloc(sizeof(float) * M * N);
    srand(11);
    for (int i = 0; i < M * K; i++) ha[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
    for (int i = 0; i < K * N; i++) hb[i] = __float2half((float)rand() / RAND_MAX * 2 - 1);
    __half *da = dev(ha, (size_t)M * K), *db = dev(hb, (size_t)K * N);
    float *dc = nullptr;
    cudaMalloc((void **)&dc, sizeof(float) * M * N);
    k_tiled<<<dim3((N + TN - 1) / TN, (M + TM - 1) / TM), 128>>>(da, db, dc, M, N, K);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaMemcpy(hc, dc, sizeof(float) * M * N, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)__half2float(ha[i * K + k]) * __half2float(hb[k * N + j]);
                ref += p;
                mag += fabs(p);
            }
            double err = fabs(hc[i * N + j] - ref) / (mag * 0x1p-24 * (K + 1) + 1e-30);
            if (err > worst) worst = err;
        }
    ST_CHECKF(worst <= 1.0, "error %g of the float accumulation bound", worst);
    cudaFree(da); cudaFree(db); cudaFree(dc);
    free(ha); free(hb); free(hc);
}

/* >>fill_fragment and an element-wise operation on x[] (the same for every
   element: right whatever the mapping) */
__global__ void k_fill_scale(float *d) {
    wmma::fragment<wmma::accumulator, 32, 8, 16, float> acc;
    wmma::fill_fragment(acc, 1.5f);
    for (unsigned i = 0; i < acc.num_elements; i++) acc.x[i] *= 2.0f;
    wmma::store_matrix_sync(d, acc, 32, wmma::mem_col_major);
}
ST_TEST(fill_and_elementwise) {
    float *dd = nullptr, hd[256];
    cudaMalloc((void **)&dd, sizeof hd);
    k_fill_scale<<<1, 32>>>(dd);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < 256; i++) wrong += hd[i] != 3.0f;
    ST_CHECK(wrong == 0);
    cudaFree(dd);
}

/* >>__float_to_tf32: round to nearest, ties away from zero, to 10 mantissa bits */
ST_TEST(float_to_tf32) {
    ST_CHECK(wmma::__float_to_tf32(1.0f) == 1.0f);
    ST_CHECK(wmma::__float_to_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);   /* the tie, away from zero */
    ST_CHECK(wmma::__float_to_tf32(-(1.0f + 0x1p-11f)) == -(1.0f + 0x1p-10f));
    ST_CHECK(wmma::__float_to_tf32(1.0f + 0x1p-12f) == 1.0f);
    ST_CHECK(isinf(wmma::__float_to_tf32(INFINITY)));
}

int main(void) {
    ST_RUN(gemm16_half_float_vs_float64);
    ST_RUN(half_float_shapes);
    ST_RUN(half_half_shapes);
    ST_RUN(bf16_float_shapes);
    ST_RUN(tf32_float_16x16x8);
    ST_RUN(s8_int_shapes);
    ST_RUN(u8_int_shapes);
    ST_RUN(double_8x8x4);
    ST_RUN(ldm_and_layouts);
    ST_RUN(accumulate_into_c);
    ST_RUN(tiled_gemm_odd_sizes);
    ST_RUN(fill_and_elementwise);
    ST_RUN(float_to_tf32);
    return st_summary();
}
