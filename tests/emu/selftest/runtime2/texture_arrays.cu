/* texture_arrays.cu - layered and cubemap textures, surface objects (CUDA
   C++ Programming Guide, "Texture and Surface Memory": layered textures,
   cubemap textures and their face table, surface memory; "Surface
   Functions": x in bytes, boundary modes; "Cubemap Surfaces"; Runtime API cudaMalloc3DArray,
   cudaCreateSurfaceObject, cudaMemcpy3D with CUDA arrays).
   Each rule with a control: a fetch or access the rule allows, then the
   one it forbids. Cases that end the grid run one per process (a sticky
   error), chosen by CUEMU_ST_CASE:
     surf_trap       an out-of-range surf2Dwrite with cudaBoundaryModeTrap
     surf_misaligned an x that is no multiple of the access size (emulator: refused)
     layer_range     tex2DLayered beyond the last layer (emulator: refused)
     wrong_function  tex2D on a layered texture object (emulator: refused)
   Compiles with the real nvcc (-arch=sm_90 -c). */
#include <cuda_runtime.h>
#include "selftest.h"

static float val3(int l, int y, int x) { return (float)(100 * l + 10 * y + x); }

__global__ void fetch2d_layered(cudaTextureObject_t t, const float3 *at, int n, float *out) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex2DLayered<float>(t, at[i].x, at[i].y, (int)at[i].z);
}
__global__ void fetch1d_layered(cudaTextureObject_t t, const float2 *at, int n, float *out) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex1DLayered<float>(t, at[i].x, (int)at[i].y);
}
__global__ void fetch_cube(cudaTextureObject_t t, const float4 *dir, int n, float *out) {
    int i = threadIdx.x;
    if (i < n) out[i] = texCubemap<float>(t, dir[i].x, dir[i].y, dir[i].z);
}
__global__ void fetch_cube_layered(cudaTextureObject_t t, const float4 *dir, int n, float *out) {
    int i = threadIdx.x;
    if (i < n) out[i] = texCubemapLayered<float>(t, dir[i].x, dir[i].y, dir[i].z, (int)dir[i].w);
}
__global__ void fetch2d(cudaTextureObject_t t, float x, float y, float *out) { *out = tex2D<float>(t, x, y); }
__global__ void fetch1d(cudaTextureObject_t t, float x, float *out) { *out = tex1D<float>(t, x); }

static cudaTextureObject_t make_tex(cudaArray_t a, cudaTextureAddressMode am, cudaTextureFilterMode fm, int norm,
                                    cudaError_t *err = nullptr) {
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = am;
    td.filterMode = fm;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = norm;
    td.borderColor[0] = -7.0f;
    cudaTextureObject_t t = 0;
    cudaError_t e = cudaCreateTextureObject(&t, &r, &td, nullptr);
    if (err) *err = e;
    return t;
}

/* host (W, H, L) floats into a layered array and back with cudaMemcpy3D: extents in elements */
static cudaError_t put3d(cudaArray_t a, const float *h, int W, int H, int L) {
    cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = make_cudaPitchedPtr((void *)h, W * sizeof(float), W, H);
    p.dstArray = a;
    p.extent = make_cudaExtent(W, H, L);
    p.kind = cudaMemcpyHostToDevice;
    return cudaMemcpy3D(&p);
}
static cudaError_t get3d(float *h, cudaArray_t a, int W, int H, int L) {
    cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcArray = a;
    p.dstPtr = make_cudaPitchedPtr(h, W * sizeof(float), W, H);
    p.extent = make_cudaExtent(W, H, L);
    p.kind = cudaMemcpyDeviceToHost;
    return cudaMemcpy3D(&p);
}

