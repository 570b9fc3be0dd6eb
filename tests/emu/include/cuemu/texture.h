/* cuemu/texture.h - texture fetches and surface loads/stores in kernels
   (C++ only, included by cuemu/kernel.h): tex1Dfetch, tex1D, tex2D,
   tex1DLayered, tex2DLayered, texCubemap, texCubemapLayered on texture
   objects; surf1D/2D/1DLayered/2DLayered/Cubemap/CubemapLayered read and
   write on surface objects
   (CUDA C++ Programming Guide, "Texture and Surface Memory", "Texture
   Fetching", "Texture Functions", "Surface Functions"; Runtime API texture
   and surface object management). The runtime (tests/emu/src/texture.cpp)
   reads the texels, applies the addressing mode and filtering, and returns
   the four components as doubles; the type asked for takes as many as it
   has. Surface accesses move sizeof(T) raw bytes at a byte offset x (PTX
   ISA, sust.b / suld.b: "the lowest dimension coordinate represents a byte
   offset into the surface and is not scaled"). */
#ifndef CUEMU_TEXTURE_H
#define CUEMU_TEXTURE_H
#include <type_traits>
#include <utility>
#include "../cuda_runtime_api.h"

namespace cuemu {
enum TexCall { TEX_1DFETCH = 0, TEX_1D, TEX_2D, TEX_1DLAYERED, TEX_2DLAYERED, TEX_CUBEMAP, TEX_CUBEMAPLAYERED };
/* One fetch: call says which function; i the integer coordinate of
   tex1Dfetch; x, y, z the float ones (z: a cubemap's direction); layer the
   layer of a layered fetch. out: the components x, y, z, w. */
void tex_read(cudaTextureObject_t obj, int call, long long i, float x, float y, float z, int layer, double out[4]);
enum SurfCall { SURF_1D = 0, SURF_2D, SURF_1DLAYERED, SURF_2DLAYERED, SURF_CUBEMAP, SURF_CUBEMAPLAYERED };
/* One surface access of size bytes at byte offset x, row y, layer layer:
   reads into or writes from buf. */
void surf_access(cudaSurfaceObject_t obj, int call, int x, int y, int layer, int mode, void *buf, size_t size, bool write);
template <class T> constexpr bool surf_size_ok = sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                                                 sizeof(T) == 16;

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
    cuemu::tex_read(t, cuemu::TEX_1DFETCH, x, 0.0f, 0.0f, 0.0f, 0, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T tex1D(cudaTextureObject_t t, float x) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_1D, 0, x, 0.0f, 0.0f, 0, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T tex2D(cudaTextureObject_t t, float x, float y) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_2D, 0, x, y, 0.0f, 0, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T tex1DLayered(cudaTextureObject_t t, float x, int layer) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_1DLAYERED, 0, x, 0.0f, 0.0f, layer, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T tex2DLayered(cudaTextureObject_t t, float x, float y, int layer) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_2DLAYERED, 0, x, y, 0.0f, layer, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T texCubemap(cudaTextureObject_t t, float x, float y, float z) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_CUBEMAP, 0, x, y, z, 0, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline T texCubemapLayered(cudaTextureObject_t t, float x, float y, float z, int layer) {
    double v[4];
    cuemu::tex_read(t, cuemu::TEX_CUBEMAPLAYERED, 0, x, y, z, layer, v);
    return cuemu::tex_make<T>(v);
}
template <class T> inline void tex1DLayered(T *r, cudaTextureObject_t t, float x, int layer) { *r = tex1DLayered<T>(t, x, layer); }
template <class T> inline void tex2DLayered(T *r, cudaTextureObject_t t, float x, float y, int layer) {
    *r = tex2DLayered<T>(t, x, y, layer);
}
template <class T> inline void texCubemap(T *r, cudaTextureObject_t t, float x, float y, float z) { *r = texCubemap<T>(t, x, y, z); }
template <class T> inline void texCubemapLayered(T *r, cudaTextureObject_t t, float x, float y, float z, int layer) {
    *r = texCubemapLayered<T>(t, x, y, z, layer);
}

/* Surface functions (Programming Guide, "Surface Functions"): x in bytes;
   boundaryMode says what an out-of-range coordinate does (trap: the kernel
   fails; clamp; zero: reads give 0, writes are dropped). */
#define CUEMU_SURF_CHECK(T) static_assert(cuemu::surf_size_ok<T>, "surface access of a type of 1, 2, 4, 8 or 16 bytes")
template <class T> inline T surf1Dread(cudaSurfaceObject_t s, int x, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    T r;
    cuemu::surf_access(s, cuemu::SURF_1D, x, 0, 0, m, &r, sizeof r, false);
    return r;
}
template <class T> inline void surf1Dread(T *r, cudaSurfaceObject_t s, int x, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    *r = surf1Dread<T>(s, x, m);
}
template <class T> inline void surf1Dwrite(T v, cudaSurfaceObject_t s, int x, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    cuemu::surf_access(s, cuemu::SURF_1D, x, 0, 0, m, &v, sizeof v, true);
}
template <class T> inline T surf2Dread(cudaSurfaceObject_t s, int x, int y, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    T r;
    cuemu::surf_access(s, cuemu::SURF_2D, x, y, 0, m, &r, sizeof r, false);
    return r;
}
template <class T>
inline void surf2Dread(T *r, cudaSurfaceObject_t s, int x, int y, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    *r = surf2Dread<T>(s, x, y, m);
}
template <class T>
inline void surf2Dwrite(T v, cudaSurfaceObject_t s, int x, int y, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    cuemu::surf_access(s, cuemu::SURF_2D, x, y, 0, m, &v, sizeof v, true);
}
template <class T>
inline T surf1DLayeredread(cudaSurfaceObject_t s, int x, int layer, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    T r;
    cuemu::surf_access(s, cuemu::SURF_1DLAYERED, x, 0, layer, m, &r, sizeof r, false);
    return r;
}
template <class T>
inline void surf1DLayeredread(T *r, cudaSurfaceObject_t s, int x, int layer, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    *r = surf1DLayeredread<T>(s, x, layer, m);
}
template <class T>
inline void surf1DLayeredwrite(T v, cudaSurfaceObject_t s, int x, int layer, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    cuemu::surf_access(s, cuemu::SURF_1DLAYERED, x, 0, layer, m, &v, sizeof v, true);
}
template <class T>
inline T surf2DLayeredread(cudaSurfaceObject_t s, int x, int y, int layer, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    T r;
    cuemu::surf_access(s, cuemu::SURF_2DLAYERED, x, y, layer, m, &r, sizeof r, false);
    return r;
}
template <class T>
inline void surf2DLayeredread(T *r, cudaSurfaceObject_t s, int x, int y, int layer,
                              cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    *r = surf2DLayeredread<T>(s, x, y, layer, m);
}
template <class T>
inline void surf2DLayeredwrite(T v, cudaSurfaceObject_t s, int x, int y, int layer,
                               cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    cuemu::surf_access(s, cuemu::SURF_2DLAYERED, x, y, layer, m, &v, sizeof v, true);
}
/* cubemap surfaces (Guide, "Cubemap Surfaces"): a 2-D layered surface
   whose layer is the face (face + 6 * layer for a layered cubemap,
   "layerFace") */
template <class T>
inline T surfCubemapread(cudaSurfaceObject_t s, int x, int y, int face, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    T r;
    cuemu::surf_access(s, cuemu::SURF_CUBEMAP, x, y, face, m, &r, sizeof r, false);
    return r;
}
template <class T>
inline void surfCubemapread(T *r, cudaSurfaceObject_t s, int x, int y, int face, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    *r = surfCubemapread<T>(s, x, y, face, m);
}
template <class T>
inline void surfCubemapwrite(T v, cudaSurfaceObject_t s, int x, int y, int face, cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    cuemu::surf_access(s, cuemu::SURF_CUBEMAP, x, y, face, m, &v, sizeof v, true);
}
template <class T>
inline T surfCubemapLayeredread(cudaSurfaceObject_t s, int x, int y, int layerFace,
                                cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    T r;
    cuemu::surf_access(s, cuemu::SURF_CUBEMAPLAYERED, x, y, layerFace, m, &r, sizeof r, false);
    return r;
}
template <class T>
inline void surfCubemapLayeredread(T *r, cudaSurfaceObject_t s, int x, int y, int layerFace,
                                   cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    *r = surfCubemapLayeredread<T>(s, x, y, layerFace, m);
}
template <class T>
inline void surfCubemapLayeredwrite(T v, cudaSurfaceObject_t s, int x, int y, int layerFace,
                                    cudaSurfaceBoundaryMode m = cudaBoundaryModeTrap) {
    CUEMU_SURF_CHECK(T);
    cuemu::surf_access(s, cuemu::SURF_CUBEMAPLAYERED, x, y, layerFace, m, &v, sizeof v, true);
}
#undef CUEMU_SURF_CHECK
template <class T> inline void tex1Dfetch(T *r, cudaTextureObject_t t, int x) { *r = tex1Dfetch<T>(t, x); }
template <class T> inline void tex1D(T *r, cudaTextureObject_t t, float x) { *r = tex1D<T>(t, x); }
template <class T> inline void tex2D(T *r, cudaTextureObject_t t, float x, float y) { *r = tex2D<T>(t, x, y); }
#endif
