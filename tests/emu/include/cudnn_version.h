/* cudnn_version.h (cuemu) - the version of the cuDNN API the emulator
   offers: 9.19.0, the cuDNN whose headers the CUDA 13.0 toolkit here holds. */
#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_

#define CUDNN_MAJOR 9
#define CUDNN_MINOR 19
#define CUDNN_PATCHLEVEL 0

#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

/* The newest compute capability this cuDNN knows natively (12.1). */
#define CUDNN_MAX_SM_MAJOR_NUMBER 12
#define CUDNN_MAX_SM_MINOR_NUMBER 1
#define CUDNN_MAX_DEVICE_VERSION (CUDNN_MAX_SM_MAJOR_NUMBER * 100 + CUDNN_MAX_SM_MINOR_NUMBER * 10)

#endif
