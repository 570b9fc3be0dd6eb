/* texture.cpp - CUDA arrays, texture objects and surface objects on the
   emulated device.

   CUDA C++ Programming Guide, "Texture and Surface Memory" (texture objects,
   their resource and texture descriptions; layered textures, cubemap
   textures, surface objects) and its appendix "Texture Fetching"
   (nearest-point sampling: T[floor(x)]; linear filtering: xB = x - 0.5,
   i = floor(xB), alpha = frac(xB) "stored in 9-bit fixed point format with 8
   bits of fractional value", (1 - alpha) T[i] + alpha T[i+1], and the
   bilinear form in 2-D); Runtime API: cudaCreateTextureObject,
   cudaCreateSurfaceObject, cudaMallocArray, cudaMalloc3DArray,
   cudaMemcpy2DToArray, ... What is checked:
   - creation: a linear or pitch-2D resource is device memory aligned to
     textureAlignment (512; see tex_aligned), its rows' pitch a multiple of
     texturePitchAlignment (32) and at least a row of elements; a format of
     1, 2 or 4 components of 8, 16 or 32 bits (16 or 32 for floats);
     cudaReadModeNormalizedFloat only for 8- and 16-bit integers; linear
     filtering only "for textures that are configured to return
     floating-point data" (refused, never ignored);
   - arrays: cudaMalloc3DArray's extents and flags as its Runtime API entry
     lists them (1-D layered: height 0; 2-D layered: all three non-zero;
     cubemap: width == height, depth 6, or a multiple of 6 when layered);
     a surface object only over an array made with cudaArraySurfaceLoadStore;
   - fetches: a destroyed or unknown object, or a function that does not fit
     the resource (tex1Dfetch on linear memory, tex1D on a 1-D array, tex2D
     on pitch-2D memory or a 2-D array, tex1DLayered / tex2DLayered on a
     layered array, texCubemap / texCubemapLayered on a cubemap array) ends
     the grid with an error, as does a layer index outside the array (the
     Guide defines none; a GPU may clamp it, the emulator refuses);
     addressing: clamp, border (the border color), and for normalized
     coordinates wrap and mirror (the Guide: wrap and mirror "are only
     supported for normalized texture coordinates"; otherwise clamp);
     tex1Dfetch takes an integer index, no filtering, border or clamp;
     layered fetches filter within their layer only ("texture filtering ...
     is done only within a layer, not across layers");
   - cubemaps (Guide, "Cubemap Textures", its face table): the direction
     (x, y, z) picks the face of the largest |component| and
     (s/m + 1) / 2, (t/m + 1) / 2 within it; filtering stays within the
     face (clamped at its edges; seamlessCubemap is refused);
   - surfaces (Guide, "Surface Functions"; PTX ISA, suld.b / sust.b): x is a
     byte offset, the access sizeof(T) bytes; out-of-range coordinates trap
     (the kernel fails), clamp, or read zero / drop the write, as
     boundaryMode says; an x that is no multiple of sizeof(T) ends the grid
     (no document defines it).
   Cubemap surfaces (surfCubemap*, "Cubemap Surfaces") are 2-D layered
   surfaces whose layer is the face (face + 6 * layer when layered).
   Mipmaps, 3-D arrays, texture gather, resource views and sRGB are not
   emulated: refused with a message. */
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
    size_t layers;          /* 1, or the layers of a layered / cubemap array (6 a cubemap) */
    bool one_d, layered, cubemap;
    unsigned flags;         /* as allocated (cudaArrayLayered, ...) */
    size_t elem, pitch;
    char *data;             /* device memory, layers of height rows of pitch bytes */
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
    bool layered = false, cubemap = false;
    size_t layers = 1;   /* layers of height rows each */
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

/* The texel (x, y) of layer layer (in range); a cubemap face clamps at its edges. */
void texel(const TexObj &t, long long x, long long y, size_t layer, double out[4]) {
    bool in;
    if (t.cubemap) {
        x = x < 0 ? 0 : x >= (long long)t.width ? (long long)t.width - 1 : x;
        y = y < 0 ? 0 : y >= (long long)t.height ? (long long)t.height - 1 : y;
        in = true;
    } else {
        in = address(t, 0, &x, (long long)t.width) && (t.dims < 2 || address(t, 1, &y, (long long)t.height));
    }
    if (t.dims < 2) y = 0;   /* 1-D: one row (linear filtering's j0 is -1 there) */
    for (int c = 0; c < 4; c++) out[c] = 0.0;
    if (!in) {
        for (int c = 0; c < 4; c++) out[c] = t.tex.borderColor[c];
        return;
    }
    const char *p = t.base + (layer * t.height + (size_t)y) * t.pitch + (size_t)x * t.elem;
    for (int c = 0; c < t.comps; c++) out[c] = component(t, p, c);
}