ST_TEST(layered_2d) {
    const int W = 4, H = 3, L = 3;
    float h[L][H][W], back[L][H][W];
    for (int l = 0; l < L; l++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) h[l][y][x] = val3(l, y, x);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, H, L), cudaArrayLayered) == cudaSuccess);
    ST_CHECK(put3d(a, &h[0][0][0], W, H, L) == cudaSuccess);
    memset(back, 0, sizeof back);
    ST_CHECK(get3d(&back[0][0][0], a, W, H, L) == cudaSuccess && memcmp(back, h, sizeof h) == 0);
    cudaExtent ext;
    unsigned flags = 99;
    cudaChannelFormatDesc got;
    ST_CHECK(cudaArrayGetInfo(&got, &ext, &flags, a) == cudaSuccess);
    ST_CHECKF(ext.width == W && ext.height == H && ext.depth == L && flags == cudaArrayLayered && got.x == 32,
              "info %zu %zu %zu flags %u", ext.width, ext.height, ext.depth, flags);
    /* a copy reaching past the last layer */
    cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = make_cudaPitchedPtr(&h[0][0][0], W * sizeof(float), W, H);
    p.dstArray = a;
    p.dstPos = make_cudaPos(0, 0, 1);
    p.extent = make_cudaExtent(W, H, L);
    p.kind = cudaMemcpyHostToDevice;
    ST_CHECK(cudaMemcpy3D(&p) != cudaSuccess);
    cudaGetLastError();

    const int n = 6;
    float3 at[n];
    float out[n], *o;
    float3 *dat;
    cudaMalloc(&o, sizeof out);
    cudaMalloc(&dat, sizeof at);
    /* point, unnormalized: texel centres of each layer */
    cudaTextureObject_t pt = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 0);
    at[0] = make_float3(0.5f, 0.5f, 0); at[1] = make_float3(2.5f, 1.5f, 1); at[2] = make_float3(3.5f, 2.5f, 2);
    at[3] = make_float3(9.0f, -3.0f, 1);   /* clamps to (3, 0) of layer 1 */
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d_layered<<<1, 4>>>(pt, dat, 4, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == val3(0, 0, 0) && out[1] == val3(1, 1, 2) && out[2] == val3(2, 2, 3) && out[3] == val3(1, 0, 3),
              "point: %g %g %g %g", out[0], out[1], out[2], out[3]);
    /* linear: filtering stays within the layer. The control blends two rows
       of layer 1 (y = 1.75: rows 1 and 2, 3:1); at y = H (half a texel past
       the last row) the clamped row is layer 1's own last row, never layer 2's
       first: the result is exactly the last row's value. */
    cudaTextureObject_t lin = make_tex(a, cudaAddressModeClamp, cudaFilterModeLinear, 0);
    at[0] = make_float3(1.5f, 1.75f, 1); at[1] = make_float3(1.5f, (float)H, 1); at[2] = make_float3(1.5f, 0.0f, 2);
    at[3] = make_float3(2.0f, 2.5f, 0);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d_layered<<<1, 4>>>(lin, dat, 4, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    float want0 = 0.75f * val3(1, 1, 1) + 0.25f * val3(1, 2, 1);
    float want3 = 0.5f * val3(0, 2, 1) + 0.5f * val3(0, 2, 2);
    ST_CHECKF(out[0] == want0 && out[1] == val3(1, 2, 1) && out[2] == val3(2, 0, 1) && out[3] == want3,
              "linear: %g (want %g) %g (want %g) %g %g (want %g)", out[0], want0, out[1], val3(1, 2, 1), out[2], out[3], want3);
    /* border: half a texel past the last row blends the border colour, still not the next layer */
    cudaTextureObject_t bor = make_tex(a, cudaAddressModeBorder, cudaFilterModeLinear, 0);
    at[0] = make_float3(1.5f, (float)H, 0);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d_layered<<<1, 1>>>(bor, dat, 1, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == 0.5f * val3(0, 2, 1) + 0.5f * -7.0f, "border: %g", out[0]);
    /* normalized with wrap: (1 + 1.5/W, 2.5/H) wraps to texel (1, 2) */
    cudaTextureObject_t wrap = make_tex(a, cudaAddressModeWrap, cudaFilterModePoint, 1);
    at[0] = make_float3(1.0f + 1.5f / W, 2.5f / H, 2);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d_layered<<<1, 1>>>(wrap, dat, 1, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == val3(2, 2, 1), "wrap: %g", out[0]);
    cudaDestroyTextureObject(pt);
    cudaDestroyTextureObject(lin);
    cudaDestroyTextureObject(bor);
    cudaDestroyTextureObject(wrap);
    ST_CHECK(cudaFreeArray(a) == cudaSuccess);
    cudaFree(o);
    cudaFree(dat);
}

