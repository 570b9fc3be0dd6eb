/* internal.h - what the emulated libraries (cuBLAS, cuBLASLt, cuDNN) may use
   of the emulated CUDA runtime. Private to tests/emu/src; C++17.

   The model (see runtime.cpp for the details):
   - Device memory lives in host address space but is mapped PROT_NONE except
     while queued device work runs, so host code that dereferences a device
     pointer faults as it would on a GPU. Inside work queued with enqueue()
     every live device allocation is readable and writable.
   - Device work is queued per stream and runs, in issue order, only when the
     program waits (a synchronize, a blocking copy, ...). Library calls check
     their arguments at call time (returning the library's status), then
     enqueue the computation; the computation checks the memory it touches
     with device_range() and, where that fails, calls fault() instead of
     touching it, as a GPU kernel would fault with an illegal address.
   - Errors that a kernel would raise are sticky for the device: once set,
     every runtime call returns them, and libraries should fail their calls
     (see sticky_error()).
*/
#ifndef CUEMU_INTERNAL_H
#define CUEMU_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <functional>
#include <string>

namespace cuemu {

/* >>devices */
struct Profile {
    int major, minor;          /* compute capability */
    size_t total_mem;          /* bytes of device memory */
    int sms;                   /* multiprocessors */
    int max_threads_per_block; /* 1024 */
    int max_threads_per_sm;
    int max_blocks_per_sm;
    size_t smem_per_block;        /* 48 KiB: the default limit per block */
    size_t smem_per_block_optin;  /* the most a kernel may opt in to */
    size_t smem_per_sm;
    int regs_per_block, regs_per_sm;
    int clock_khz, mem_clock_khz, bus_width_bits;
    int l2_bytes;
    const char *name;
};
int device_count();                /* 0 when GPUDL_EMU_DEVICE=none */
int current_device();              /* the calling host thread's device */
const Profile &profile(int dev);

/* >>errors */
/* cudaSuccess, or the sticky error of device dev (dev < 0: the current one).
   Library calls should return their "execution failed" status when this is
   not cudaSuccess. */
cudaError_t sticky_error(int dev = -1);
/* Called from queued work: the device raises err (cudaErrorIllegalAddress,
   cudaErrorMisalignedAddress, ...), which becomes sticky; the message goes
   to stderr prefixed with "cuemu: ". Safe to call from any worker thread. */
void fault(cudaError_t err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* >>memory */
enum MemKind { MEM_UNKNOWN = 0, MEM_DEVICE, MEM_PINNED, MEM_MANAGED, MEM_FREED };
struct Region {
    MemKind kind;
    int device;      /* owning device (MEM_DEVICE, MEM_MANAGED), else -1 */
    char *base;      /* start of the allocation */
    size_t size;     /* bytes the program asked for */
};
/* What p points into. MEM_UNKNOWN: ordinary host memory (stack, heap,
   globals) or garbage. MEM_FREED: inside an allocation already freed. */
MemKind classify(const void *p, Region *out = nullptr);
/* True when [p, p + bytes) lies wholly inside one allocation that device dev
   may access (its own device memory, pinned host memory, managed memory).
   bytes == 0 is always true. Otherwise false, with a one-line reason in
   *why (e.g. "0x7f... is host memory", "8 bytes past the end of a 4096-byte
   allocation") when why is not null. */
bool device_range(int dev, const void *p, size_t bytes, std::string *why = nullptr);
/* Device memory a library keeps for itself (a handle's default workspace):
   real device memory of device dev, not counted as the program's
   cudaMalloc/cudaFree calls and not part of their leak checks. */
void *internal_alloc(int dev, size_t bytes);
void internal_free(void *p);
/* A live CUDA array's memory (texture.cpp), for cudaMemcpy3D: layers of
   height rows (1 for a 1-D array) of pitch bytes, width elements of elem
   bytes a row. False for a handle that is not a live array. */
struct ArrayView {
    char *data;
    size_t width, height, layers, elem, pitch;
};
bool array_view(cudaArray_const_t a, ArrayView *v);

/* >>streams */
/* Resolves a stream handle: 0 / cudaStreamLegacy / cudaStreamPerThread /
   one from cudaStreamCreate*. Returns cudaSuccess and its device, or
   cudaErrorInvalidResourceHandle for a destroyed or foreign handle. */
cudaError_t stream_device(cudaStream_t s, int *dev);
/* Queues fn on stream s as one unit of device work named name (for
   diagnostics). fn runs later on some host thread, with device memory
   accessible; it must not call the CUDA runtime API. If the device is in a
   sticky error state when the work would run, it is skipped. Counts as one
   library call in the counters (cuemu.h). */
cudaError_t enqueue(cudaStream_t s, const char *name, std::function<void()> fn);

/* >>workers */
/* Runs fn(begin, end) over [0, n) in chunks of at least grain, on the
   emulator's worker threads (the caller helps), and returns when all are
   done. For heavy arithmetic inside queued work (GEMM, convolution). */
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

/* >>counters */
/* A library API call that queues no device work (descriptor setup, handle
   creation): counted as library_api_calls only. */
void count_library_api_call();
/* A CUDA runtime API call made by the program (cuemu_counters.runtime_api_calls):
   one per outermost cuda* entry point and per <<<>>> launch, which nvcc lowers to
   cudaLaunchKernel (CUDA C++ Programming Guide, "Execution Configuration"). Calls
   that one entry point makes to another count once. */
struct ApiCall {
    ApiCall();
    ~ApiCall();
};
#define CUEMU_API_CALL() ::cuemu::ApiCall cuemu_api_call_scope_

/* >>sanitizer (sanitizer.cpp, the compute-sanitizer tools of
   tests/emu/compute-sanitizer): what device memory holds. The runtime
   reports every device allocation and free, and every write that is not a
   kernel's (copies, memsets, library calls), so that initcheck knows which
   bytes were written and memcheck's leak check knows what is still live.
   All are cheap no-ops when no tool runs. */
void san_alloc(const void *p, size_t bytes, int device);   /* fresh device memory: uninitialised */
void san_free(const void *p);
void san_written(const void *p, size_t bytes);              /* bytes now hold defined values */

} /* namespace cuemu */

#endif
