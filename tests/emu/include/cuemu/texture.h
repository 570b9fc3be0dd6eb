/* cuemu/texture.h - texture fetches in kernels (C++ only, included by
   cuemu/kernel.h): tex1Dfetch, tex1D, tex2D on texture objects (CUDA C++
   Programming Guide, "Texture Memory" and "Texture Fetching"; Runtime API
   texture object management). The runtime (tests/emu/src/texture.cpp) reads
   the texels, applies the addressing mode and filtering, and returns the
   four components as doubles; the type asked for takes as many as it has. */
#ifndef CUEMU_TEXTURE_H
#define CUEMU_TEXTURE_H
#include <type_traits>
#include <utility>
#include "../cuda_runtime_api.h"

namespace cuemu {
enum TexCall { TEX_1DFETCH = 0, TEX_1D, TEX_2D };
/* One fetch: call says which function; i the integer coordinate of
   tex1Dfetch; x, y the float ones. out: the components x, y, z, w. */
void tex_read(cudaTextureObject_t obj, int call, long long i, float x, float y, double out[4]);

template <class T, class = void> struct TexHasY : std::false_type {};
template <class T> struct TexHasY<T, std::void_t<decltype(std::declval<T &>().y)>> : std::true_type {};
template <class T, class = void> struct TexHasZ : std::false_type {};
template <class T> struct TexHasZ<T, std::void_t<decltype(std::declval<T &>().z)>> : std::true_type {};
template <class T, class = void> struct TexHasW : std::false_type {};
template <class T> struct TexHasW<T, std::void_t<decltype(std::declval<T &>().w)>> : std::true_type {};

template <class T> inline T tex_make(const double *v) {
    if constexpr (std::is_arithmetic_v<T>) {
        return (T)v[0];
    } else {
        T r{};
        using C = std::remove_reference_t<decltype(r.x)>;
        r.x = (C)v[0];
        if constexpr (TexHasY<T>::value) r.y = (C)v[1];
        if constexpr (TexHasZ<T>::value) r.z = (C)v[2];
        if constexpr (TexHasW<T>::value) r.w = (C)v[3];
        return r;
    }
}
} /* namespace cuemu */

template <class T> inline T tex1Dfetch(cudaTextureObject_t t, int x) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_1DFETCH, x, 0.0f, 0.0f, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T tex1D(cudaTextureObject_t t, float x) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_1D, 0, x, 0.0f, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T tex2D(cudaTextureObject_t t, float x, float y) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_2D, 0, x, y, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline void tex1Dfetch(T *r, cudaTextureObject_t t, int x) { *r = tex1Dfetch<T>(t, x); }
template <class T> inline void tex1D(T *r, cudaTextureObject_t t, float x) { *r = tex1D<T>(t, x); }
template <class T> inline void tex2D(T *r, cudaTextureObject_t t, float x, float y) { *r = tex2D<T>(t, x, y); }
#endif
