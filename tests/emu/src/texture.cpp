/* texture.cpp - CUDA arrays and texture objects on the emulated device.

   CUDA C++ Programming Guide, "Texture Memory" (texture objects, their
   resource and texture descriptions) and its appendix "Texture Fetching"
   (nearest-point sampling: T[floor(x)]; linear filtering: xB = x - 0.5,
   i = floor(xB), alpha = frac(xB) "stored in 9-bit fixed point format with 8
   bits of fractional value", (1 - alpha) T[i] + alpha T[i+1], and the
   bilinear form in 2-D); Runtime API: cudaCreateTextureObject,
   cudaMallocArray, cudaMemcpy2DToArray, ... What is checked:
   - creation: a linear or pitch-2D resource is device memory aligned to
     textureAlignment (512; see tex_aligned), its rows' pitch a multiple of
     texturePitchAlignment (32) and at least a row of elements; a format of
     1, 2 or 4 components of 8, 16 or 32 bits (16 or 32 for floats);
     cudaReadModeNormalizedFloat only for 8- and 16-bit integers; linear
     filtering only "for textures that are configured to return
     floating-point data" (refused, never ignored);
   - fetches: a destroyed or unknown object, or a function that does not fit
     the resource (tex1Dfetch on linear memory, tex1D on a 1-D array, tex2D
     on pitch-2D memory or a 2-D array) ends the grid with an error;
     addressing: clamp, border (the border color), and for normalized
     coordinates wrap and mirror (the Guide: wrap and mirror "are only
     supported for normalized texture coordinates"; otherwise clamp);
     tex1Dfetch takes an integer index, no filtering, border or clamp.
   Mipmaps, layered and cubemap textures, 3-D arrays, resource views,
   surfaces and sRGB are not emulated: refused with a message. */
#include "access.h"
#include "state.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

