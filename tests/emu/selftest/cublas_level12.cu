/* cublas_level12.cu - self-test of the cuBLAS level-1 and level-2 routines
   a course uses (axpy, scal, copy, swap, dot, nrm2, asum, amax, amin, gemv)
   and the host <-> device copy helpers, written from the cuBLAS
   documentation and the reference BLAS they point to: host and device
   pointer modes, increments (negative ones walk the vector from its end),
   the documented quick returns and results for n <= 0, beta == 0 not
   reading y, argument checks, and last (sticky) a host pointer as the
   result of a device-pointer-mode reduction faulting the device.

   An ordinary CUDA program: it builds with the real nvcc as well.
   Tolerances: sums of n products, |err| <= (n + 2) * u * sum |x_i y_i|,
   u = 2^-24 (float) or 2^-53 (double). */
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <math.h>
#include <string.h>

#include <vector>

#include "selftest.h"

#ifdef __CUEMU__
#include <cuemu.h>
#endif

static cublasHandle_t g_h;
static uint32_t g_seed = 99u;
static float frand() {
    g_seed = g_seed * 1664525u + 1013904223u;
    float v = 0.25f + 0.75f * ((g_seed >> 8) & 0xffff) / 65536.0f;
    return (g_seed >> 28) & 1 ? -v : v;
}

template <typename F>
static F *upload(const std::vector<F> &h) {
    F *d;
    cudaMalloc((void **)&d, h.size() * sizeof(F) + 1);
    cudaMemcpy(d, h.data(), h.size() * sizeof(F), cudaMemcpyHostToDevice);
    return d;
}
template <typename F>
static std::vector<F> download(const F *d, size_t n) {
    std::vector<F> h(n);
    cudaMemcpy(h.data(), d, n * sizeof(F), cudaMemcpyDeviceToHost);
    return h;
}

/* element i of n at increment inc (reference BLAS) */
static long idx(long i, int n, int inc) { return inc >= 0 ? i * inc : (long(n) - 1 - i) * -long(inc); }

