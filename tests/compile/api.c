/* The public part of gpudl.h alone: must be clean C99 -pedantic and C++. */
#include "../../gpudl.h"
int main(void) {
    gpudl_tensor t;
    memset(&t, 0, sizeof t);
    return (int)gpudl_f32_to_f16(1.0f) == 0x3c00 && t.ndim == 0 ? 0 : 1;
}