/* alpha in 9-bit fixed point with 8 fractional bits (Texture Fetching) */
double frac8(double f) { return floor(f * 256.0 + 0.5) / 256.0; }

/* Cubemap face and coordinates of direction (x, y, z) (Programming Guide,
   "Cubemap Textures": the face is that of the component of largest
   magnitude, m its magnitude, s and t per the Guide's table; then
   u = (s/m + 1) / 2, v = (t/m + 1) / 2). On a tie the emulator prefers x,
   then y (the table's conditions are strict inequalities). */
int cube_face(double x, double y, double z, double *u, double *v) {
    double ax = fabs(x), ay = fabs(y), az = fabs(z), m, s, tt;
    int face;
    if (ax >= ay && ax >= az) {
        face = x >= 0 ? 0 : 1;
        m = ax;
        s = x >= 0 ? -z : z;
        tt = -y;
    } else if (ay >= az) {
        face = y >= 0 ? 2 : 3;
        m = ay;
        s = x;
        tt = y >= 0 ? z : -z;
    } else {
        face = z >= 0 ? 4 : 5;
        m = az;
        s = z >= 0 ? x : -x;
        tt = -y;
    }
    if (m == 0) m = 1;   /* (0, 0, 0): the centre of face 0 */
    *u = (s / m + 1.0) / 2.0;
    *v = (tt / m + 1.0) / 2.0;
    return face;
}

} /* namespace */

void tex_read(cudaTextureObject_t h, int call, long long i, float xf, float yf, float zf, int layer_in, double out[4]) {
    TexObj *tp = find_tex(h);
    if (!tp)
        kernel_fault(cudaErrorLaunchFailure, "texture fetch from texture object 0x%llx, which is not a live texture object "
                     "(destroyed, or never created)", (unsigned long long)h);
    const TexObj &t = *tp;
    static const char *names[] = {"tex1Dfetch", "tex1D", "tex2D", "tex1DLayered", "tex2DLayered", "texCubemap",
                                  "texCubemapLayered"};
    bool plain = !t.linear_mem && !t.layered && !t.cubemap;
    bool fits = false;
    switch (call) {
    case TEX_1DFETCH: fits = t.linear_mem; break;
    case TEX_1D: fits = plain && t.dims == 1; break;
    case TEX_2D: fits = plain && t.dims == 2; break;
    case TEX_1DLAYERED: fits = t.layered && !t.cubemap && t.dims == 1; break;
    case TEX_2DLAYERED: fits = t.layered && !t.cubemap && t.dims == 2; break;
    case TEX_CUBEMAP: fits = t.cubemap && !t.layered; break;
    case TEX_CUBEMAPLAYERED: fits = t.cubemap && t.layered; break;
    }
    if (!fits)
        kernel_fault(cudaErrorLaunchFailure, "%s on a texture object over %s: tex1Dfetch reads linear memory, tex1D a 1-D "
                     "CUDA array, tex2D pitch-2D memory or a 2-D CUDA array, tex1DLayered / tex2DLayered a layered array, "
                     "texCubemap / texCubemapLayered a cubemap (layered) array (CUDA C++ Programming Guide, Texture and "
                     "Surface Memory)", names[call],
                     t.linear_mem ? "linear memory" : t.cubemap ? (t.layered ? "a layered cubemap array" : "a cubemap array")
                     : t.layered ? (t.dims == 1 ? "a 1-D layered array" : "a 2-D layered array")
                     : t.dims == 1 ? "a 1-D CUDA array" : "2-D memory");
    std::string why;
    if (!device_range(t.device, t.base, t.pitch * (t.height * t.layers - 1) + t.width * t.elem, &why))
        kernel_fault(cudaErrorIllegalAddress, "%s: the texture's memory is no longer memory the device can access (%s)",
                     names[call], why.c_str());
    if (call == TEX_1DFETCH) {
        /* integer index: border or clamp, no filtering */
        texel(t, i, 0, 0, out);
        return;
    }
    double x = xf, y = yf;
    long long layer = layer_in;
    if (t.cubemap) {
        /* a layered cubemap's layer l is faces 6l .. 6l+5 (Guide, "Cubemap Layered Textures") */
        long long cubes = (long long)t.layers / 6;
        if (layer < 0 || layer >= cubes)
            kernel_fault(cudaErrorLaunchFailure, "%s: layer %lld of a cubemap array of %lld cubemap(s)", names[call], layer,
                         cubes);
        layer = layer * 6 + cube_face(xf, yf, zf, &x, &y);
        x *= (double)t.width;
        y *= (double)t.height;
    } else {
        if (layer < 0 || layer >= (long long)t.layers)
            kernel_fault(cudaErrorLaunchFailure, "%s: layer %lld of a texture of %zu layer(s)", names[call], layer, t.layers);
        if (t.tex.normalizedCoords) {
            x *= (double)t.width;
            y *= (double)t.height;
        }
    }
    if (t.tex.filterMode == cudaFilterModePoint) {
        texel(t, (long long)floor(x), (long long)floor(y), (size_t)layer, out);
        return;
    }
    double xb = x - 0.5, yb = y - 0.5;
    long long i0 = (long long)floor(xb), j0 = (long long)floor(yb);
    double a = frac8(xb - floor(xb)), b = frac8(yb - floor(yb));
    double t00[4], t10[4];
    texel(t, i0, j0, (size_t)layer, t00);
    texel(t, i0 + 1, j0, (size_t)layer, t10);
    if (t.dims == 1) {
        for (int c = 0; c < 4; c++) out[c] = (float)((1 - a) * t00[c] + a * t10[c]);
        return;
    }
    double t01[4], t11[4];
    texel(t, i0, j0 + 1, (size_t)layer, t01);
    texel(t, i0 + 1, j0 + 1, (size_t)layer, t11);
    for (int c = 0; c < 4; c++)
        out[c] = (float)((1 - a) * (1 - b) * t00[c] + a * (1 - b) * t10[c] + (1 - a) * b * t01[c] + a * b * t11[c]);
}