namespace cuemu {
namespace {

const uint32_t kArrayMagic = 0x41525259;   /* "ARRY" */
struct CuArray {
    uint32_t magic;
    int device;
    cudaChannelFormatDesc desc;
    size_t width, height;   /* elements; height 1 for a 1-D array */
    bool one_d;
    size_t elem, pitch;
    char *data;             /* device memory, rows of pitch bytes */
};

/* Component count and element bytes of a format; false when not a format the emulator reads. */
bool format_of(const cudaChannelFormatDesc &d, int *comps, size_t *elem) {
    int b[4] = {d.x, d.y, d.z, d.w}, n = 0;
    while (n < 4 && b[n]) n++;
    for (int i = n; i < 4; i++)
        if (b[i]) return false;
    if (n == 0 || n == 3) return false;
    for (int i = 0; i < n; i++)
        if (b[i] != b[0]) return false;
    if (b[0] != 8 && b[0] != 16 && b[0] != 32) return false;
    if (d.f == cudaChannelFormatKindFloat && b[0] == 8) return false;
    if (d.f != cudaChannelFormatKindSigned && d.f != cudaChannelFormatKindUnsigned && d.f != cudaChannelFormatKindFloat)
        return false;
    *comps = n;
    *elem = (size_t)n * (size_t)b[0] / 8;
    return true;
}

struct TexObj {
    uint32_t gen = 0;
    bool live = false;
    int device = 0;
    cudaResourceDesc res{};
    cudaTextureDesc tex{};
    const char *base = nullptr;
    size_t width = 0, height = 1, pitch = 0, elem = 0;
    int comps = 0, bits = 0;
    cudaChannelFormatKind kind = cudaChannelFormatKindNone;
    int dims = 1;        /* 1 or 2 */
    bool linear_mem = false;   /* cudaResourceTypeLinear: tex1Dfetch only */
};
const unsigned kSlots = 4096;
TexObj g_tex[kSlots];
std::mutex g_tex_mu;

cudaTextureObject_t handle_of(unsigned slot) { return ((cudaTextureObject_t)g_tex[slot].gen << 32) | (slot + 1); }
TexObj *find_tex(cudaTextureObject_t h) {
    unsigned slot = (unsigned)(h & 0xffffffffu);
    if (!slot || slot > kSlots) return nullptr;
    TexObj *t = &g_tex[slot - 1];
    if (!t->live || t->gen != (uint32_t)(h >> 32)) return nullptr;
    return t;
}

float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
    float f;
    if (e == 0) f = ldexpf((float)m, -24);
    else if (e == 31) f = m ? NAN : INFINITY;
    else f = ldexpf((float)(m | 1024), (int)e - 25);
    return s ? -f : f;
}

/* Component c of the texel at p, as the read mode returns it. */
double component(const TexObj &t, const char *p, int c) {
    const char *q = p + (size_t)c * (size_t)t.bits / 8;
    bool norm = t.tex.readMode == cudaReadModeNormalizedFloat && t.kind != cudaChannelFormatKindFloat;
    if (t.kind == cudaChannelFormatKindFloat) {
        if (t.bits == 16) {
            uint16_t h;
            memcpy(&h, q, 2);
            return half_to_float(h);
        }
        float f;
        memcpy(&f, q, 4);
        return f;
    }
    bool sgn = t.kind == cudaChannelFormatKindSigned;
    double v;
    switch (t.bits) {
    case 8: v = sgn ? (double)*(const int8_t *)q : (double)*(const uint8_t *)q; break;
    case 16: {
        uint16_t u;
        memcpy(&u, q, 2);
        v = sgn ? (double)(int16_t)u : (double)u;
        break;
    }
    default: {
        uint32_t u;
        memcpy(&u, q, 4);
        v = sgn ? (double)(int32_t)u : (double)u;
    }
    }
    if (!norm) return v;
    /* normalized float: [0, 1] for unsigned, [-1, 1] for signed */
    double max = sgn ? (double)((1u << (t.bits - 1)) - 1) : (double)((1u << t.bits) - 1);
    v /= max;
    return v < -1.0 ? -1.0 : v;
}

/* Applies the addressing mode to texel index i of a dimension of n texels;
   false: outside, the border color applies. */
bool address(const TexObj &t, int dim, long long *i, long long n) {
    cudaTextureAddressMode m = t.tex.addressMode[dim];
    if (!t.tex.normalizedCoords && (m == cudaAddressModeWrap || m == cudaAddressModeMirror)) m = cudaAddressModeClamp;
    long long v = *i;
    switch (m) {
    case cudaAddressModeBorder:
        if (v < 0 || v >= n) return false;
        break;
    case cudaAddressModeWrap:
        v %= n;
        if (v < 0) v += n;
        break;
    case cudaAddressModeMirror: {
        long long m2 = v % (2 * n);
        if (m2 < 0) m2 += 2 * n;
        v = m2 >= n ? 2 * n - 1 - m2 : m2;
        break;
    }
    default: v = v < 0 ? 0 : v >= n ? n - 1 : v;
    }
    *i = v;
    return true;
}

void texel(const TexObj &t, long long x, long long y, double out[4]) {
    bool in = address(t, 0, &x, (long long)t.width) && (t.dims < 2 || address(t, 1, &y, (long long)t.height));
    for (int c = 0; c < 4; c++) out[c] = 0.0;
    if (!in) {
        for (int c = 0; c < 4; c++) out[c] = t.tex.borderColor[c];
        return;
    }
    const char *p = t.base + (size_t)y * t.pitch + (size_t)x * t.elem;
    for (int c = 0; c < t.comps; c++) out[c] = component(t, p, c);
}

/* alpha in 9-bit fixed point with 8 fractional bits (Texture Fetching) */
double frac8(double f) { return floor(f * 256.0 + 0.5) / 256.0; }

} /* namespace */