ST_TEST(layered_1d) {
    const int W = 5, L = 2;
    float h[L][W];
    for (int l = 0; l < L; l++)
        for (int x = 0; x < W; x++) h[l][x] = val3(l, 0, x * x);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    /* 1-D layered: height 0, depth the layers */
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, 0, L), cudaArrayLayered) == cudaSuccess);
    ST_CHECK(put3d(a, &h[0][0], W, 1, L) == cudaSuccess);
    cudaExtent ext;
    ST_CHECK(cudaArrayGetInfo(nullptr, &ext, nullptr, a) == cudaSuccess && ext.width == W && ext.height == 0 && ext.depth == L);
    cudaTextureObject_t lin = make_tex(a, cudaAddressModeClamp, cudaFilterModeLinear, 0);
    float2 at[4];
    at[0] = make_float2(2.75f, 0); at[1] = make_float2(2.75f, 1); at[2] = make_float2((float)W, 0);
    at[3] = make_float2(0.0f, 1);
    float2 *dat;
    float out[4], *o;
    cudaMalloc(&dat, sizeof at);
    cudaMalloc(&o, sizeof out);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch1d_layered<<<1, 4>>>(lin, dat, 4, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    /* x = 2.75: texels 2 and 3, 3:1; x = W: the last texel of layer 0, not layer 1's first */
    float w0 = 0.75f * h[0][2] + 0.25f * h[0][3], w1 = 0.75f * h[1][2] + 0.25f * h[1][3];
    ST_CHECKF(out[0] == w0 && out[1] == w1 && out[2] == h[0][W - 1] && out[3] == h[1][0], "%g %g %g %g", out[0], out[1],
              out[2], out[3]);
    cudaDestroyTextureObject(lin);
    cudaFreeArray(a);
    /* a plain 1-D array, linear: the same blend (its one row, nothing before it) */
    ST_CHECK(cudaMallocArray(&a, &cd, W, 0) == cudaSuccess);
    ST_CHECK(cudaMemcpy2DToArray(a, 0, 0, h[1], sizeof h[1], sizeof h[1], 1, cudaMemcpyHostToDevice) == cudaSuccess);
    lin = make_tex(a, cudaAddressModeClamp, cudaFilterModeLinear, 0);
    fetch1d<<<1, 1>>>(lin, 2.75f, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == w1, "tex1D: %g (want %g)", out[0], w1);
    cudaDestroyTextureObject(lin);
    cudaFreeArray(a);
    cudaFree(dat);
    cudaFree(o);
}

/* cudaMalloc3DArray's shapes: a control that succeeds beside each refusal */
ST_TEST(malloc3d_array_rules) {
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr;
    cudaError_t e;
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 8, 6), cudaArrayCubemap) == cudaSuccess);
    cudaFreeArray(a);
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 4, 6), cudaArrayCubemap);
    ST_CHECKF(e == cudaErrorInvalidValue, "cubemap 8 x 4: %s", cudaGetErrorName(e));
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 8, 5), cudaArrayCubemap);
    ST_CHECKF(e == cudaErrorInvalidValue, "cubemap of 5 faces: %s", cudaGetErrorName(e));
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 8, 12), cudaArrayCubemap);
    ST_CHECKF(e == cudaErrorInvalidValue, "cubemap of 12 faces, not layered: %s", cudaGetErrorName(e));
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 8, 12), cudaArrayCubemap | cudaArrayLayered) == cudaSuccess);
    cudaFreeArray(a);
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 8, 9), cudaArrayCubemap | cudaArrayLayered);
    ST_CHECKF(e == cudaErrorInvalidValue, "layered cubemap of 9 faces: %s", cudaGetErrorName(e));
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 8, 0), cudaArrayLayered);
    ST_CHECKF(e == cudaErrorInvalidValue, "layered, no layers: %s", cudaGetErrorName(e));
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 0, 3), 0);
    ST_CHECKF(e == cudaErrorInvalidValue, "height 0, depth 3, not layered: %s", cudaGetErrorName(e));
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(8, 3, 0), 0) == cudaSuccess);   /* a 2-D array */
    cudaFreeArray(a);
    /* the layer limit, as the device reports it */
    int dev = 0, layers = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp prop;
    ST_CHECK(cudaGetDeviceProperties(&prop, dev) == cudaSuccess);
    ST_CHECK(cudaDeviceGetAttribute(&layers, cudaDevAttrMaxTexture2DLayeredLayers, dev) == cudaSuccess);
    ST_CHECKF(layers > 0 && layers == prop.maxTexture2DLayered[2], "layers %d / %d", layers, prop.maxTexture2DLayered[2]);
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(2, 2, layers), cudaArrayLayered) == cudaSuccess);
    cudaFreeArray(a);
    e = cudaMalloc3DArray(&a, &cd, make_cudaExtent(2, 2, layers + 1), cudaArrayLayered);
    ST_CHECKF(e == cudaErrorInvalidValue, "%d layers: %s", layers + 1, cudaGetErrorName(e));
    /* layered and cubemap are cudaMalloc3DArray's alone */
    ST_CHECK(cudaMallocArray(&a, &cd, 8, 8, cudaArraySurfaceLoadStore) == cudaSuccess);
    cudaFreeArray(a);
    e = cudaMallocArray(&a, &cd, 8, 8, cudaArrayLayered);
    ST_CHECKF(e == cudaErrorInvalidValue, "cudaMallocArray with cudaArrayLayered: %s", cudaGetErrorName(e));
    cudaGetLastError();
}

