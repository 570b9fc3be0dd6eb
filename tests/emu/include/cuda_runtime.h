/* cuda_runtime.h (cuemu) - the CUDA runtime as a program sees it: the C
   API, the vector helpers, the C++ conveniences of the real header
   (typed cudaMalloc, symbol copies, typed launches, occupancy helpers), and
   in .cu files everything a kernel uses (cuemu/kernel.h). */
#ifndef CUEMU_CUDA_RUNTIME_H
#define CUEMU_CUDA_RUNTIME_H
#define __CUDA_RUNTIME_H__   /* the toolkit header's guard, which programs test */

#include "cuda_runtime_api.h"
#include "vector_functions.h"
#include "driver_functions.h"
#include "channel_descriptor.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#if defined(__cplusplus)

#if defined(__CUDACC__)
#  include "cuemu/kernel.h"
#  if __has_include("cuemu/device_math.h")
#    include "cuemu/device_math.h"
#  endif
#endif

#include <type_traits>

template <class T> static inline cudaError_t cudaMalloc(T **devPtr, size_t size) {
    return ::cudaMalloc((void **)(void *)devPtr, size);
}
template <class T> static inline cudaError_t cudaMallocHost(T **ptr, size_t size, unsigned int flags = 0) {
    return ::cudaHostAlloc((void **)(void *)ptr, size, flags);
}
template <class T> static inline cudaError_t cudaHostAlloc(T **ptr, size_t size, unsigned int flags) {
    return ::cudaHostAlloc((void **)(void *)ptr, size, flags);
}
template <class T> static inline cudaError_t cudaHostGetDevicePointer(T **pDevice, void *pHost, unsigned int flags) {
    return ::cudaHostGetDevicePointer((void **)(void *)pDevice, pHost, flags);
}
template <class T> static inline cudaError_t cudaMallocManaged(T **devPtr, size_t size, unsigned int flags = cudaMemAttachGlobal) {
    return ::cudaMallocManaged((void **)(void *)devPtr, size, flags);
}
template <class T> static inline cudaError_t cudaMallocPitch(T **devPtr, size_t *pitch, size_t width, size_t height) {
    return ::cudaMallocPitch((void **)(void *)devPtr, pitch, width, height);
}
template <class T> static inline cudaError_t cudaMallocAsync(T **devPtr, size_t size, cudaStream_t stream) {
    return ::cudaMallocAsync((void **)(void *)devPtr, size, stream);
}
static inline cudaError_t cudaEventCreate(cudaEvent_t *event, unsigned int flags) { return ::cudaEventCreateWithFlags(event, flags); }

/* Symbols: the C++ forms know the variable's size. */
template <class T>
static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count = sizeof(T), size_t offset = 0,
                                             enum cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
    if (offset > sizeof(T) || count > sizeof(T) - offset) return cudaErrorInvalidValue;
    return ::cudaMemcpyToSymbol((const void *)&symbol, src, count, offset, kind);
}
template <class T>
static inline cudaError_t cudaMemcpyToSymbolAsync(const T &symbol, const void *src, size_t count = sizeof(T), size_t offset = 0,
                                                  enum cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = 0) {
    if (offset > sizeof(T) || count > sizeof(T) - offset) return cudaErrorInvalidValue;
    return ::cudaMemcpyToSymbolAsync((const void *)&symbol, src, count, offset, kind, stream);
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count = sizeof(T), size_t offset = 0,
                                               enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    if (offset > sizeof(T) || count > sizeof(T) - offset) return cudaErrorInvalidValue;
    return ::cudaMemcpyFromSymbol(dst, (const void *)&symbol, count, offset, kind);
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const T &symbol, size_t count = sizeof(T), size_t offset = 0,
                                                    enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t stream = 0) {
    if (offset > sizeof(T) || count > sizeof(T) - offset) return cudaErrorInvalidValue;
    return ::cudaMemcpyFromSymbolAsync(dst, (const void *)&symbol, count, offset, kind, stream);
}
template <class T> static inline cudaError_t cudaGetSymbolAddress(void **devPtr, const T &symbol) {
    return ::cudaGetSymbolAddress(devPtr, (const void *)&symbol);
}
template <class T> static inline cudaError_t cudaGetSymbolSize(size_t *size, const T &symbol) {
    void *addr = nullptr;
    cudaError_t e = ::cudaGetSymbolAddress(&addr, (const void *)&symbol);
    if (e == cudaSuccess && size) *size = sizeof(T);
    return e;
}

