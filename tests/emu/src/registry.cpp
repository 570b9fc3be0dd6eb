/* registry.cpp - kernels and symbols registered by nvcc-emu's rewrite
   (cuemu/registry.h). Stub until issue 24's runtime work fills it. */
#include <cuemu/registry.h>

namespace cuemu {
int kernel_register(const void *, const KernelInfo &) { return 0; }
int symbol_register(void *, size_t, const char *, int) { return 0; }
void *symbol_resolve(void *shadow) { return shadow; }
} /* namespace cuemu */