/* texel (x, y) of face f: 1000 f + 10 y + x */
static float cube_val(int l, int f, int y, int x) { return (float)(10000 * l + 1000 * f + 10 * y + x); }
/* The direction whose fetch lands at the centre of texel (x, y) of face f,
   from the Guide's face table read backwards: face 0 (+x): s = -z, t = -y;
   face 1 (-x): s = z, t = -y; face 2 (+y): s = x, t = z; face 3 (-y): s = x,
   t = -z; face 4 (+z): s = x, t = -y; face 5 (-z): s = -x, t = -y; with
   s/m = 2u - 1, t/m = 2v - 1. */
static float4 cube_dir(int f, float u, float v, float scale, int layer) {
    float s = 2 * u - 1, t = 2 * v - 1, x, y, z;
    switch (f) {
    case 0: x = 1; z = -s; y = -t; break;
    case 1: x = -1; z = s; y = -t; break;
    case 2: y = 1; x = s; z = t; break;
    case 3: y = -1; x = s; z = -t; break;
    case 4: z = 1; x = s; y = -t; break;
    default: z = -1; x = -s; y = -t; break;
    }
    return make_float4(x * scale, y * scale, z * scale, (float)layer);
}

ST_TEST(cubemap) {
    const int W = 4, F = 6, n = F * 2 + 2;
    float h[F][W][W];
    for (int f = 0; f < F; f++)
        for (int y = 0; y < W; y++)
            for (int x = 0; x < W; x++) h[f][y][x] = cube_val(0, f, y, x);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, W, F), cudaArrayCubemap) == cudaSuccess);
    ST_CHECK(put3d(a, &h[0][0][0], W, W, F) == cudaSuccess);
    cudaTextureObject_t pt = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 1);
    float4 dir[n], *ddir;
    float out[n], *o;
    cudaMalloc(&ddir, sizeof dir);
    cudaMalloc(&o, sizeof out);
    /* each face: texel (1, 2) at unit length, texel (3, 0) at length 5 (only the direction counts) */
    for (int f = 0; f < F; f++) {
        dir[2 * f] = cube_dir(f, 1.5f / W, 2.5f / W, 1.0f, 0);
        dir[2 * f + 1] = cube_dir(f, 3.5f / W, 0.5f / W, 5.0f, 0);
    }
    /* off-axis: (0.9, 0.2, -0.5): x largest, +x face, s = -z = 0.5/0.9, t = -y = -0.2/0.9 */
    dir[12] = make_float4(0.9f, 0.2f, -0.5f, 0);
    dir[13] = make_float4(-0.27f, 0.25f, -0.6f, 0);   /* -z face: s = -x = 0.27/0.6, t = -y = -0.25/0.6 */
    cudaMemcpy(ddir, dir, sizeof dir, cudaMemcpyHostToDevice);
    fetch_cube<<<1, n>>>(pt, ddir, n, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int f = 0; f < F; f++)
        ST_CHECKF(out[2 * f] == h[f][2][1] && out[2 * f + 1] == h[f][0][3], "face %d: %g %g (want %g %g)", f, out[2 * f],
                  out[2 * f + 1], h[f][2][1], h[f][0][3]);
    /* u = (s/m + 1)/2 -> texel floor(u W) */
    int x12 = (int)((0.5 / 0.9 + 1) / 2 * W), y12 = (int)((-0.2 / 0.9 + 1) / 2 * W);
    int x13 = (int)((0.27 / 0.6 + 1) / 2 * W), y13 = (int)((-0.25 / 0.6 + 1) / 2 * W);
    ST_CHECKF(out[12] == h[0][y12][x12] && out[13] == h[5][y13][x13], "off-axis: %g (want %g) %g (want %g)", out[12],
              h[0][y12][x12], out[13], h[5][y13][x13]);
    /* linear, clamp: at the left edge of face 0 the filter takes face 0's
       own edge texel twice, nothing of the neighbouring face */
    cudaTextureObject_t lin = make_tex(a, cudaAddressModeClamp, cudaFilterModeLinear, 1);
    dir[0] = cube_dir(0, 0.0005f, 1.5f / W, 1.0f, 0);
    dir[1] = cube_dir(4, 1.0f / W, 1.5f / W, 1.0f, 0);   /* the control: between texels 0 and 1 of face 4 */
    cudaMemcpy(ddir, dir, sizeof dir, cudaMemcpyHostToDevice);
    fetch_cube<<<1, 2>>>(lin, ddir, 2, o);
    ST_CHECK(cudaMemcpy(out, o, 2 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == h[0][1][0] && out[1] == 0.5f * (h[4][1][0] + h[4][1][1]), "linear: %g (want %g) %g", out[0],
              h[0][1][0], out[1]);
    cudaDestroyTextureObject(pt);
    cudaDestroyTextureObject(lin);
    cudaFreeArray(a);

    /* a layered cubemap: cubemap l is faces 6l .. 6l + 5 */
    const int C = 2;
    static float hl[C * F][W][W];
    for (int l = 0; l < C; l++)
        for (int f = 0; f < F; f++)
            for (int y = 0; y < W; y++)
                for (int x = 0; x < W; x++) hl[l * F + f][y][x] = cube_val(l, f, y, x);
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, W, C * F), cudaArrayCubemap | cudaArrayLayered) == cudaSuccess);
    ST_CHECK(put3d(a, &hl[0][0][0], W, W, C * F) == cudaSuccess);
    cudaTextureObject_t lpt = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 1);
    dir[0] = cube_dir(2, 1.5f / W, 2.5f / W, 1.0f, 1);
    dir[1] = cube_dir(2, 1.5f / W, 2.5f / W, 1.0f, 0);
    dir[2] = cube_dir(5, 0.5f / W, 3.5f / W, 1.0f, 1);
    cudaMemcpy(ddir, dir, sizeof dir, cudaMemcpyHostToDevice);
    fetch_cube_layered<<<1, 3>>>(lpt, ddir, 3, o);
    ST_CHECK(cudaMemcpy(out, o, 3 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == cube_val(1, 2, 2, 1) && out[1] == cube_val(0, 2, 2, 1) && out[2] == cube_val(1, 5, 3, 0),
              "layered cubemap: %g %g %g", out[0], out[1], out[2]);
    cudaDestroyTextureObject(lpt);
    cudaFreeArray(a);
    cudaFree(ddir);
    cudaFree(o);
}