ST_TEST(axpy_scal) {
    for (int inc : {1, 3, -2}) {
        int n = 37;
        long span = 1 + long(n - 1) * labs(inc);
        std::vector<float> x(span), y(span);
        for (auto &v : x) v = frand();
        for (auto &v : y) v = frand();
        float *dx = upload(x), *dy = upload(y);
        float a = 0.75f;
        ST_CHECK(cublasSaxpy(g_h, n, &a, dx, inc, dy, 1 + (inc < 0)) == CUBLAS_STATUS_SUCCESS);
        int incy = 1 + (inc < 0);
        std::vector<float> y1 = download(dy, y.size());
        for (long i = 0; i < n; ++i) {
            float want = y[idx(i, n, incy)] + a * x[idx(i, n, inc)];
            ST_CHECK(fabsf(y1[idx(i, n, incy)] - want) <= 2e-7f * (fabsf(want) + 1));
        }
        if (inc > 0) {
            float s = -2;
            ST_CHECK(cublasSscal(g_h, n, &s, dx, inc) == CUBLAS_STATUS_SUCCESS);
            std::vector<float> x1 = download(dx, x.size());
            for (long i = 0; i < span; ++i) ST_CHECK(x1[i] == (i % inc == 0 ? -2 * x[i] : x[i]));
        }
        cudaFree(dx); cudaFree(dy);
    }
    /* n <= 0 and (scal) incx <= 0: nothing happens */
    float a = 1;
    ST_CHECK(cublasSaxpy(g_h, 0, &a, nullptr, 1, nullptr, 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSscal(g_h, 5, &a, nullptr, 0) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSscal(nullptr, 5, &a, nullptr, 1) == CUBLAS_STATUS_NOT_INITIALIZED);
    std::vector<double> xd(9, 1.5);
    double *dd = upload(xd), two = 2;
    ST_CHECK(cublasDscal(g_h, 9, &two, dd, 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(download(dd, 9)[8] == 3.0);
    ST_CHECK(cublasDaxpy(g_h, 9, &two, dd, 1, dd, 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(download(dd, 9)[0] == 9.0);
    cudaFree(dd);
}

ST_TEST(dot_nrm2_amax_host_mode) {
    int n = 1001;
    std::vector<float> x(n * 2), y(n);
    for (auto &v : x) v = frand();
    for (auto &v : y) v = frand();
    x[2 * 417] = 5.0f;            /* the largest |x| at stride 2: index 418 */
    x[2 * 900] = -5.0f;           /* as large, later: the first one wins */
    float *dx = upload(x), *dy = upload(y);
    float r = -1;
    ST_CHECK(cublasSdot(g_h, n, dx, 2, dy, 1, &r) == CUBLAS_STATUS_SUCCESS);
    double s = 0, mag = 0;
    for (int i = 0; i < n; ++i) { s += double(x[2 * i]) * y[i]; mag += fabs(double(x[2 * i]) * y[i]); }
    ST_CHECK(fabs(r - s) <= (n + 2) * ldexp(1.0, -24) * mag);
    ST_CHECK(cublasSdot(g_h, n, dx, -2, dy, 1, &r) == CUBLAS_STATUS_SUCCESS);
    s = 0;
    for (int i = 0; i < n; ++i) s += double(x[2 * (n - 1 - i)]) * y[i];
    ST_CHECK(fabs(r - s) <= (n + 2) * ldexp(1.0, -24) * mag);
    ST_CHECK(cublasSnrm2(g_h, n, dx, 2, &r) == CUBLAS_STATUS_SUCCESS);
    double q = 0;
    for (int i = 0; i < n; ++i) q += double(x[2 * i]) * x[2 * i];
    ST_CHECK(fabs(r - sqrt(q)) <= 4 * ldexp(1.0, -24) * sqrt(q));
    int at = -1;
    ST_CHECK(cublasIsamax(g_h, n, dx, 2, &at) == CUBLAS_STATUS_SUCCESS && at == 418);
    /* the documented results for n <= 0 (and incx <= 0) */
    ST_CHECK(cublasSdot(g_h, 0, dx, 1, dy, 1, &r) == CUBLAS_STATUS_SUCCESS && r == 0);
    r = -1;
    ST_CHECK(cublasSnrm2(g_h, n, dx, 0, &r) == CUBLAS_STATUS_SUCCESS && r == 0);
    ST_CHECK(cublasIsamax(g_h, n, dx, -1, &at) == CUBLAS_STATUS_SUCCESS && at == 0);
    ST_CHECK(cublasIsamax(g_h, n, dx, 1, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSnrm2(g_h, n, dx, 1, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
    /* nrm2 does not overflow or underflow in its intermediate sums */
    std::vector<double> big = {3e200, 4e200}, tiny = {3e-200, 4e-200};
    double *db = upload(big), *dt = upload(tiny), rd;
    ST_CHECK(cublasDnrm2(g_h, 2, db, 1, &rd) == CUBLAS_STATUS_SUCCESS && fabs(rd - 5e200) <= 1e186);
    ST_CHECK(cublasDnrm2(g_h, 2, dt, 1, &rd) == CUBLAS_STATUS_SUCCESS && fabs(rd - 5e-200) <= 1e-214);
    ST_CHECK(cublasIdamax(g_h, 2, db, 1, &at) == CUBLAS_STATUS_SUCCESS && at == 2);
    ST_CHECK(cublasDdot(g_h, 2, dt, 1, dt, 1, &rd) == CUBLAS_STATUS_SUCCESS && rd == 0); /* underflows, as a dot does */
    cudaFree(db); cudaFree(dt);
    cudaFree(dx); cudaFree(dy);
}

ST_TEST(reductions_device_mode) {
    int n = 50;
    std::vector<float> x(n);
    for (auto &v : x) v = frand();
    x[33] = 9;
    float *dx = upload(x), *dr;
    int *di;
    cudaMalloc((void **)&dr, 2 * sizeof(float));
    cudaMalloc((void **)&di, sizeof(int));
    ST_CHECK(cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSdot(g_h, n, dx, 1, dx, 1, dr) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSnrm2(g_h, n, dx, 1, dr + 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasIsamax(g_h, n, dx, 1, di) == CUBLAS_STATUS_SUCCESS);
    /* alpha in device memory */
    ST_CHECK(cublasSscal(g_h, n, dr + 1, dx, 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_HOST) == CUBLAS_STATUS_SUCCESS);
    std::vector<float> r = download(dr, 2), x1 = download(dx, n);
    int at = download(di, 1)[0];
    double q = 0;
    for (float v : x) q += double(v) * v;
    ST_CHECK(fabs(r[0] - q) <= (n + 2) * ldexp(1.0, -24) * q);
    ST_CHECK(fabs(r[1] - sqrt(q)) <= 4 * ldexp(1.0, -24) * sqrt(q));
    ST_CHECK(at == 34);
    for (int i = 0; i < n; ++i) ST_CHECK(x1[i] == x[i] * r[1]);
    cudaFree(dx); cudaFree(dr); cudaFree(di);
}

ST_TEST(gemv) {
    for (cublasOperation_t tr : {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C})
        for (int incx : {1, -3})
            for (bool beta0 : {false, true}) {
                int m = 23, n = 17, lda = 29, incy = 2;
                int lx = tr == CUBLAS_OP_N ? n : m, ly = tr == CUBLAS_OP_N ? m : n;
                std::vector<float> A(size_t(lda) * n), x(1 + size_t(lx - 1) * abs(incx)), y(1 + size_t(ly - 1) * incy);
                for (auto &v : A) v = frand();
                for (auto &v : x) v = frand();
                for (auto &v : y) v = beta0 ? NAN : frand();
                float *dA = upload(A), *dx = upload(x), *dy = upload(y);
                float al = 1.5f, be = beta0 ? 0.0f : -0.5f;
                ST_CHECK(cublasSgemv(g_h, tr, m, n, &al, dA, lda, dx, incx, &be, dy, incy) == CUBLAS_STATUS_SUCCESS);
                std::vector<float> y1 = download(dy, y.size());
                for (int i = 0; i < ly; ++i) {
                    double s = 0, mag = 0;
                    for (int j = 0; j < lx; ++j) {
                        double a = tr == CUBLAS_OP_N ? A[i + size_t(j) * lda] : A[j + size_t(i) * lda];
                        s += a * x[idx(j, lx, incx)];
                        mag += fabs(a * x[idx(j, lx, incx)]);
                    }
                    double want = al * s + (beta0 ? 0 : be * y[idx(i, ly, incy)]);
                    ST_CHECKF(fabs(y1[idx(i, ly, incy)] - want) <= (lx + 3) * ldexp(1.0, -24) * (1.5 * mag + 1),
                              "trans %d incx %d beta0 %d: y[%d] = %g, want %g", tr, incx, beta0, i,
                              y1[idx(i, ly, incy)], want);
                }
                cudaFree(dA); cudaFree(dx); cudaFree(dy);
            }
    /* documented INVALID_VALUE cases (and lda, trans from the parameter table) */
    float al = 1, be = 0;
    float *d;
    cudaMalloc((void **)&d, 1024);
    ST_CHECK(cublasSgemv(g_h, CUBLAS_OP_N, -1, 4, &al, d, 4, d, 1, &be, d, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSgemv(g_h, CUBLAS_OP_N, 4, -1, &al, d, 4, d, 1, &be, d, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSgemv(g_h, CUBLAS_OP_N, 4, 4, &al, d, 4, d, 0, &be, d, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSgemv(g_h, CUBLAS_OP_N, 4, 4, &al, d, 4, d, 1, &be, d, 0) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSgemv(g_h, CUBLAS_OP_N, 4, 4, &al, d, 3, d, 1, &be, d, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSgemv(g_h, (cublasOperation_t)7, 4, 4, &al, d, 4, d, 1, &be, d, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSgemv(g_h, CUBLAS_OP_N, 0, 4, &al, d, 1, d, 1, &be, d, 1) == CUBLAS_STATUS_SUCCESS);
    /* double */
    std::vector<double> Ad = {1, 2, 3, 4}, xd = {1, 1};
    double *eA = upload(Ad), *ex = upload(xd), *ey;
    cudaMalloc((void **)&ey, 2 * sizeof(double));
    double one = 1, zero = 0;
    ST_CHECK(cublasDgemv(g_h, CUBLAS_OP_T, 2, 2, &one, eA, 2, ex, 1, &zero, ey, 1) == CUBLAS_STATUS_SUCCESS);
    std::vector<double> yd = download(ey, 2);
    ST_CHECK(yd[0] == 3 && yd[1] == 7);
    cudaFree(eA); cudaFree(ex); cudaFree(ey);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    cudaFree(d);
}

ST_TEST(copy_swap_asum_amin) {
    int n = 21;
    std::vector<float> x(3 * n), y(n);
    for (auto &v : x) v = frand();
    for (auto &v : y) v = frand();
    x[3 * 7] = 0.01f;               /* smallest |x| at stride 3: index 8 */
    float *dx = upload(x), *dy = upload(y);
    ST_CHECK(cublasSswap(g_h, n, dx, 3, dy, -1) == CUBLAS_STATUS_SUCCESS);
    std::vector<float> x1 = download(dx, x.size()), y1 = download(dy, n);
    for (int i = 0; i < n; ++i) {
        ST_CHECK(x1[3 * i] == y[n - 1 - i]);
        ST_CHECK(y1[n - 1 - i] == x[3 * i]);
    }
    ST_CHECK(cublasScopy(g_h, n, dy, -1, dx, 3) == CUBLAS_STATUS_SUCCESS);  /* back */
    x1 = download(dx, x.size());
    ST_CHECK(x1 == x);
    float r;
    ST_CHECK(cublasSasum(g_h, n, dx, 3, &r) == CUBLAS_STATUS_SUCCESS);
    double s = 0;
    for (int i = 0; i < n; ++i) s += fabs(double(x[3 * i]));
    ST_CHECK(fabs(r - s) <= (n + 2) * ldexp(1.0, -24) * s);
    ST_CHECK(cublasSasum(g_h, n, dx, 0, &r) == CUBLAS_STATUS_SUCCESS && r == 0);
    int at = -1;
    ST_CHECK(cublasIsamin(g_h, n, dx, 3, &at) == CUBLAS_STATUS_SUCCESS && at == 8);
    ST_CHECK(cublasIsamin(g_h, 0, dx, 3, &at) == CUBLAS_STATUS_SUCCESS && at == 0);
    std::vector<double> d = {4, -1, 2};
    double *dd = upload(d), *de, rd;
    cudaMalloc((void **)&de, 3 * sizeof(double));
    ST_CHECK(cublasDcopy(g_h, 3, dd, 1, de, 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasDasum(g_h, 3, de, 1, &rd) == CUBLAS_STATUS_SUCCESS && rd == 7);
    ST_CHECK(cublasIdamin(g_h, 3, de, 1, &at) == CUBLAS_STATUS_SUCCESS && at == 2);
    ST_CHECK(cublasDswap(g_h, 1, dd, 1, de + 2, 1) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(download(dd, 1)[0] == 2 && download(de, 3)[2] == 4);
    cudaFree(dd); cudaFree(de);
    cudaFree(dx); cudaFree(dy);
}

ST_TEST(set_get_matrix_vector) {
    /* The documentation's first example: a matrix to the device with
       cublasSetMatrix, a row scaled there, and back with cublasGetMatrix. */
    const int M = 6, N = 5;
    std::vector<float> a(M * N), b(M * N, -1);
    for (int j = 0; j < N; ++j)
        for (int i = 0; i < M; ++i) a[i + j * M] = float(i * N + j + 1);
    float *d;
    cudaMalloc((void **)&d, M * N * sizeof(float));
    ST_CHECK(cublasSetMatrix(M, N, sizeof(float), a.data(), M, d, M) == CUBLAS_STATUS_SUCCESS);
    float al = 16;
    ST_CHECK(cublasSscal(g_h, N - 1, &al, d + 1 + M, M) == CUBLAS_STATUS_SUCCESS);   /* row 1 from column 1 on */
    ST_CHECK(cublasGetMatrix(M, N, sizeof(float), d, M, b.data(), M) == CUBLAS_STATUS_SUCCESS);
    for (int j = 0; j < N; ++j)
        for (int i = 0; i < M; ++i) ST_CHECK(b[i + j * M] == (i == 1 && j >= 1 ? 16 : 1) * a[i + j * M]);
    /* a sub-matrix: 3 x 2 from a host matrix of ld 6 into device ld 4 */
    float *e;
    cudaMalloc((void **)&e, 4 * 2 * sizeof(float));
    cudaMemset(e, 0, 4 * 2 * sizeof(float));
    ST_CHECK(cublasSetMatrix(3, 2, sizeof(float), a.data(), M, e, 4) == CUBLAS_STATUS_SUCCESS);
    std::vector<float> f = download(e, 8);
    ST_CHECK(f[0] == a[0] && f[2] == a[2] && f[3] == 0 && f[4] == a[M] && f[6] == a[M + 2] && f[7] == 0);
    /* vectors with increments */
    std::vector<float> v(4, 0);
    ST_CHECK(cublasGetVector(4, sizeof(float), d, M, v.data(), 1) == CUBLAS_STATUS_SUCCESS);  /* row 0 */
    for (int j = 0; j < 4; ++j) ST_CHECK(v[j] == a[j * M]);
    ST_CHECK(cublasSetVector(2, sizeof(float), v.data(), 2, e, 3) == CUBLAS_STATUS_SUCCESS);
    f = download(e, 8);
    ST_CHECK(f[0] == v[0] && f[3] == v[2]);
    /* asynchronous forms on a stream */
    cudaStream_t st;
    cudaStreamCreate(&st);
    ST_CHECK(cublasGetMatrixAsync(M, N, sizeof(float), d, M, b.data(), M, st) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cudaStreamSynchronize(st) == cudaSuccess && b[1 + M] == 16 * a[1 + M]);
    cudaStreamDestroy(st);
    /* the documented INVALID_VALUE cases */
    ST_CHECK(cublasSetVector(4, 4, v.data(), 0, e, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasSetVector(4, 0, v.data(), 1, e, 1) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasGetMatrix(-1, 2, 4, d, M, b.data(), M) == CUBLAS_STATUS_INVALID_VALUE);
    ST_CHECK(cublasGetMatrix(2, 2, 4, d, 0, b.data(), M) == CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(d); cudaFree(e);
}

#ifdef __CUEMU__
ST_TEST(counters) {
    /* A host-pointer-mode reduction queues one unit of work and waits. */
    std::vector<float> x(8, 1.0f);
    float *dx = upload(x), r;
    cuemu_counters c0, c1;
    cuemu_counters_get(&c0);
    cublasSdot(g_h, 8, dx, 1, dx, 1, &r);
    cuemu_counters_get(&c1);
    ST_CHECK(r == 8);
    ST_CHECK(c1.library_calls - c0.library_calls == 1);
    ST_CHECK(c1.host_waits - c0.host_waits >= 1);
    cudaFree(dx);
}
#endif

/* Last: device pointer mode with a host result pointer faults the device. */
ST_TEST(host_result_in_device_mode_faults) {
    std::vector<float> x(8, 1.0f);
    float *dx = upload(x);
    static float host_result;
    ST_CHECK(cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cublasSnrm2(g_h, 8, dx, 1, &host_result) == CUBLAS_STATUS_SUCCESS);
    ST_CHECK(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    ST_CHECK(cublasSetPointerMode(g_h, CUBLAS_POINTER_MODE_HOST) == CUBLAS_STATUS_SUCCESS);
    float r;
    ST_CHECK(cublasSdot(g_h, 8, dx, 1, dx, 1, &r) == CUBLAS_STATUS_EXECUTION_FAILED);
}

int main() {
    if (cublasCreate(&g_h) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL cublasCreate\n");
        return 1;
    }
    ST_RUN(axpy_scal);
    ST_RUN(dot_nrm2_amax_host_mode);
    ST_RUN(reductions_device_mode);
    ST_RUN(gemv);
    ST_RUN(copy_swap_asum_amin);
    ST_RUN(set_get_matrix_vector);
#ifdef __CUEMU__
    ST_RUN(counters);
#endif
    ST_RUN(host_result_in_device_mode_faults);
    cublasDestroy(g_h);
    return st_summary();
}
