/* sanitizer.cpp - the emulator's compute-sanitizer tools (stub: filled by
   the sanitizer work of issue 24). */
#include "sanitizer.h"

namespace cuemu {
void san_alloc(const void *, size_t, int) {}
void san_free(const void *) {}
void san_written(const void *, size_t) {}
int san_tool() { return SAN_NONE; }
void san_kernel_begin(const char *, const char *, int, dim3, dim3, int) {}
void san_kernel_end() {}
void san_block_begin(char *, size_t, char *, size_t) {}
void san_block_end() {}
void san_shared_var(size_t, size_t, const char *) {}
void san_access(const void *, size_t, bool, bool, const void *) {}
void san_block_barrier() {}
void san_warp_sync(unsigned, unsigned) {}
bool san_sync_error(const char *, const void *) { return false; }
} /* namespace cuemu */
