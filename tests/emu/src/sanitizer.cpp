/* sanitizer.cpp - the emulator's compute-sanitizer tools (stub: filled by
   the sanitizer work of issue 24). */
#include "internal.h"

namespace cuemu {
void san_alloc(const void *, size_t, int) {}
void san_free(const void *) {}
void san_written(const void *, size_t) {}
} /* namespace cuemu */