#if defined(__CUDACC__)
#ifndef CUEMU_TU_ARCHS
#  define CUEMU_TU_ARCHS nullptr
#endif
/* Launches through a kernel pointer: the emulator needs its parameter types. */
template <class... P>
static inline cudaError_t cudaLaunchKernel(void (*func)(P...), dim3 gridDim, dim3 blockDim, void **args = nullptr,
                                           size_t sharedMem = 0, cudaStream_t stream = 0) {
    return cuemu::launch_from_array(func, gridDim, blockDim, args, sharedMem, cuemu_launch_stream(stream), 0, "(cudaLaunchKernel)",
                                    CUEMU_TU_ARCHS);
}
template <class... P>
static inline cudaError_t cudaLaunchCooperativeKernel(void (*func)(P...), dim3 gridDim, dim3 blockDim, void **args = nullptr,
                                                      size_t sharedMem = 0, cudaStream_t stream = 0) {
    return cuemu::launch_from_array(func, gridDim, blockDim, args, sharedMem, cuemu_launch_stream(stream), 1,
                                    "(cudaLaunchCooperativeKernel)", CUEMU_TU_ARCHS);
}
template <class... ExpTypes, class... ActTypes>
static inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(ExpTypes...), ActTypes &&...args) {
    if (!config) return cudaErrorInvalidValue;
    if (cudaError_t ce = cuemu::launch_attrs_check(config, (const void *)kernel)) return ce;
    int coop = 0;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == cudaLaunchAttributeCooperative) coop = config->attrs[i].val.cooperative;
    cuemu::Kernel<ExpTypes...> k{kernel, cuemu::LaunchSite{"(cudaLaunchKernelEx)", "(cudaLaunchKernelEx)", 0, CUEMU_TU_ARCHS},
                                 config->gridDim, config->blockDim, config->dynamicSmemBytes,
                                 cuemu_launch_stream(config->stream), coop};
    return k(std::forward<ActTypes>(args)...);
}
#endif

/* The graph call forms CUDA 13's cuda_runtime.h keeps for C++ ("convenience
   function to avoid source breakage"): cudaGraphInstantiate with an error
   node and a log buffer (ignored; flags 0), cudaGraphExecUpdate with an
   error node and a result instead of cudaGraphExecUpdateResultInfo. */
static inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, cudaGraphNode_t *pErrorNode,
                                               char *pLogBuffer, size_t bufferSize) {
    (void)pErrorNode;
    (void)pLogBuffer;
    (void)bufferSize;
    return ::cudaGraphInstantiate(pGraphExec, graph, 0);
}
#if defined(__CUDACC__)   /* as in the toolkit's header: .cu files only */
static inline cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph, cudaGraphNode_t *hErrorNode_out,
                                              enum cudaGraphExecUpdateResult *updateResult_out) {
    cudaGraphExecUpdateResultInfo info;
    cudaError_t status = ::cudaGraphExecUpdate(hGraphExec, hGraph, &info);
    if (hErrorNode_out) *hErrorNode_out = info.errorNode;
    if (updateResult_out) *updateResult_out = info.result;
    return status;
}
#endif

template <class T> static inline cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, T *entry) {
    return ::cudaFuncGetAttributes(attr, (const void *)entry);
}
template <class T> static inline cudaError_t cudaFuncSetAttribute(T *entry, enum cudaFuncAttribute attr, int value) {
    return ::cudaFuncSetAttribute((const void *)entry, attr, value);
}
template <class T> static inline cudaError_t cudaFuncSetCacheConfig(T *func, enum cudaFuncCache cacheConfig) {
    return ::cudaFuncSetCacheConfig((const void *)func, cacheConfig);
}
template <class T>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, T func, int blockSize, size_t dynamicSMemSize) {
    return ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, (const void *)func, blockSize, dynamicSMemSize, 0);
}
/* The block size with the highest occupancy (the smallest such), and the
   grid that fills the device at that size. */
template <class T>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, T func, size_t dynamicSMemSize = 0,
                                                             int blockSizeLimit = 0) {
    if (!minGridSize || !blockSize) return cudaErrorInvalidValue;
    int dev = 0, sms = 0, maxt = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (!e) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (!e) e = cudaDeviceGetAttribute(&maxt, cudaDevAttrMaxThreadsPerBlock, dev);
    if (e) return e;
    if (blockSizeLimit <= 0 || blockSizeLimit > maxt) blockSizeLimit = maxt;
    int best = 0, best_bs = 32;
    for (int bs = 32; bs <= blockSizeLimit; bs += 32) {
        int n = 0;
        e = ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, (const void *)func, bs, dynamicSMemSize, 0);
        if (e) return e;
        if (n * bs > best) { best = n * bs; best_bs = bs; }
    }
    *blockSize = best_bs;
    *minGridSize = sms * (best / best_bs);
    return cudaSuccess;
}

#endif /* __cplusplus */

#endif