__global__ void surf_fill2d(cudaSurfaceObject_t s, int W, int H) {
    int x = threadIdx.x, y = threadIdx.y;
    if (x < W && y < H) surf2Dwrite((float)(10 * y + x) + 0.5f, s, x * (int)sizeof(float), y);   /* x in bytes */
}
__global__ void surf_copy2d(cudaSurfaceObject_t s, float *out, int W, int H) {
    int x = threadIdx.x, y = threadIdx.y;
    if (x < W && y < H) out[y * W + x] = surf2Dread<float>(s, x * (int)sizeof(float), y);
}
/* out-of-range accesses under clamp and zero */
__global__ void surf_edges(cudaSurfaceObject_t s, int W, float *out) {
    surf2Dwrite(-1.0f, s, 100 * (int)sizeof(float), 1, cudaBoundaryModeClamp);   /* -> (W-1, 1) */
    surf2Dwrite(-2.0f, s, -4, 0, cudaBoundaryModeClamp);                          /* -> (0, 0) */
    surf2Dwrite(-3.0f, s, W * (int)sizeof(float), 0, cudaBoundaryModeZero);       /* dropped */
    out[0] = surf2Dread<float>(s, W * (int)sizeof(float), 0, cudaBoundaryModeZero);
    out[1] = surf2Dread<float>(s, 0, 99, cudaBoundaryModeClamp);                 /* (0, H-1) */
    float r;
    surf2Dread(&r, s, 4, 0);
    out[2] = r;
}
__global__ void surf_fill1d(cudaSurfaceObject_t s, int W) {
    int x = threadIdx.x;
    if (x < W) surf1Dwrite(make_uchar4((unsigned char)x, 1, 2, 3), s, x * 4);
}
__global__ void surf_fill_layered(cudaSurfaceObject_t s, int W, int H, int L) {
    int x = threadIdx.x, y = threadIdx.y, l = threadIdx.z;
    if (x < W && y < H && l < L) surf2DLayeredwrite((float)(100 * l + 10 * y + x), s, x * 4, y, l);
}
__global__ void surf_layered_1d(cudaSurfaceObject_t s, int W, float *out) {
    int x = threadIdx.x;
    if (x < W) {
        surf1DLayeredwrite((float)x * 2, s, x * 4, 1);
        out[x] = surf1DLayeredread<float>(s, x * 4, 1);
    }
}

