/* sanitizer.h - between the device code's instrumentation (access.cpp and
   exec.cpp: every load, store and atomic of a kernel, every barrier and warp
   exchange) and the compute-sanitizer tools (sanitizer.cpp). Private to
   tests/emu/src. Every call below is made on the host thread that runs the
   kernel thread concerned; the identity of that CUDA thread is in the
   builtins (threadIdx, blockIdx, blockDim, gridDim of cuemu/kernel.h).
   A worker runs one block at a time, from san_block_begin to san_block_end. */
#ifndef CUEMU_SANITIZER_H
#define CUEMU_SANITIZER_H

#include "internal.h"
#include <stddef.h>
#include <stdint.h>

namespace cuemu {

enum SanTool { SAN_NONE = 0, SAN_MEMCHECK, SAN_RACECHECK, SAN_INITCHECK, SAN_SYNCCHECK };
/* The tool in use, from CUEMU_SANITIZER (set by tests/emu/compute-sanitizer);
   read once at start-up. */
int san_tool();

/* A grid starts / ends (inside its unit of device work). */
void san_kernel_begin(const char *kernel, const char *file, int line, dim3 grid, dim3 block, int device);
void san_kernel_end();
/* This worker starts / ends a block. smem: the block's shared-memory window
   (static variables first, then dynamic_bytes of dynamic shared memory at
   dynamic). */
void san_block_begin(char *smem, size_t smem_bytes, char *dynamic, size_t dynamic_bytes);
void san_block_end();
/* A static __shared__ variable of the running kernel (for reports). */
void san_shared_var(size_t offset, size_t size, const char *what);
/* One access by the running CUDA thread. pc: the instruction in the
   kernel's code (for the source line); atomic: an atomic operation. */
void san_access(const void *addr, size_t size, bool write, bool atomic, const void *pc);
/* Every thread of the block has passed a block barrier (__syncthreads and
   friends, cooperative groups' block sync): accesses before it happen
   before accesses after it. */
void san_block_barrier();
/* The lanes of mask in warp have synchronised (__syncwarp, a shuffle, a
   vote): their accesses before it happen before their accesses after it. */
void san_warp_sync(unsigned warp, unsigned mask);
/* A synchronisation error the runtime found (synccheck's kind of report:
   a barrier not every thread reached, a shuffle whose mask names lanes that
   do not take part). Returns true when the tool reported it. */
bool san_sync_error(const char *what, const void *pc);
/* The device is about to fault on the running thread's access (memcheck
   reports it, with the thread, block and pc): called by the
   instrumentation just before it raises the fault for an out-of-bounds
   shared access or a misaligned address (bad = SAN_BAD_BOUNDS,
   SAN_BAD_ALIGN; size: the access's, or the alignment asked for), and by
   the fault handler for an address the device cannot reach
   (SAN_BAD_FAULT: size 0, pc the faulting instruction). */
enum SanBad { SAN_BAD_BOUNDS = 1, SAN_BAD_ALIGN, SAN_BAD_FAULT };
void san_bad_access(const void *addr, size_t size, bool write, int bad, const void *pc);
/* cudaDeviceReset destroys device's context (called before its
   allocations are freed): memcheck's --leak-check full lists the ones still
   live there, as at exit. */
void san_device_reset(int device);

} /* namespace cuemu */

#endif
