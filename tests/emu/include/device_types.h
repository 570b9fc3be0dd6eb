/* device_types.h (cuemu): nothing the emulator needs */
