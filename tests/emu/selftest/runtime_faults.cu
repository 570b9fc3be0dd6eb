/* Faults, device profiles and the errors they must produce, each in a child
   process (a sticky error ends the child's use of the device, as on a GPU).
   The parent never touches CUDA, so each child starts the runtime afresh
   with its own GPUDL_EMU_DEVICE. */
#include <cuda_runtime.h>
#include <assert.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "selftest.h"

/* Runs body in a child with GPUDL_EMU_DEVICE=spec (NULL: the default);
   returns its exit status, or 128 + signal. The child's stderr goes to
   /dev/null unless ST_VERBOSE is set. */
static int in_child(const char *spec, int (*body)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (spec) setenv("GPUDL_EMU_DEVICE", spec, 1);
        else unsetenv("GPUDL_EMU_DEVICE");
        if (!getenv("ST_VERBOSE")) freopen("/dev/null", "w", stderr);
        _exit(body());
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A child's result: 0 = as expected; 10 + n = check n failed. */
#define EXPECT(n, cond) do { if (!(cond)) return 10 + (n); } while (0)

__global__ void write_at(float *p, long i) { p[i] = 1.0f; }
__global__ void read_into(const float *p, float *out) { *out = *p; }

static int sticky_illegal_address(void) {
    float *d;
    EXPECT(1, cudaMalloc(&d, 1000 * sizeof(float)) == cudaSuccess);
    write_at<<<1, 1>>>(d, 1000 + 1024);   /* one page past the end */
    EXPECT(2, cudaGetLastError() == cudaSuccess);   /* the launch itself is fine */
    EXPECT(3, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    EXPECT(4, cudaMalloc(&d, 16) == cudaErrorIllegalAddress);        /* every later call fails */
    EXPECT(5, cudaGetLastError() == cudaErrorIllegalAddress);
    EXPECT(6, cudaGetLastError() == cudaErrorIllegalAddress);         /* and it cannot be cleared */
    EXPECT(7, cudaMemset(d, 0, 4) == cudaErrorIllegalAddress);
    return 0;
}

static int host_pointer_into_kernel(void) {
    float host[4];
    write_at<<<1, 1>>>(host, 0);
    EXPECT(1, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    return 0;
}

static int freed_pointer_into_kernel(void) {
    float *d, *out;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess && cudaMalloc(&out, 4) == cudaSuccess);
    EXPECT(2, cudaFree(d) == cudaSuccess);
    read_into<<<1, 1>>>(d, out);
    EXPECT(3, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    return 0;
}

static int null_pointer_into_kernel(void) {
    write_at<<<1, 32>>>((float *)(uintptr_t)0x10, 0);
    EXPECT(1, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    return 0;
}

__global__ void misaligned(float *p) { p[0] = 1.0f; }
static int misaligned_pointer(void) {
    char *d;
    EXPECT(1, cudaMalloc(&d, 64) == cudaSuccess);
    misaligned<<<1, 1>>>((float *)(d + 2));
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorMisalignedAddress);
    return 0;
}

__global__ void early_exit_then_barrier(float *out) {
    __shared__ float s[64];
    if (threadIdx.x >= 32) return;
    s[threadIdx.x] = 1;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
/* Threads that return before a __syncthreads() release it (the PTX ISA's
   exit): the others go on. The emulator warns; the result is right. */
static int barrier_after_early_exit(void) {
    float *d, h[32];
    EXPECT(1, cudaMalloc(&d, 256) == cudaSuccess);
    early_exit_then_barrier<<<1, 64>>>(d);
    EXPECT(2, cudaDeviceSynchronize() == cudaSuccess);
    EXPECT(3, cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess && h[31] == 1.0f);
    return 0;
}

__global__ void divergent_barriers(float *out) {
    if (threadIdx.x % 2) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}
static int barriers_at_different_calls(void) {
    float *d;
    EXPECT(1, cudaMalloc(&d, 256) == cudaSuccess);
    divergent_barriers<<<1, 64>>>(d);
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    return 0;
}

__global__ void bad_mask(int *out) { out[threadIdx.x] = __shfl_sync(0x1u, 5, 0); }
static int shuffle_mask_without_the_caller(void) {
    int *d;
    EXPECT(1, cudaMalloc(&d, 256) == cudaSuccess);
    bad_mask<<<1, 32>>>(d);
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    return 0;
}

__global__ void half_warp_shuffles(int *out) {
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);   /* lanes 16-31 never come */
}
static int shuffle_waiting_for_absent_lanes(void) {
    int *d;
    EXPECT(1, cudaMalloc(&d, 256) == cudaSuccess);
    half_warp_shuffles<<<1, 64>>>(d);
    /* lanes 16-31 exit instead: the exchange completes among the lanes still there (the
       Programming Guide names only non-exited lanes) */
    EXPECT(2, cudaDeviceSynchronize() == cudaSuccess);
    return 0;
}

__global__ void asserting(int *p) { assert(p[threadIdx.x] == 0); }
static int device_assert(void) {
    int *d;
    EXPECT(1, cudaMalloc(&d, 128) == cudaSuccess && cudaMemset(d, 0, 128) == cudaSuccess);
    asserting<<<1, 32>>>(d);
    EXPECT(2, cudaDeviceSynchronize() == cudaSuccess);
    EXPECT(3, cudaMemset(d + 3, 1, 1) == cudaSuccess);
    asserting<<<1, 32>>>(d);
    EXPECT(4, cudaDeviceSynchronize() == cudaErrorAssert);
    return 0;
}

__device__ __noinline__ int deep(int n, volatile char *sink) {
    volatile char pad[4096];
    pad[n % 4096] = (char)n;
    int r = n ? deep(n - 1, sink) : 0;   /* the frame stays live across the call */
    *sink = pad[(n * 7) % 4096];
    return r + 1;
}
__global__ void recurse(int n, int *out) {
    char sink;
    *out = deep(n, &sink);
}
static int stack_overflow(void) {
    int *d;
    EXPECT(1, cudaMalloc(&d, 4) == cudaSuccess);
    recurse<<<1, 1>>>(100000, d);
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    return 0;
}

__global__ void dyn_overrun(float *out, int n) {
    extern __shared__ float sm[];
    sm[n] = 1.0f;
    __syncthreads();
    out[0] = sm[0];
}
static int dynamic_shared_overrun(void) {
    float *d;
    EXPECT(1, cudaMalloc(&d, 4) == cudaSuccess);
    dyn_overrun<<<1, 1, 1024 * sizeof(float)>>>(d, 1024 + 2048);   /* two pages past */
    EXPECT(2, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    return 0;
}

static int host_touches_device_memory(void) {
    float *d;
    if (cudaMalloc(&d, 64) != cudaSuccess) return 1;
    volatile float v = d[0];   /* a GPU's memory is not the host's: this faults */
    (void)v;
    return 2;
}

static int no_device(void) {
    int n = -1;
    EXPECT(1, cudaGetDeviceCount(&n) == cudaErrorNoDevice && n == 0);
    void *p;
    EXPECT(2, cudaMalloc(&p, 4) == cudaErrorNoDevice);
    return 0;
}

static int no_driver(void) {
    int n = -1, v = -1;
    EXPECT(1, cudaGetDeviceCount(&n) == cudaErrorInsufficientDriver);
    EXPECT(2, cudaDriverGetVersion(&v) == cudaSuccess && v == 0);
    return 0;
}

static int small_device(void) {
    size_t freeb, total;
    EXPECT(1, cudaMemGetInfo(&freeb, &total) == cudaSuccess && total == (1ull << 30));
    void *a, *b;
    EXPECT(2, cudaMalloc(&a, 600u << 20) == cudaSuccess);
    EXPECT(3, cudaMalloc(&b, 600u << 20) == cudaErrorMemoryAllocation);
    EXPECT(4, cudaFree(a) == cudaSuccess);
    EXPECT(5, cudaMalloc(&b, 600u << 20) == cudaSuccess);
    cudaDeviceProp p;
    EXPECT(6, cudaGetDeviceProperties(&p, 0) == cudaSuccess && p.major == 9 && p.totalGlobalMem == (1ull << 30));
    return 0;
}

static int two_devices(void) {
    int n = 0;
    EXPECT(1, cudaGetDeviceCount(&n) == cudaSuccess && n == 2);
    cudaDeviceProp p;
    EXPECT(2, cudaGetDeviceProperties(&p, 1) == cudaSuccess && p.major == 8 && p.minor == 0);
    float *on1, *out0;
    EXPECT(3, cudaSetDevice(1) == cudaSuccess && cudaMalloc(&on1, 64) == cudaSuccess);
    cudaStream_t s1;
    EXPECT(4, cudaStreamCreate(&s1) == cudaSuccess);
    EXPECT(5, cudaSetDevice(0) == cudaSuccess && cudaMalloc(&out0, 4) == cudaSuccess);
    write_at<<<1, 1, 0, s1>>>(on1, 0);   /* a stream of device 1 while device 0 is current */
    EXPECT(6, cudaGetLastError() == cudaErrorInvalidResourceHandle);
    EXPECT(7, cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess);
    read_into<<<1, 1>>>(on1, out0);    /* with peer access, device 0 reads device 1's memory */
    EXPECT(8, cudaDeviceSynchronize() == cudaSuccess);
    EXPECT(9, cudaDeviceDisablePeerAccess(1) == cudaSuccess);
    read_into<<<1, 1>>>(on1, out0);
    EXPECT(10, cudaDeviceSynchronize() == cudaErrorIllegalAddress);
    EXPECT(11, cudaSetDevice(1) == cudaSuccess && cudaMemset(on1, 0, 4) == cudaSuccess);   /* device 1 is fine */
    return 0;
}

static int bad_profile_spec(void) {
    int n = -1;
    EXPECT(1, cudaGetDeviceCount(&n) == cudaErrorNoDevice);
    return 0;
}

/* want -1: the child must die of the fault (SIGSEGV; under AddressSanitizer
   its report and exit status 1). */
#define CHILD(name, spec, want)                                                                        \
    ST_TEST(name##_test) {                                                                             \
        int rc = in_child(spec, name);                                                                 \
        int ok_ = (want) >= 0 ? rc == (want) : (rc == 128 + SIGSEGV || rc == 1);                        \
        ST_CHECKF(ok_, "child exited with %d, want %d (10 + n: check n failed)", rc, (want));           \
    }

CHILD(sticky_illegal_address, NULL, 0)
CHILD(host_pointer_into_kernel, NULL, 0)
CHILD(freed_pointer_into_kernel, NULL, 0)
CHILD(null_pointer_into_kernel, NULL, 0)
CHILD(misaligned_pointer, NULL, 0)
CHILD(barrier_after_early_exit, NULL, 0)
CHILD(barriers_at_different_calls, NULL, 0)
CHILD(shuffle_mask_without_the_caller, NULL, 0)
CHILD(shuffle_waiting_for_absent_lanes, NULL, 0)
CHILD(device_assert, NULL, 0)
CHILD(stack_overflow, NULL, 0)
CHILD(dynamic_shared_overrun, NULL, 0)
CHILD(host_touches_device_memory, NULL, -1)
CHILD(no_device, "none", 0)
CHILD(small_device, "9.0:1G", 0)
CHILD(two_devices, "9.0:2G,8.0:1G", 0)
CHILD(bad_profile_spec, "nine", 0)

ST_TEST(no_driver_test) {
    setenv("GPUDL_EMU_DRIVER", "none", 1);
    int rc = in_child(NULL, no_driver);
    unsetenv("GPUDL_EMU_DRIVER");
    ST_CHECKF(rc == 0, "child exited with %d", rc);
}

int main(void) {
    ST_RUN(sticky_illegal_address_test);
    ST_RUN(host_pointer_into_kernel_test);
    ST_RUN(freed_pointer_into_kernel_test);
    ST_RUN(null_pointer_into_kernel_test);
    ST_RUN(misaligned_pointer_test);
    ST_RUN(barrier_after_early_exit_test);
    ST_RUN(barriers_at_different_calls_test);
    ST_RUN(shuffle_mask_without_the_caller_test);
    ST_RUN(shuffle_waiting_for_absent_lanes_test);
    ST_RUN(device_assert_test);
    ST_RUN(stack_overflow_test);
    ST_RUN(dynamic_shared_overrun_test);
    ST_RUN(host_touches_device_memory_test);
    ST_RUN(no_device_test);
    ST_RUN(no_driver_test);
    ST_RUN(small_device_test);
    ST_RUN(two_devices_test);
    ST_RUN(bad_profile_spec_test);
    return st_summary();
}
