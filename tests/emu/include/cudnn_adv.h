/* cudnn_adv.h (cuemu) - cuDNN 9's RNN, CTC and attention calls. The
   emulator implements none of them; the header exists because cudnn.h
   includes it, as the real one does. */
#ifndef CUDNN_ADV_H_
#define CUDNN_ADV_H_

#include "cudnn_version.h"
#include "cudnn_ops.h"

#define CUDNN_ADV_MAJOR 9
#define CUDNN_ADV_MINOR 19
#define CUDNN_ADV_PATCH 0

#endif
