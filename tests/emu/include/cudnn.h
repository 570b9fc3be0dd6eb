/* cudnn.h (cuemu) - the emulated cuDNN 9 (legacy descriptor-based API).
   What it implements and where its behaviour comes from: tests/emu/src/
   cudnn*.cpp. C99 and C++. */
#if !defined(CUDNN_H_)
#define CUDNN_H_

#include <cuda_runtime_api.h>
#include "cudnn_version.h"
#include "cudnn_graph.h"
#include "cudnn_ops.h"
#include "cudnn_adv.h"
#include "cudnn_cnn.h"

#endif
