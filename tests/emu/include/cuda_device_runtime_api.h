/* cuda_device_runtime_api.h (cuemu): device-side launches are not emulated */
#if !defined(__CUDA_DEVICE_RUNTIME_API_H__)
/* the toolkit header's own include guard, which programs test */
#define __CUDA_DEVICE_RUNTIME_API_H__
#endif