namespace {
/* >>surface objects: kept apart from texture objects; a handle carries the
   tag kSurfTag so that neither kind is taken for the other. */
const uint64_t kSurfTag = 0x80000000u;
struct SurfObj {
    uint32_t gen = 0;
    bool live = false;
    int device = 0;
    cudaResourceDesc res{};
    char *base = nullptr;
    size_t width = 0, height = 1, layers = 1, elem = 0, pitch = 0;
    bool one_d = false, layered = false, cubemap = false;
};
SurfObj g_surf[kSlots];

cudaSurfaceObject_t surf_handle_of(unsigned slot) { return ((cudaSurfaceObject_t)g_surf[slot].gen << 32) | kSurfTag | (slot + 1); }
SurfObj *find_surf(cudaSurfaceObject_t h) {
    if (!(h & kSurfTag)) return nullptr;
    unsigned slot = (unsigned)(h & 0x7fffffffu);
    if (!slot || slot > kSlots) return nullptr;
    SurfObj *s = &g_surf[slot - 1];
    if (!s->live || s->gen != (uint32_t)(h >> 32)) return nullptr;
    return s;
}
} /* namespace */

void surf_access(cudaSurfaceObject_t h, int call, int x, int y, int layer, int mode, void *buf, size_t size, bool write) {
    static const char *rd[] = {"surf1Dread", "surf2Dread", "surf1DLayeredread", "surf2DLayeredread", "surfCubemapread",
                               "surfCubemapLayeredread"};
    static const char *wr[] = {"surf1Dwrite", "surf2Dwrite", "surf1DLayeredwrite", "surf2DLayeredwrite", "surfCubemapwrite",
                               "surfCubemapLayeredwrite"};
    const char *name = write ? wr[call] : rd[call];
    SurfObj *sp = find_surf(h);
    if (!sp)
        kernel_fault(cudaErrorLaunchFailure, "%s on surface object 0x%llx, which is not a live surface object (destroyed, "
                     "or never created)", name, (unsigned long long)h);
    const SurfObj &s = *sp;
    bool fits = false;
    switch (call) {
    case SURF_1D: fits = s.one_d && !s.layered; break;
    case SURF_2D: fits = !s.one_d && !s.layered && !s.cubemap; break;
    case SURF_1DLAYERED: fits = s.one_d && s.layered; break;
    case SURF_2DLAYERED: fits = !s.one_d && s.layered && !s.cubemap; break;
    case SURF_CUBEMAP: fits = s.cubemap && !s.layered; break;
    case SURF_CUBEMAPLAYERED: fits = s.cubemap && s.layered; break;
    }
    if (!fits)
        kernel_fault(cudaErrorLaunchFailure, "%s on a surface object over %s (CUDA C++ Programming Guide, Surface "
                     "Functions: each function reads or writes the array of its own dimensionality)", name,
                     s.cubemap ? (s.layered ? "a layered cubemap array" : "a cubemap array") : s.layered ? (s.one_d ? "a 1-D layered array"
                     : "a 2-D layered array") : s.one_d ? "a 1-D array" : "a 2-D array");
    if ((mode != cudaBoundaryModeTrap && mode != cudaBoundaryModeClamp && mode != cudaBoundaryModeZero))
        kernel_fault(cudaErrorLaunchFailure, "%s with boundary mode %d (cudaBoundaryModeZero, Clamp or Trap)", name, mode);
    if (x % (long long)size)
        kernel_fault(cudaErrorMisalignedAddress, "%s: x = %d is no multiple of the %zu bytes accessed (x is a byte offset: "
                     "Programming Guide, Surface Functions; an unaligned offset is not defined, the emulator refuses it)",
                     name, x, size);
    if (layer < 0 || (size_t)layer >= s.layers)
        kernel_fault(cudaErrorLaunchFailure, "%s: layer %d of a surface of %zu layer(s)", name, layer, s.layers);
    long long row = (long long)(s.width * s.elem);
    long long xx = x, yy = y;
    bool out = xx < 0 || xx + (long long)size > row || yy < 0 || yy >= (long long)s.height;
    if (out) {
        if (mode == cudaBoundaryModeTrap)
            kernel_fault(cudaErrorLaunchFailure, "%s: (x = %d bytes, y = %d) is outside the %zu x %zu surface of %zu-byte "
                         "elements (%lld bytes a row), and boundaryMode is cudaBoundaryModeTrap (Programming Guide, Surface "
                         "Functions: \"out-of-range accesses cause the kernel execution to fail\")",
                         name, x, y, s.width, s.height, s.elem, row);
        if (mode == cudaBoundaryModeZero) {
            if (!write) memset(buf, 0, size);
            return;
        }
        /* clamp: to the last whole access in the row, the last row */
        long long last = size <= (size_t)row ? (row - (long long)size) / (long long)size * (long long)size : 0;
        xx = xx < 0 ? 0 : xx > last ? last : xx;
        yy = yy < 0 ? 0 : yy >= (long long)s.height ? (long long)s.height - 1 : yy;
        if (xx + (long long)size > row)
            kernel_fault(cudaErrorLaunchFailure, "%s: a %zu-byte access is wider than the surface's %lld-byte row", name,
                         size, row);
    }
    char *p = s.base + ((size_t)layer * s.height + (size_t)yy) * s.pitch + (size_t)xx;
    std::string why;
    if (!device_range(s.device, p, size, &why))
        kernel_fault(cudaErrorIllegalAddress, "%s: the surface's memory is no longer memory the device can access (%s)", name,
                     why.c_str());
    if (write) memcpy(p, buf, size);
    else memcpy(buf, p, size);
}

