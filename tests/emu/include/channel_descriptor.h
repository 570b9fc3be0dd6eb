/* channel_descriptor.h (cuemu) - cudaCreateChannelDesc<T>(): the channel
   format of element type T (CUDA Runtime API, "C++ API Routines"): bits per
   component x, y, z, w and their kind; a type it does not know gives
   cudaChannelFormatKindNone with no bits, as the toolkit's template does. */
#ifndef CUEMU_CHANNEL_DESCRIPTOR_H
#define CUEMU_CHANNEL_DESCRIPTOR_H
#include "cuda_runtime_api.h"
#if defined(__cplusplus)

template <class T> static inline cudaChannelFormatDesc cudaCreateChannelDesc(void) {
    return cudaCreateChannelDesc(0, 0, 0, 0, cudaChannelFormatKindNone);
}
#define CUEMU_CHANNEL(T, n, bits, kind)                                                                              \
    template <> inline cudaChannelFormatDesc cudaCreateChannelDesc<T>(void) {                                      \
        return cudaCreateChannelDesc(bits, n > 1 ? bits : 0, n > 2 ? bits : 0, n > 3 ? bits : 0, kind);             \
    }
#define CUEMU_CHANNELS(S, V, bits, kind)                                                                             \
    CUEMU_CHANNEL(S, 1, bits, kind) CUEMU_CHANNEL(V##1, 1, bits, kind) CUEMU_CHANNEL(V##2, 2, bits, kind)            \
    CUEMU_CHANNEL(V##4, 4, bits, kind)
CUEMU_CHANNEL(char, 1, 8, ((char)-1 < 0 ? cudaChannelFormatKindSigned : cudaChannelFormatKindUnsigned))
CUEMU_CHANNELS(signed char, char, 8, cudaChannelFormatKindSigned)
CUEMU_CHANNELS(unsigned char, uchar, 8, cudaChannelFormatKindUnsigned)
CUEMU_CHANNELS(short, short, 16, cudaChannelFormatKindSigned)
CUEMU_CHANNELS(unsigned short, ushort, 16, cudaChannelFormatKindUnsigned)
CUEMU_CHANNELS(int, int, 32, cudaChannelFormatKindSigned)
CUEMU_CHANNELS(unsigned int, uint, 32, cudaChannelFormatKindUnsigned)
CUEMU_CHANNELS(float, float, 32, cudaChannelFormatKindFloat)
#undef CUEMU_CHANNELS
#undef CUEMU_CHANNEL

#endif
#endif
