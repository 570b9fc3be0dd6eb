/* vector_types.h (cuemu) - the CUDA vector types, with the alignments of
   the real ones (float2: 8 bytes, float4: 16, ...) and dim3. */
#ifndef CUEMU_VECTOR_TYPES_H
#define CUEMU_VECTOR_TYPES_H
#define __VECTOR_TYPES_H__   /* the toolkit header's guard, which programs test */

#include "crt/host_defines.h"

#define CUEMU_VEC1(T, N) struct N##1 { T x; };
#define CUEMU_VEC2(T, N, A) struct __builtin_align__(A) N##2 { T x, y; };
#define CUEMU_VEC3(T, N) struct N##3 { T x, y, z; };
#define CUEMU_VEC4(T, N, A) struct __builtin_align__(A) N##4 { T x, y, z, w; };

struct char1 { signed char x; };
struct uchar1 { unsigned char x; };
struct __builtin_align__(2) char2 { signed char x, y; };
struct __builtin_align__(2) uchar2 { unsigned char x, y; };
struct char3 { signed char x, y, z; };
struct uchar3 { unsigned char x, y, z; };
struct __builtin_align__(4) char4 { signed char x, y, z, w; };
struct __builtin_align__(4) uchar4 { unsigned char x, y, z, w; };
CUEMU_VEC1(short, short) CUEMU_VEC1(unsigned short, ushort)
CUEMU_VEC2(short, short, 4) CUEMU_VEC2(unsigned short, ushort, 4)
CUEMU_VEC3(short, short) CUEMU_VEC3(unsigned short, ushort)
CUEMU_VEC4(short, short, 8) CUEMU_VEC4(unsigned short, ushort, 8)
CUEMU_VEC1(int, int) CUEMU_VEC1(unsigned int, uint)
CUEMU_VEC2(int, int, 8) CUEMU_VEC2(unsigned int, uint, 8)
CUEMU_VEC3(int, int) CUEMU_VEC3(unsigned int, uint)
CUEMU_VEC4(int, int, 16) CUEMU_VEC4(unsigned int, uint, 16)
CUEMU_VEC1(long, long) CUEMU_VEC1(unsigned long, ulong)
CUEMU_VEC2(long, long, 2 * sizeof(long)) CUEMU_VEC2(unsigned long, ulong, 2 * sizeof(unsigned long))
CUEMU_VEC3(long, long) CUEMU_VEC3(unsigned long, ulong)
CUEMU_VEC4(long, long, 16) CUEMU_VEC4(unsigned long, ulong, 16)
CUEMU_VEC1(float, float)
CUEMU_VEC2(float, float, 8)
CUEMU_VEC3(float, float)
CUEMU_VEC4(float, float, 16)
CUEMU_VEC1(long long, longlong) CUEMU_VEC1(unsigned long long, ulonglong)
CUEMU_VEC2(long long, longlong, 16) CUEMU_VEC2(unsigned long long, ulonglong, 16)
CUEMU_VEC3(long long, longlong) CUEMU_VEC3(unsigned long long, ulonglong)
CUEMU_VEC4(long long, longlong, 16) CUEMU_VEC4(unsigned long long, ulonglong, 16)
CUEMU_VEC1(double, double)
CUEMU_VEC2(double, double, 16)
CUEMU_VEC3(double, double)
CUEMU_VEC4(double, double, 16)
#undef CUEMU_VEC1
#undef CUEMU_VEC2
#undef CUEMU_VEC3
#undef CUEMU_VEC4

#if !defined(__cplusplus)
#  define CUEMU_TD(N) typedef struct N##1 N##1; typedef struct N##2 N##2; typedef struct N##3 N##3; typedef struct N##4 N##4;
CUEMU_TD(char) CUEMU_TD(uchar) CUEMU_TD(short) CUEMU_TD(ushort) CUEMU_TD(int) CUEMU_TD(uint) CUEMU_TD(long)
CUEMU_TD(ulong) CUEMU_TD(float) CUEMU_TD(longlong) CUEMU_TD(ulonglong) CUEMU_TD(double)
#  undef CUEMU_TD
#endif

/* Grid and block sizes: unspecified components are 1. */
struct dim3 {
    unsigned int x, y, z;
#if defined(__cplusplus)
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
#endif
};
#if !defined(__cplusplus)
typedef struct dim3 dim3;
#endif

#endif