bool array_view(cudaArray_const_t a, ArrayView *v);

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

/* >>CUDA arrays: 1-D (height 0) and 2-D, rows of width elements; layered
   and cubemap arrays (cudaMalloc3DArray), layers of height rows. */
namespace {
/* Limits of a compute capability 9.0 device (Programming Guide, "Features
   and Technical Specifications", its table of technical specifications):
   1-D 131072 texels, 2-D 131072 x 65536; 1-D layered 32768 x 2048 layers;
   2-D layered 32768 x 32768 x 2048 layers; cubemap 32768 wide; cubemap
   layered 32768 wide, 2046 layers (faces). */
const size_t kMax1D = 131072, kMax2DW = 131072, kMax2DH = 65536, kMaxLayeredW = 32768, kMaxLayers = 2048,
             kMaxCubeW = 32768, kMaxCubeLayers = 2046;

cudaError_t new_array(cudaArray_t *array, const cudaChannelFormatDesc &desc, size_t width, size_t height, size_t layers,
                      bool one_d, bool layered, bool cubemap, unsigned flags) {
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e) return e;
    int comps;
    size_t elem;
    if (!format_of(desc, &comps, &elem)) return fail(cudaErrorInvalidChannelDescriptor);
    CuArray *a = new CuArray{kArrayMagic, dev, desc, width, height, layers, one_d, layered, cubemap, flags, elem,
                             width * elem, nullptr};
    a->data = (char *)internal_alloc(dev, a->pitch * a->height * a->layers);
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
/* flags the emulator does not emulate: texture gather (tex2Dgather), and
   the sparse / deferred-mapping / depth / color-attachment bits */
bool refuse_flags(unsigned flags) {
    if (flags & cudaArrayTextureGather) {
        say_once("a CUDA array for texture gather (cudaArrayTextureGather)");
        return true;
    }
    if (flags & ~0xfu) {
        say_once("cudaMallocArray / cudaMalloc3DArray flags beyond Layered, SurfaceLoadStore, Cubemap and TextureGather");
        return true;
    }
    return false;
}
} /* namespace */

