/* cuda_runtime_api.h (cuemu) - the CUDA runtime's C API, as far as the
   emulator implements it, with CUDA 13.0's signatures (held against the
   toolkit by tests/emu/selftest/abi_check.py). Usable from C and C++. */
#ifndef CUEMU_CUDA_RUNTIME_API_H
#define CUEMU_CUDA_RUNTIME_API_H

#define CUDART_VERSION 13000
#define __CUDART_API_VERSION CUDART_VERSION

#include "crt/host_defines.h"
#include "builtin_types.h"
#include "cuda_device_runtime_api.h"

#if defined(__cplusplus)
#  define __dv(v) = v
extern "C" {
#else
#  define __dv(v)
#endif

/* >>device */
extern cudaError_t cudaGetDeviceCount(int *count);
extern cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
extern cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
extern cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags);
extern cudaError_t cudaSetDevice(int device);
extern cudaError_t cudaGetDevice(int *device);
extern cudaError_t cudaSetDeviceFlags(unsigned int flags);
extern cudaError_t cudaGetDeviceFlags(unsigned int *flags);
extern cudaError_t cudaDeviceSynchronize(void);
extern cudaError_t cudaDeviceReset(void);
extern cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value);
extern cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit);
extern cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig);
extern cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig);
extern cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
extern cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device);
extern cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
extern cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
extern cudaError_t cudaDeviceDisablePeerAccess(int peerDevice);

/* >>errors */
extern cudaError_t cudaGetLastError(void);
extern cudaError_t cudaPeekAtLastError(void);
extern const char *cudaGetErrorName(cudaError_t error);
extern const char *cudaGetErrorString(cudaError_t error);

/* >>version */
extern cudaError_t cudaDriverGetVersion(int *driverVersion);
extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);

/* >>stream */
typedef void (CUDART_CB *cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);
extern cudaError_t cudaStreamCreate(cudaStream_t *pStream);
extern cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
extern cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority);
extern cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority);
extern cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags);
extern cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device);
extern cudaError_t cudaStreamDestroy(cudaStream_t stream);
extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags __dv(0));
extern cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags);
extern cudaError_t cudaStreamSynchronize(cudaStream_t stream);
extern cudaError_t cudaStreamQuery(cudaStream_t stream);
extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);

/* >>event */
extern cudaError_t cudaEventCreate(cudaEvent_t *event);
extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream __dv(0));
extern cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream __dv(0), unsigned int flags __dv(0));
extern cudaError_t cudaEventQuery(cudaEvent_t event);
extern cudaError_t cudaEventSynchronize(cudaEvent_t event);
extern cudaError_t cudaEventDestroy(cudaEvent_t event);
extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* >>execution */
extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args);
extern cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func);
extern cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);
extern cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig);
extern cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize);
extern cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize, unsigned int flags);

/* >>memory */
extern cudaError_t cudaMalloc(void **devPtr, size_t size);
extern cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags __dv(cudaMemAttachGlobal));
extern cudaError_t cudaMallocHost(void **ptr, size_t size);
extern cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
extern cudaError_t cudaFree(void *devPtr);
extern cudaError_t cudaFreeHost(void *ptr);
extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
extern cudaError_t cudaHostUnregister(void *ptr);
extern cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
extern cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost);
extern cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
extern cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count);
extern cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset __dv(0), enum cudaMemcpyKind kind __dv(cudaMemcpyHostToDevice));
extern cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset __dv(0), enum cudaMemcpyKind kind __dv(cudaMemcpyDeviceToHost));
extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream __dv(0));
extern cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count, cudaStream_t stream __dv(0));
extern cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream __dv(0));
extern cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream __dv(0));
extern cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream __dv(0));
extern cudaError_t cudaMemset(void *devPtr, int value, size_t count);
extern cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height);
extern cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream __dv(0));
extern cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream __dv(0));
extern cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol);
extern cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol);
extern cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, struct cudaMemLocation location, unsigned int flags, cudaStream_t stream __dv(0));
extern cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);
extern cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream);

#if defined(__cplusplus)
}
#endif
#undef __dv

#endif