void tex_read(cudaTextureObject_t h, int call, long long i, float xf, float yf, double out[4]) {
    TexObj *tp = find_tex(h);
    if (!tp)
        kernel_fault(cudaErrorLaunchFailure, "texture fetch from texture object 0x%llx, which is not a live texture object "
                     "(destroyed, or never created)", (unsigned long long)h);
    const TexObj &t = *tp;
    static const char *names[] = {"tex1Dfetch", "tex1D", "tex2D"};
    bool fits = call == TEX_1DFETCH ? t.linear_mem : call == TEX_1D ? (!t.linear_mem && t.dims == 1) : t.dims == 2;
    if (!fits)
        kernel_fault(cudaErrorLaunchFailure, "%s on a texture object over %s: tex1Dfetch reads linear memory, tex1D a 1-D "
                     "CUDA array, tex2D pitch-2D memory or a 2-D CUDA array (CUDA C++ Programming Guide, Texture Memory)",
                     names[call], t.linear_mem ? "linear memory" : t.dims == 1 ? "a 1-D CUDA array" : "2-D memory");
    std::string why;
    if (!device_range(t.device, t.base, t.pitch * (t.height - 1) + t.width * t.elem, &why))
        kernel_fault(cudaErrorIllegalAddress, "%s: the texture's memory is no longer memory the device can access (%s)",
                     names[call], why.c_str());
    if (call == TEX_1DFETCH) {
        /* integer index: border or clamp, no filtering */
        texel(t, i, 0, out);
        return;
    }
    double x = xf, y = yf;
    if (t.tex.normalizedCoords) {
        x *= (double)t.width;
        y *= (double)t.height;
    }
    if (t.tex.filterMode == cudaFilterModePoint) {
        texel(t, (long long)floor(x), (long long)floor(y), out);
        return;
    }
    double xb = x - 0.5, yb = y - 0.5;
    long long i0 = (long long)floor(xb), j0 = (long long)floor(yb);
    double a = frac8(xb - floor(xb)), b = frac8(yb - floor(yb));
    double t00[4], t10[4];
    texel(t, i0, j0, t00);
    texel(t, i0 + 1, j0, t10);
    if (t.dims == 1) {
        for (int c = 0; c < 4; c++) out[c] = (float)((1 - a) * t00[c] + a * t10[c]);
        return;
    }
    double t01[4], t11[4];
    texel(t, i0, j0 + 1, t01);
    texel(t, i0 + 1, j0 + 1, t11);
    for (int c = 0; c < 4; c++)
        out[c] = (float)((1 - a) * (1 - b) * t00[c] + a * (1 - b) * t10[c] + (1 - a) * b * t01[c] + a * b * t11[c]);
}

} /* namespace cuemu */

using namespace cuemu;

namespace {
cudaError_t fail(cudaError_t e) { return set_error(e); }
void say_once(const char *what) {
    static std::mutex mu;
    static std::unordered_set<std::string> said;
    std::lock_guard<std::mutex> lk(mu);
    if (said.insert(what).second) fprintf(stderr, "cuemu: %s is not emulated\n", what);
}
/* devPtr "must be aligned to cudaDeviceProp::textureAlignment" (512): an
   allocation's base is (on a GPU cudaMalloc hands out 512-byte aligned
   blocks; here the emulator places blocks against a guard page at 256-byte
   granularity, so the base counts as aligned), and an offset into it must
   be a multiple of 512. */
bool tex_aligned(const void *p, size_t align) {
    Region r;
    MemKind k = classify(p, &r);
    if (k != MEM_DEVICE && k != MEM_MANAGED) return (uintptr_t)p % align == 0;
    return (size_t)((const char *)p - r.base) % align == 0;
}
std::unordered_set<const void *> &arrays() {
    static std::unordered_set<const void *> *s = new std::unordered_set<const void *>();
    return *s;
}
CuArray *live_array(const void *a) {
    std::lock_guard<std::mutex> lk(g_tex_mu);
    return arrays().count(a) ? (CuArray *)a : nullptr;
}
} /* namespace */

extern "C" struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f) {
    CUEMU_API_CALL();
    cudaChannelFormatDesc d;
    d.x = x;
    d.y = y;
    d.z = z;
    d.w = w;
    d.f = f;
    return d;
}

/* >>CUDA arrays: 1-D (height 0) and 2-D, rows of width elements. */
extern "C" cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
                                      unsigned int flags) { CUEMU_API_CALL();
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e) return e;
    int comps;
    size_t elem;
    if (!array || !desc || !width) return fail(cudaErrorInvalidValue);
    if (!format_of(*desc, &comps, &elem)) return fail(cudaErrorInvalidChannelDescriptor);
    if (flags) {
        say_once("cudaMallocArray with flags (surfaces, layered or cubemap arrays, texture gather)");
        return fail(cudaErrorNotSupported);
    }
    if (width > 131072 || height > 65536) return fail(cudaErrorInvalidValue);
    CuArray *a = new CuArray{kArrayMagic, dev, *desc, width, height ? height : 1, height == 0, elem, width * elem, nullptr};
    a->data = (char *)internal_alloc(dev, a->pitch * a->height);
    if (!a->data) {
        delete a;
        return fail(cudaErrorMemoryAllocation);
    }
    {
        std::lock_guard<std::mutex> lk(g_tex_mu);
        arrays().insert(a);
    }
    *array = (cudaArray_t)a;
    return cudaSuccess;
}