/* Runtime API, cudaMallocArray: flags cudaArrayDefault,
   cudaArraySurfaceLoadStore, cudaArrayTextureGather, ...; layered and
   cubemap arrays come from cudaMalloc3DArray only. */
extern "C" cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
                                      unsigned int flags) { CUEMU_API_CALL();
    if (!array || !desc || !width) return fail(cudaErrorInvalidValue);
    if (flags & (cudaArrayLayered | cudaArrayCubemap)) return fail(cudaErrorInvalidValue);
    if (refuse_flags(flags)) return fail(cudaErrorNotSupported);
    if (width > kMax2DW || height > kMax2DH || (height == 0 && width > kMax1D)) return fail(cudaErrorInvalidValue);
    return new_array(array, *desc, width, height ? height : 1, 1, height == 0, false, false, flags);
}

/* Runtime API, cudaMalloc3DArray: "A 1D array is allocated if the height
   and depth extents are both zero. A 2D array is allocated if only the
   depth extent is zero. A 3D array is allocated if all three extents are
   non-zero. A 1D layered CUDA array is allocated if only the height extent
   is zero and the cudaArrayLayered flag is set ... A 2D layered CUDA array
   is allocated if all three extents are non-zero and the cudaArrayLayered
   flag is set ... A cubemap CUDA array is allocated if all three extents
   are non-zero and the cudaArrayCubemap flag is set. Width must be equal to
   height, and depth must be six. ... A cubemap layered CUDA array is
   allocated if all three extents are non-zero, and both, cudaArrayCubemap
   and cudaArrayLayered flags are set. Width must be equal to height, and
   depth must be a multiple of six." Other shapes: cudaErrorInvalidValue. */
extern "C" cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, struct cudaExtent ext,
                                        unsigned int flags) { CUEMU_API_CALL();
    if (!array || !desc || !ext.width) return fail(cudaErrorInvalidValue);
    bool layered = flags & cudaArrayLayered, cube = flags & cudaArrayCubemap;
    if (refuse_flags(flags)) return fail(cudaErrorNotSupported);
    size_t w = ext.width, h = ext.height, d = ext.depth;
    if (cube) {
        if (!h || !d || w != h || (layered ? d % 6 != 0 : d != 6)) return fail(cudaErrorInvalidValue);
        if (w > kMaxCubeW || (layered && d > kMaxCubeLayers)) return fail(cudaErrorInvalidValue);
        return new_array(array, *desc, w, h, d, false, layered, true, flags);
    }
    if (layered) {
        if (!d) return fail(cudaErrorInvalidValue);
        if (w > kMaxLayeredW || h > kMaxLayeredW || d > kMaxLayers) return fail(cudaErrorInvalidValue);
        return new_array(array, *desc, w, h ? h : 1, d, h == 0, true, false, flags);
    }
    if (d == 0) {
        if (w > kMax2DW || h > kMax2DH || (h == 0 && w > kMax1D)) return fail(cudaErrorInvalidValue);
        return new_array(array, *desc, w, h ? h : 1, 1, h == 0, false, false, flags);
    }
    if (!h) return fail(cudaErrorInvalidValue);   /* height 0, depth not: no such shape without cudaArrayLayered */
    say_once("a 3-D CUDA array (cudaMalloc3DArray without cudaArrayLayered / cudaArrayCubemap; tex3D)");
    return fail(cudaErrorNotSupported);
}

