/* builtin_types.h (cuemu) */
#include "driver_types.h"
#include "vector_types.h"
#include "texture_types.h"
#include "surface_types.h"