extern "C" cudaError_t cudaFreeArray(cudaArray_t array) { CUEMU_API_CALL();
    if (!array) return cudaSuccess;
    CuArray *a = live_array(array);
    if (!a) return fail(cudaErrorInvalidValue);
    cudaDeviceSynchronize();   /* as cudaFree: the device is idle first */
    {
        std::lock_guard<std::mutex> lk(g_tex_mu);
        arrays().erase(a);
    }
    a->magic = 0;
    internal_free(a->data);
    delete a;
    return cudaSuccess;
}

/* wOffset and width in bytes, hOffset and height in rows (Runtime API) */
extern "C" cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                          size_t width, size_t height, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    CuArray *a = live_array(dst);
    if (!a) return fail(cudaErrorInvalidValue);
    if (wOffset + width > a->pitch || hOffset + height > a->height) return fail(cudaErrorInvalidValue);
    if (kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost) return fail(cudaErrorInvalidMemcpyDirection);
    return cudaMemcpy2D(a->data + hOffset * a->pitch + wOffset, a->pitch, src, spitch, width, height, kind);
}
extern "C" cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                            size_t width, size_t height, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    CuArray *a = live_array(src);
    if (!a) return fail(cudaErrorInvalidValue);
    if (wOffset + width > a->pitch || hOffset + height > a->height) return fail(cudaErrorInvalidValue);
    if (kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice) return fail(cudaErrorInvalidMemcpyDirection);
    return cudaMemcpy2D(dst, dpitch, a->data + hOffset * a->pitch + wOffset, a->pitch, width, height, kind);
}
/* count bytes from (wOffset, hOffset), row after row (deprecated in the Runtime API, still declared) */
extern "C" cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
                                        enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    CuArray *a = live_array(dst);
    if (!a) return fail(cudaErrorInvalidValue);
    size_t start = hOffset * a->pitch + wOffset;
    if (wOffset >= a->pitch || start + count > a->pitch * a->height) return fail(cudaErrorInvalidValue);
    return cudaMemcpy(a->data + start, src, count, kind);
}
extern "C" cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t w, size_t h, const void *src, size_t count,
                                             enum cudaMemcpyKind kind) {
    return cudaMemcpyToArray(dst, w, h, src, count, kind);
}
extern "C" cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t w, size_t h, const void *src, size_t sp, size_t width,
                                               size_t height, enum cudaMemcpyKind kind) {
    return cudaMemcpy2DToArray(dst, w, h, src, sp, width, height, kind);
}
extern "C" cudaError_t cudaMemcpy2DFromArray_ptds(void *dst, size_t dp, cudaArray_const_t src, size_t w, size_t h, size_t width,
                                                 size_t height, enum cudaMemcpyKind kind) {
    return cudaMemcpy2DFromArray(dst, dp, src, w, h, width, height, kind);
}

