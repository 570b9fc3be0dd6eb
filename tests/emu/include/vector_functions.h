/* vector_functions.h (cuemu) - make_int2(), make_float4(), ... */
#ifndef CUEMU_VECTOR_FUNCTIONS_H
#define CUEMU_VECTOR_FUNCTIONS_H
#define __VECTOR_FUNCTIONS_H__   /* the toolkit header's guard, which programs test */
#include "vector_types.h"
#if defined(__cplusplus)
#  define CUEMU_VF static inline
#else
#  define CUEMU_VF static inline
#endif
CUEMU_VF struct char1 make_char1(signed char x) { struct char1 v; v.x = x; return v; }
CUEMU_VF struct char2 make_char2(signed char x, signed char y) { struct char2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct char3 make_char3(signed char x, signed char y, signed char z) { struct char3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct char4 make_char4(signed char x, signed char y, signed char z, signed char w) { struct char4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct uchar1 make_uchar1(unsigned char x) { struct uchar1 v; v.x = x; return v; }
CUEMU_VF struct uchar2 make_uchar2(unsigned char x, unsigned char y) { struct uchar2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct uchar3 make_uchar3(unsigned char x, unsigned char y, unsigned char z) { struct uchar3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct uchar4 make_uchar4(unsigned char x, unsigned char y, unsigned char z, unsigned char w) { struct uchar4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct short1 make_short1(short x) { struct short1 v; v.x = x; return v; }
CUEMU_VF struct short2 make_short2(short x, short y) { struct short2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct short3 make_short3(short x, short y, short z) { struct short3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct short4 make_short4(short x, short y, short z, short w) { struct short4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct ushort1 make_ushort1(unsigned short x) { struct ushort1 v; v.x = x; return v; }
CUEMU_VF struct ushort2 make_ushort2(unsigned short x, unsigned short y) { struct ushort2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct ushort3 make_ushort3(unsigned short x, unsigned short y, unsigned short z) { struct ushort3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct ushort4 make_ushort4(unsigned short x, unsigned short y, unsigned short z, unsigned short w) { struct ushort4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct int1 make_int1(int x) { struct int1 v; v.x = x; return v; }
CUEMU_VF struct int2 make_int2(int x, int y) { struct int2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct int3 make_int3(int x, int y, int z) { struct int3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct int4 make_int4(int x, int y, int z, int w) { struct int4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct uint1 make_uint1(unsigned int x) { struct uint1 v; v.x = x; return v; }
CUEMU_VF struct uint2 make_uint2(unsigned int x, unsigned int y) { struct uint2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { struct uint3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { struct uint4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct long1 make_long1(long x) { struct long1 v; v.x = x; return v; }
CUEMU_VF struct long2 make_long2(long x, long y) { struct long2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct long3 make_long3(long x, long y, long z) { struct long3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct long4 make_long4(long x, long y, long z, long w) { struct long4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct ulong1 make_ulong1(unsigned long x) { struct ulong1 v; v.x = x; return v; }
CUEMU_VF struct ulong2 make_ulong2(unsigned long x, unsigned long y) { struct ulong2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct ulong3 make_ulong3(unsigned long x, unsigned long y, unsigned long z) { struct ulong3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct ulong4 make_ulong4(unsigned long x, unsigned long y, unsigned long z, unsigned long w) { struct ulong4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct longlong1 make_longlong1(long long x) { struct longlong1 v; v.x = x; return v; }
CUEMU_VF struct longlong2 make_longlong2(long long x, long long y) { struct longlong2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct longlong3 make_longlong3(long long x, long long y, long long z) { struct longlong3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct longlong4 make_longlong4(long long x, long long y, long long z, long long w) { struct longlong4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct ulonglong1 make_ulonglong1(unsigned long long x) { struct ulonglong1 v; v.x = x; return v; }
CUEMU_VF struct ulonglong2 make_ulonglong2(unsigned long long x, unsigned long long y) { struct ulonglong2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct ulonglong3 make_ulonglong3(unsigned long long x, unsigned long long y, unsigned long long z) { struct ulonglong3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct ulonglong4 make_ulonglong4(unsigned long long x, unsigned long long y, unsigned long long z, unsigned long long w) { struct ulonglong4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct float1 make_float1(float x) { struct float1 v; v.x = x; return v; }
CUEMU_VF struct float2 make_float2(float x, float y) { struct float2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct float3 make_float3(float x, float y, float z) { struct float3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct float4 make_float4(float x, float y, float z, float w) { struct float4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
CUEMU_VF struct double1 make_double1(double x) { struct double1 v; v.x = x; return v; }
CUEMU_VF struct double2 make_double2(double x, double y) { struct double2 v; v.x = x; v.y = y; return v; }
CUEMU_VF struct double3 make_double3(double x, double y, double z) { struct double3 v; v.x = x; v.y = y; v.z = z; return v; }
CUEMU_VF struct double4 make_double4(double x, double y, double z, double w) { struct double4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
#undef CUEMU_VF
#endif