/* Runtime API, cudaArrayGetInfo: the format, the extent as allocated
   (height 0 for 1-D, depth 0 unless layered / cubemap) and the flags. */
extern "C" cudaError_t cudaArrayGetInfo(struct cudaChannelFormatDesc *desc, struct cudaExtent *extent, unsigned int *flags,
                                       cudaArray_t array) { CUEMU_API_CALL();
    CuArray *a = live_array(array);
    if (!a) return fail(cudaErrorInvalidValue);
    if (desc) *desc = a->desc;
    if (extent) *extent = cudaExtent{a->width, a->one_d ? 0 : a->height, (a->layered || a->cubemap) ? a->layers : 0};
    if (flags) *flags = a->flags;
    return cudaSuccess;
}

bool cuemu::array_view(cudaArray_const_t arr, ArrayView *v) {
    CuArray *a = live_array(arr);
    if (!a) return false;
    *v = ArrayView{a->data, a->width, a->height, a->layers, a->elem, a->pitch};
    return true;
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
    if (td.seamlessCubemap) {
        say_once("seamless cubemap filtering (cudaTextureDesc::seamlessCubemap)");
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
        t.layered = a->layered;
        t.cubemap = a->cubemap;
        t.layers = a->layers;
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

/* >>surface objects (Runtime API, cudaCreateSurfaceObject: "resType must be
   cudaResourceTypeArray and res::array::array must be set to a valid CUDA
   array handle"; Programming Guide, "Surface Memory": a CUDA array
   "created with the cudaArraySurfaceLoadStore flag, can be read and written
   via a surface object"; the Driver API's cuSurfObjectCreate: "flags must
   be set to zero"). */
extern "C" cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *pSurfObject, const struct cudaResourceDesc *pResDesc) { CUEMU_API_CALL();
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e) return e;
    if (!pSurfObject || !pResDesc) return fail(cudaErrorInvalidValue);
    if (pResDesc->resType != cudaResourceTypeArray || pResDesc->flags) return fail(cudaErrorInvalidValue);
    CuArray *a = live_array(pResDesc->res.array.array);
    if (!a || !(a->flags & cudaArraySurfaceLoadStore)) return fail(cudaErrorInvalidValue);
    SurfObj so;
    so.device = dev;
    so.res = *pResDesc;
    so.base = a->data;
    so.width = a->width;
    so.height = a->height;
    so.layers = a->layers;
    so.elem = a->elem;
    so.pitch = a->pitch;
    so.one_d = a->one_d;
    so.layered = a->layered;
    so.cubemap = a->cubemap;
    std::lock_guard<std::mutex> lk(g_tex_mu);
    for (unsigned i = 0; i < kSlots; i++)
        if (!g_surf[i].live) {
            so.gen = g_surf[i].gen + 1;
            so.live = true;
            g_surf[i] = so;
            *pSurfObject = surf_handle_of(i);
            return cudaSuccess;
        }
    return fail(cudaErrorMemoryAllocation);
}

/* As texture objects: the object goes once the work queued so far is done. */
extern "C" cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject) { CUEMU_API_CALL();
    if (!surfObject) return cudaSuccess;
    if (!find_surf(surfObject)) return fail(cudaErrorInvalidValue);
    cudaDeviceSynchronize();
    std::lock_guard<std::mutex> lk(g_tex_mu);
    SurfObj *so = find_surf(surfObject);
    if (so) so->live = false;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGetSurfaceObjectResourceDesc(struct cudaResourceDesc *pResDesc, cudaSurfaceObject_t surfObject) { CUEMU_API_CALL();
    SurfObj *so = find_surf(surfObject);
    if (!so || !pResDesc) return fail(cudaErrorInvalidValue);
    *pResDesc = so->res;
    return cudaSuccess;
}
