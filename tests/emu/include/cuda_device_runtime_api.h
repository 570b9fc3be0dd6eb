/* cuda_device_runtime_api.h (cuemu): device-side launches are not emulated */