/* >>texture objects */
extern "C" cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject, const struct cudaResourceDesc *pResDesc,
                                              const struct cudaTextureDesc *pTexDesc,
                                              const struct cudaResourceViewDesc *pResViewDesc) { CUEMU_API_CALL();
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e) return e;
    if (!pTexObject || !pResDesc || !pTexDesc) return fail(cudaErrorInvalidValue);
    if (pResViewDesc) {
        say_once("a texture object with a resource view (cudaResourceViewDesc)");
        return fail(cudaErrorNotSupported);
    }
    if (pResDesc->flags) return fail(cudaErrorInvalidValue);   /* "Flags (must be zero)" */
    const cudaTextureDesc &td = *pTexDesc;
    if (td.sRGB) {
        say_once("sRGB texture reads");
        return fail(cudaErrorNotSupported);
    }
    for (int i = 0; i < 3; i++)
        if ((unsigned)td.addressMode[i] > cudaAddressModeBorder) return fail(cudaErrorInvalidValue);
    if ((unsigned)td.filterMode > cudaFilterModeLinear || (unsigned)td.readMode > cudaReadModeNormalizedFloat)
        return fail(cudaErrorInvalidValue);
    TexObj t;
    t.device = dev;
    t.res = *pResDesc;
    t.tex = td;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    cudaChannelFormatDesc fmt{};
    switch (pResDesc->resType) {
    case cudaResourceTypeLinear: {
        const auto &l = pResDesc->res.linear;
        fmt = l.desc;
        if (!format_of(fmt, &t.comps, &t.elem)) return fail(cudaErrorInvalidChannelDescriptor);
        if (!l.devPtr || !tex_aligned(l.devPtr, prop.textureAlignment) || l.sizeInBytes < t.elem)
            return fail(cudaErrorInvalidValue);
        if (!device_range(dev, l.devPtr, l.sizeInBytes)) return fail(cudaErrorInvalidValue);
        t.base = (const char *)l.devPtr;
        t.width = l.sizeInBytes / t.elem;
        t.pitch = l.sizeInBytes;
        t.linear_mem = true;
        break;
    }
    case cudaResourceTypePitch2D: {
        const auto &p2 = pResDesc->res.pitch2D;
        fmt = p2.desc;
        if (!format_of(fmt, &t.comps, &t.elem)) return fail(cudaErrorInvalidChannelDescriptor);
        if (!p2.devPtr || !tex_aligned(p2.devPtr, prop.textureAlignment) || !p2.width || !p2.height ||
            p2.pitchInBytes % prop.texturePitchAlignment || p2.pitchInBytes < p2.width * t.elem)
            return fail(cudaErrorInvalidValue);
        if (!device_range(dev, p2.devPtr, p2.pitchInBytes * (p2.height - 1) + p2.width * t.elem)) return fail(cudaErrorInvalidValue);
        t.base = (const char *)p2.devPtr;
        t.width = p2.width;
        t.height = p2.height;
        t.pitch = p2.pitchInBytes;
        t.dims = 2;
        break;
    }
    case cudaResourceTypeArray: {
        CuArray *a = live_array(pResDesc->res.array.array);
        if (!a) return fail(cudaErrorInvalidValue);
        fmt = a->desc;
        format_of(fmt, &t.comps, &t.elem);
        t.base = a->data;
        t.width = a->width;
        t.height = a->height;
        t.pitch = a->pitch;
        t.dims = a->one_d ? 1 : 2;
        break;
    }
    default:
        say_once("a texture object over a mipmapped array");
        return fail(cudaErrorNotSupported);
    }
    t.bits = fmt.x;
    t.kind = fmt.f;
    if (td.readMode == cudaReadModeNormalizedFloat && (t.kind == cudaChannelFormatKindFloat ? false : t.bits == 32))
        return fail(cudaErrorInvalidValue);   /* normalized reads: 8- and 16-bit integers */
    if (td.filterMode == cudaFilterModeLinear &&
        (t.linear_mem || (t.kind != cudaChannelFormatKindFloat && td.readMode != cudaReadModeNormalizedFloat)))
        return fail(cudaErrorInvalidValue);   /* filtering: floating-point results, not tex1Dfetch's linear memory */
    std::lock_guard<std::mutex> lk(g_tex_mu);
    for (unsigned s = 0; s < kSlots; s++)
        if (!g_tex[s].live) {
            t.gen = g_tex[s].gen + 1;
            t.live = true;
            g_tex[s] = t;
            *pTexObject = handle_of(s);
            return cudaSuccess;
        }
    return fail(cudaErrorMemoryAllocation);
}

/* The device may still read it: the object goes once the work queued so
   far is done. */
extern "C" cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject) { CUEMU_API_CALL();
    if (!texObject) return cudaSuccess;
    if (!find_tex(texObject)) return fail(cudaErrorInvalidValue);
    cudaDeviceSynchronize();
    std::lock_guard<std::mutex> lk(g_tex_mu);
    TexObj *t = find_tex(texObject);
    if (t) t->live = false;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGetTextureObjectResourceDesc(struct cudaResourceDesc *pResDesc, cudaTextureObject_t texObject) { CUEMU_API_CALL();
    TexObj *t = find_tex(texObject);
    if (!t || !pResDesc) return fail(cudaErrorInvalidValue);
    *pResDesc = t->res;
    return cudaSuccess;
}
extern "C" cudaError_t cudaGetTextureObjectTextureDesc(struct cudaTextureDesc *pTexDesc, cudaTextureObject_t texObject) { CUEMU_API_CALL();
    TexObj *t = find_tex(texObject);
    if (!t || !pTexDesc) return fail(cudaErrorInvalidValue);
    *pTexDesc = t->tex;
    return cudaSuccess;
}
