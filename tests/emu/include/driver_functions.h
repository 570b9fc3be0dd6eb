/* driver_functions.h - the Runtime API's helpers that build the 3-D memory
   descriptions (CUDA Runtime API, "Data types": make_cudaPitchedPtr,
   make_cudaPos, make_cudaExtent). C and C++. */
#ifndef CUEMU_DRIVER_FUNCTIONS_H
#define CUEMU_DRIVER_FUNCTIONS_H
#include "driver_types.h"

/* a pitched pointer: ptr, pitch (bytes of a row), xsz (logical width), ysz (logical height) */
static __inline__ struct cudaPitchedPtr make_cudaPitchedPtr(void *d, size_t p, size_t xsz, size_t ysz) {
    struct cudaPitchedPtr s;
    s.ptr = d;
    s.pitch = p;
    s.xsize = xsz;
    s.ysize = ysz;
    return s;
}
static __inline__ struct cudaPos make_cudaPos(size_t x, size_t y, size_t z) {
    struct cudaPos p;
    p.x = x;
    p.y = y;
    p.z = z;
    return p;
}
/* w: bytes for linear memory, elements for a CUDA array; h, d: rows and slices */
static __inline__ struct cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) {
    struct cudaExtent e;
    e.width = w;
    e.height = h;
    e.depth = d;
    return e;
}
#endif
