/* device_types.h (cuemu): nothing the emulator needs */
#if !defined(__DEVICE_TYPES_H__)
/* the toolkit header's own include guard, which programs test */
#define __DEVICE_TYPES_H__
#endif