__global__ void surf_fill_cube(cudaSurfaceObject_t s, int W) {
    int x = threadIdx.x, y = threadIdx.y, f = threadIdx.z;
    if (x < W && y < W && f < 6) surfCubemapwrite((float)(1000 * f + 10 * y + x), s, x * 4, y, f);
}
__global__ void surf_cube_layered(cudaSurfaceObject_t s, float *out) {
    surfCubemapLayeredwrite(77.0f, s, 2 * 4, 3, 7);   /* layer 1, face 1 */
    out[0] = surfCubemapLayeredread<float>(s, 2 * 4, 3, 7);
}

static cudaSurfaceObject_t make_surf(cudaArray_t a, cudaError_t *err = nullptr) {
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaSurfaceObject_t s = 0;
    cudaError_t e = cudaCreateSurfaceObject(&s, &r);
    if (err) *err = e;
    return s;
}

ST_TEST(surfaces) {
    const int W = 4, H = 3;
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a, plain;
    ST_CHECK(cudaMallocArray(&a, &cd, W, H, cudaArraySurfaceLoadStore) == cudaSuccess);
    cudaSurfaceObject_t s = make_surf(a);
    ST_CHECK(s != 0);
    cudaResourceDesc back;
    ST_CHECK(cudaGetSurfaceObjectResourceDesc(&back, s) == cudaSuccess && back.res.array.array == a);
    /* the creation rules: an array made without cudaArraySurfaceLoadStore, a resource that is no array */
    cudaError_t e;
    ST_CHECK(cudaMallocArray(&plain, &cd, W, H) == cudaSuccess);
    make_surf(plain, &e);
    ST_CHECKF(e == cudaErrorInvalidValue, "array without cudaArraySurfaceLoadStore: %s", cudaGetErrorName(e));
    float *d;
    size_t pitch;
    cudaMallocPitch(&d, &pitch, W * sizeof(float), H);
    cudaResourceDesc pr;
    memset(&pr, 0, sizeof pr);
    pr.resType = cudaResourceTypePitch2D;
    pr.res.pitch2D.devPtr = d;
    pr.res.pitch2D.desc = cd;
    pr.res.pitch2D.width = W;
    pr.res.pitch2D.height = H;
    pr.res.pitch2D.pitchInBytes = pitch;
    cudaSurfaceObject_t sp = 0;
    e = cudaCreateSurfaceObject(&sp, &pr);
    ST_CHECKF(e != cudaSuccess, "a surface over pitch-2D memory: %s", cudaGetErrorName(e));
    cudaGetLastError();

    surf_fill2d<<<1, dim3(W, H)>>>(s, W, H);
    float h[H][W], *o;
    ST_CHECK(cudaMemcpy2DFromArray(h, W * sizeof(float), a, 0, 0, W * sizeof(float), H, cudaMemcpyDeviceToHost) ==
             cudaSuccess);
    ST_CHECKF(h[0][0] == 0.5f && h[1][2] == 12.5f && h[2][3] == 23.5f, "written: %g %g %g", h[0][0], h[1][2], h[2][3]);
    cudaMalloc(&o, sizeof h);
    surf_copy2d<<<1, dim3(W, H)>>>(s, o, W, H);
    float rd[H][W];
    ST_CHECK(cudaMemcpy(rd, o, sizeof rd, cudaMemcpyDeviceToHost) == cudaSuccess && memcmp(rd, h, sizeof h) == 0);
    /* what a texture over the same array reads */
    cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 0);
    fetch2d<<<1, 1>>>(t, 2.5f, 1.5f, o);
    float v = 0;
    ST_CHECK(cudaMemcpy(&v, o, sizeof v, cudaMemcpyDeviceToHost) == cudaSuccess && v == 12.5f);
    surf_edges<<<1, 1>>>(s, W, o);
    float edge[3];
    ST_CHECK(cudaMemcpy(edge, o, sizeof edge, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECK(cudaMemcpy2DFromArray(h, W * sizeof(float), a, 0, 0, W * sizeof(float), H, cudaMemcpyDeviceToHost) ==
             cudaSuccess);
    ST_CHECKF(h[1][W - 1] == -1.0f && h[0][0] == -2.0f && h[0][W - 1] == 3.5f && h[1][0] == 10.5f, "clamp/zero writes: %g %g %g",
              h[1][W - 1], h[0][0], h[0][W - 1]);
    ST_CHECKF(edge[0] == 0.0f && edge[1] == 20.5f && edge[2] == 1.5f, "clamp/zero reads: %g %g %g", edge[0], edge[1], edge[2]);
    cudaDestroyTextureObject(t);
    ST_CHECK(cudaDestroySurfaceObject(s) == cudaSuccess);
    ST_CHECK(cudaGetSurfaceObjectResourceDesc(&back, s) != cudaSuccess);
    cudaGetLastError();
    cudaFreeArray(a);
    cudaFreeArray(plain);
    cudaFree(d);

    /* 1-D, uchar4: 4 bytes an element, x = 4 i */
    cudaChannelFormatDesc c4 = cudaCreateChannelDesc<uchar4>();
    ST_CHECK(cudaMallocArray(&a, &c4, 8, 0, cudaArraySurfaceLoadStore) == cudaSuccess);
    s = make_surf(a);
    surf_fill1d<<<1, 8>>>(s, 8);
    uchar4 u[8];
    ST_CHECK(cudaMemcpy2DFromArray(u, sizeof u, a, 0, 0, sizeof u, 1, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(u[5].x == 5 && u[5].w == 3 && u[7].x == 7, "1-D: %d %d", u[5].x, u[7].x);
    cudaDestroySurfaceObject(s);
    cudaFreeArray(a);

    /* 2-D layered: written through the surface, read by cudaMemcpy3D and by tex2DLayered */
    const int L = 2;
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, H, L), cudaArrayLayered | cudaArraySurfaceLoadStore) == cudaSuccess);
    s = make_surf(a);
    surf_fill_layered<<<1, dim3(W, H, L)>>>(s, W, H, L);
    float hl[L][H][W];
    ST_CHECK(get3d(&hl[0][0][0], a, W, H, L) == cudaSuccess);
    ST_CHECKF(hl[1][2][3] == val3(1, 2, 3) && hl[0][1][2] == val3(0, 1, 2), "layered: %g %g", hl[1][2][3], hl[0][1][2]);
    cudaTextureObject_t tl = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 0);
    float3 at = make_float3(3.5f, 2.5f, 1), *dat;
    cudaMalloc(&dat, sizeof at);
    cudaMemcpy(dat, &at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d_layered<<<1, 1>>>(tl, dat, 1, o);
    ST_CHECK(cudaMemcpy(&v, o, sizeof v, cudaMemcpyDeviceToHost) == cudaSuccess && v == val3(1, 2, 3));
    cudaDestroyTextureObject(tl);
    cudaDestroySurfaceObject(s);
    cudaFreeArray(a);
    cudaFree(dat);

    /* cubemap surfaces: the face is the layer; read back by texCubemap */
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, W, 6), cudaArrayCubemap | cudaArraySurfaceLoadStore) == cudaSuccess);
    s = make_surf(a);
    surf_fill_cube<<<1, dim3(W, W, 6)>>>(s, W);
    cudaTextureObject_t tc = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 1);
    float4 dir = cube_dir(3, 1.5f / W, 2.5f / W, 1.0f, 0), *ddir;
    cudaMalloc(&ddir, sizeof dir);
    cudaMemcpy(ddir, &dir, sizeof dir, cudaMemcpyHostToDevice);
    fetch_cube<<<1, 1>>>(tc, ddir, 1, o);
    ST_CHECK(cudaMemcpy(&v, o, sizeof v, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(v == cube_val(0, 3, 2, 1), "cubemap surface, face 3: %g", v);
    cudaDestroyTextureObject(tc);
    cudaDestroySurfaceObject(s);
    cudaFreeArray(a);
    cudaFree(ddir);
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, W, 12), cudaArrayCubemap | cudaArrayLayered |
                               cudaArraySurfaceLoadStore) == cudaSuccess);
    s = make_surf(a);
    surf_cube_layered<<<1, 1>>>(s, o);
    static float hc[12][W][W];
    ST_CHECK(get3d(&hc[0][0][0], a, W, W, 12) == cudaSuccess && cudaMemcpy(&v, o, sizeof v, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(hc[7][3][2] == 77.0f && v == 77.0f, "layered cubemap surface: %g %g", hc[7][3][2], v);
    cudaDestroySurfaceObject(s);
    cudaFreeArray(a);

    /* 1-D layered */
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(W, 0, L), cudaArrayLayered | cudaArraySurfaceLoadStore) == cudaSuccess);
    s = make_surf(a);
    surf_layered_1d<<<1, W>>>(s, W, o);
    float l1[W];
    ST_CHECK(cudaMemcpy(l1, o, sizeof l1, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(l1[0] == 0.0f && l1[3] == 6.0f, "1-D layered: %g %g", l1[0], l1[3]);
    cudaDestroySurfaceObject(s);
    cudaFreeArray(a);
    cudaFree(o);
}

/* >>the cases that end the grid, one per process */
__global__ void surf_write_at(cudaSurfaceObject_t s, int x, int y) { surf2Dwrite(1.0f, s, x, y, cudaBoundaryModeTrap); }
__global__ void fetch_layer(cudaTextureObject_t t, int layer, float *out) { *out = tex2DLayered<float>(t, 0.5f, 0.5f, layer); }

ST_TEST(surface_trap) {
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    ST_CHECK(cudaMallocArray(&a, &cd, 4, 2, cudaArraySurfaceLoadStore) == cudaSuccess);
    cudaSurfaceObject_t s = make_surf(a);
    surf_write_at<<<1, 1>>>(s, 3 * 4, 1);   /* the control: the last element */
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    surf_write_at<<<1, 1>>>(s, 4 * 4, 1);   /* one element past the row: x is in bytes */
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e != cudaSuccess, "%s", cudaGetErrorName(e));
}
ST_TEST(surface_misaligned) {
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    ST_CHECK(cudaMallocArray(&a, &cd, 4, 2, cudaArraySurfaceLoadStore) == cudaSuccess);
    cudaSurfaceObject_t s = make_surf(a);
    surf_write_at<<<1, 1>>>(s, 8, 0);   /* the control */
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    surf_write_at<<<1, 1>>>(s, 2, 0);   /* half-way into element 0 */
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e != cudaSuccess, "%s", cudaGetErrorName(e));
}
ST_TEST(layer_out_of_range) {
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(4, 4, 3), cudaArrayLayered) == cudaSuccess);
    cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 0);
    float *o;
    cudaMalloc(&o, sizeof(float));
    fetch_layer<<<1, 1>>>(t, 2, o);   /* the control: the last layer */
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    fetch_layer<<<1, 1>>>(t, 3, o);
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e != cudaSuccess, "%s", cudaGetErrorName(e));
}
ST_TEST(wrong_function) {
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
    cudaArray_t a;
    ST_CHECK(cudaMalloc3DArray(&a, &cd, make_cudaExtent(4, 4, 3), cudaArrayLayered) == cudaSuccess);
    cudaTextureObject_t t = make_tex(a, cudaAddressModeClamp, cudaFilterModePoint, 0);
    float *o;
    cudaMalloc(&o, sizeof(float));
    fetch_layer<<<1, 1>>>(t, 0, o);   /* the control: tex2DLayered */
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    fetch2d<<<1, 1>>>(t, 0.5f, 0.5f, o);
    cudaError_t e = cudaDeviceSynchronize();
    ST_CHECKF(e != cudaSuccess, "%s", cudaGetErrorName(e));
}

int main() {
    const char *c = getenv("CUEMU_ST_CASE");
    if (c && !strcmp(c, "surf_trap")) ST_RUN(surface_trap);
    else if (c && !strcmp(c, "surf_misaligned")) ST_RUN(surface_misaligned);
    else if (c && !strcmp(c, "layer_range")) ST_RUN(layer_out_of_range);
    else if (c && !strcmp(c, "wrong_function")) ST_RUN(wrong_function);
    else {
        ST_RUN(layered_2d);
        ST_RUN(layered_1d);
        ST_RUN(malloc3d_array_rules);
        ST_RUN(cubemap);
        ST_RUN(surfaces);
    }
    return st_summary();
}
