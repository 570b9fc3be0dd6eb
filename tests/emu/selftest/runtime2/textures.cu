/* textures.cu - texture objects (CUDA C++ Programming Guide, "Texture
   Memory" and the appendix "Texture Fetching"; Runtime API texture object
   management): tex1Dfetch over linear memory, tex2D over pitch-2D memory
   and CUDA arrays, point and linear filtering, normalized coordinates, the
   addressing modes, normalized-float reads; the creation rules; a fetch
   from a destroyed object. */
#include <cuda_runtime.h>
#include "selftest.h"

__global__ void fetch1d(cudaTextureObject_t t, int n, float *out) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, i - 2);   /* indices -2 .. n-3 */
}
__global__ void fetch2d(cudaTextureObject_t t, const float2 *at, int n, float *out) {
    int i = threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, at[i].x, at[i].y);
}
__global__ void fetch2d_u4(cudaTextureObject_t t, float4 *out) {
    int x = threadIdx.x, y = threadIdx.y;
    out[y * blockDim.x + x] = tex2D<float4>(t, x + 0.5f, y + 0.5f);
}

static cudaTextureObject_t make_tex(cudaResourceDesc *r, cudaTextureAddressMode am, cudaTextureFilterMode fm, int norm,
                                    cudaTextureReadMode rm = cudaReadModeElementType, cudaError_t *err = nullptr) {
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = am;
    td.filterMode = fm;
    td.readMode = rm;
    td.normalizedCoords = norm;
    td.borderColor[0] = -7.0f;
    cudaTextureObject_t t = 0;
    cudaError_t e = cudaCreateTextureObject(&t, r, &td, nullptr);
    if (err) *err = e;
    return t;
}

ST_TEST(tex1dfetch_linear) {
    const int N = 16;
    float h[N], out[N + 4];
    for (int i = 0; i < N; i++) h[i] = 1.5f * i;
    float *d, *o;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o, sizeof out);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeLinear;
    r.res.linear.devPtr = d;
    r.res.linear.desc = cudaCreateChannelDesc<float>();
    r.res.linear.sizeInBytes = sizeof h;
    ST_CHECK(r.res.linear.desc.x == 32 && r.res.linear.desc.y == 0 && r.res.linear.desc.f == cudaChannelFormatKindFloat);
    cudaTextureObject_t clamp = make_tex(&r, cudaAddressModeClamp, cudaFilterModePoint, 0);
    cudaTextureObject_t border = make_tex(&r, cudaAddressModeBorder, cudaFilterModePoint, 0);
    ST_CHECK(clamp && border);
    fetch1d<<<1, N + 4>>>(clamp, N + 4, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == 0.0f && out[1] == 0.0f && out[2] == h[0] && out[7] == h[5] && out[N + 1] == h[N - 1] &&
              out[N + 3] == h[N - 1], "clamp: %g %g %g %g", out[0], out[2], out[N + 1], out[N + 3]);
    fetch1d<<<1, N + 4>>>(border, N + 4, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[0] == -7.0f && out[2] == h[0] && out[N + 1] == h[N - 1] && out[N + 2] == -7.0f, "border: %g %g %g",
              out[0], out[N + 1], out[N + 2]);
    cudaResourceDesc back;
    ST_CHECK(cudaGetTextureObjectResourceDesc(&back, clamp) == cudaSuccess && back.res.linear.devPtr == d);
    /* the creation rules: filtering needs float results and no linear memory; devPtr aligned to textureAlignment */
    cudaError_t e;
    make_tex(&r, cudaAddressModeClamp, cudaFilterModeLinear, 0, cudaReadModeElementType, &e);
    ST_CHECKF(e == cudaErrorInvalidValue, "linear filtering of linear memory: %s", cudaGetErrorName(e));
    cudaResourceDesc mis = r;
    mis.res.linear.devPtr = d + 1;
    mis.res.linear.sizeInBytes -= 4;
    make_tex(&mis, cudaAddressModeClamp, cudaFilterModePoint, 0, cudaReadModeElementType, &e);
    ST_CHECKF(e == cudaErrorInvalidValue, "misaligned devPtr: %s", cudaGetErrorName(e));
    cudaResourceDesc host = r;
    host.res.linear.devPtr = h;
    make_tex(&host, cudaAddressModeClamp, cudaFilterModePoint, 0, cudaReadModeElementType, &e);
    ST_CHECKF(e != cudaSuccess, "host memory: %s", cudaGetErrorName(e));
    cudaGetLastError();
    cudaDestroyTextureObject(clamp);
    cudaDestroyTextureObject(border);
    cudaFree(d);
    cudaFree(o);
}

ST_TEST(tex2d_pitch_filtering_addressing) {
    const int W = 8, H = 4;
    float h[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) h[y][x] = (float)(10 * y + x * x);
    float *d;
    size_t pitch;
    ST_CHECK(cudaMallocPitch(&d, &pitch, W * sizeof(float), H) == cudaSuccess);
    cudaMemcpy2D(d, pitch, h, W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice);
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypePitch2D;
    r.res.pitch2D.devPtr = d;
    r.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    r.res.pitch2D.width = W;
    r.res.pitch2D.height = H;
    r.res.pitch2D.pitchInBytes = pitch;
    const int n = 8;
    float2 at[n];
    float *o, out[n];
    float2 *dat;
    cudaMalloc(&o, sizeof out);
    cudaMalloc(&dat, sizeof at);
    /* point, unnormalized: texel centres and beyond the edges (clamp) */
    cudaTextureObject_t pt = make_tex(&r, cudaAddressModeClamp, cudaFilterModePoint, 0);
    at[0] = make_float2(3.5f, 2.5f); at[1] = make_float2(3.99f, 2.01f); at[2] = make_float2(-5.0f, 1.5f);
    at[3] = make_float2(100.0f, 100.0f); at[4] = make_float2(0.0f, 0.0f); at[5] = make_float2(7.5f, 3.5f);
    at[6] = make_float2(1.5f, 0.5f); at[7] = make_float2(2.5f, 1.5f);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d<<<1, n>>>(pt, dat, n, o);
    cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost);
    ST_CHECKF(out[0] == h[2][3] && out[1] == h[2][3] && out[2] == h[1][0] && out[3] == h[H - 1][W - 1] && out[4] == h[0][0] &&
              out[5] == h[3][7], "point: %g %g %g %g", out[0], out[1], out[2], out[3]);
    /* linear: x = i + 0.5 + 0.25 blends T[i] and T[i+1] 3:1 (Texture Fetching: xB = x - 0.5) */
    cudaTextureObject_t lin = make_tex(&r, cudaAddressModeClamp, cudaFilterModeLinear, 0);
    at[0] = make_float2(2.75f, 1.5f); at[1] = make_float2(2.5f, 1.75f); at[2] = make_float2(2.75f, 1.75f);
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d<<<1, 3>>>(lin, dat, 3, o);
    cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost);
    float want0 = 0.75f * h[1][2] + 0.25f * h[1][3], want1 = 0.75f * h[1][2] + 0.25f * h[2][2];
    float want2 = 0.75f * (0.75f * h[1][2] + 0.25f * h[1][3]) + 0.25f * (0.75f * h[2][2] + 0.25f * h[2][3]);
    ST_CHECKF(out[0] == want0 && out[1] == want1 && out[2] == want2, "linear: %g %g %g (want %g %g %g)", out[0], out[1],
              out[2], want0, want1, want2);
    /* normalized coordinates with wrap and mirror */
    cudaTextureObject_t wrap = make_tex(&r, cudaAddressModeWrap, cudaFilterModePoint, 1);
    cudaTextureObject_t mirror = make_tex(&r, cudaAddressModeMirror, cudaFilterModePoint, 1);
    at[0] = make_float2(1.0f + 2.5f / W, 1.5f / H);    /* wraps to texel (2, 1) */
    at[1] = make_float2(-1.0f + 5.5f / W, 3.5f / H);   /* (5, 3) */
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d<<<1, 2>>>(wrap, dat, 2, o);
    cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost);
    ST_CHECKF(out[0] == h[1][2] && out[1] == h[3][5], "wrap: %g %g", out[0], out[1]);
    at[0] = make_float2(-2.5f / W, 1.5f / H);           /* mirrors to (2, 1) */
    at[1] = make_float2(1.0f + 0.5f / W, 0.5f / H);     /* just past the right edge: (7, 0) */
    cudaMemcpy(dat, at, sizeof at, cudaMemcpyHostToDevice);
    fetch2d<<<1, 2>>>(mirror, dat, 2, o);
    cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost);
    ST_CHECKF(out[0] == h[1][2] && out[1] == h[0][7], "mirror: %g %g", out[0], out[1]);
    /* a pitch that is no multiple of texturePitchAlignment */
    cudaResourceDesc bad = r;
    bad.res.pitch2D.pitchInBytes = W * sizeof(float) + 4;
    cudaError_t e;
    make_tex(&bad, cudaAddressModeClamp, cudaFilterModePoint, 0, cudaReadModeElementType, &e);
    ST_CHECKF(e == cudaErrorInvalidValue, "pitch %zu: %s", bad.res.pitch2D.pitchInBytes, cudaGetErrorName(e));
    cudaGetLastError();
    cudaDestroyTextureObject(pt);
    cudaDestroyTextureObject(lin);
    cudaDestroyTextureObject(wrap);
    cudaDestroyTextureObject(mirror);
    cudaFree(d);
    cudaFree(o);
    cudaFree(dat);
}

ST_TEST(tex2d_array_normalized_float) {
    const int W = 4, H = 2;
    uchar4 h[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) h[y][x] = make_uchar4((unsigned char)(x * 60), (unsigned char)(y * 255), 51, 255);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<uchar4>();
    ST_CHECK(cd.x == 8 && cd.w == 8 && cd.f == cudaChannelFormatKindUnsigned);
    cudaArray_t a;
    ST_CHECK(cudaMallocArray(&a, &cd, W, H) == cudaSuccess);
    ST_CHECK(cudaMemcpy2DToArray(a, 0, 0, h, W * sizeof(uchar4), W * sizeof(uchar4), H, cudaMemcpyHostToDevice) == cudaSuccess);
    uchar4 back[H][W];
    ST_CHECK(cudaMemcpy2DFromArray(back, W * sizeof(uchar4), a, 0, 0, W * sizeof(uchar4), H, cudaMemcpyDeviceToHost) ==
             cudaSuccess);
    ST_CHECK(memcmp(back, h, sizeof h) == 0);
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    cudaTextureObject_t t = make_tex(&r, cudaAddressModeClamp, cudaFilterModePoint, 0, cudaReadModeNormalizedFloat);
    ST_CHECK(t != 0);
    float4 *o, out[H * W];
    cudaMalloc(&o, sizeof out);
    fetch2d_u4<<<1, dim3(W, H)>>>(t, o);
    ST_CHECK(cudaMemcpy(out, o, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess);
    ST_CHECKF(out[2].x == 120.0f / 255.0f && out[2].y == 0.0f && out[5].y == 1.0f && out[0].z == 0.2f && out[7].w == 1.0f,
              "%g %g %g %g", out[2].x, out[5].y, out[0].z, out[7].w);
    /* an integer format read as its elements cannot be filtered */
    cudaError_t e;
    make_tex(&r, cudaAddressModeClamp, cudaFilterModeLinear, 0, cudaReadModeElementType, &e);
    ST_CHECKF(e == cudaErrorInvalidValue, "linear filtering of uchar4 elements: %s", cudaGetErrorName(e));
    cudaGetLastError();
    cudaDestroyTextureObject(t);
    ST_CHECK(cudaFreeArray(a) == cudaSuccess);
    cudaFree(o);
}

/* last: it leaves the device with a sticky error */
ST_TEST(fetch_from_destroyed_texture_faults) {
    float *d, *o;
    cudaMalloc(&d, 1024);
    cudaMalloc(&o, 64 * sizeof(float));
    cudaResourceDesc r;
    memset(&r, 0, sizeof r);
    r.resType = cudaResourceTypeLinear;
    r.res.linear.devPtr = d;
    r.res.linear.desc = cudaCreateChannelDesc<float>();
    r.res.linear.sizeInBytes = 1024;
    cudaTextureObject_t t = make_tex(&r, cudaAddressModeClamp, cudaFilterModePoint, 0);
    fetch1d<<<1, 4>>>(t, 4, o);
    ST_CHECK(cudaDeviceSynchronize() == cudaSuccess);   /* the control */
    cudaDestroyTextureObject(t);
    fetch1d<<<1, 4>>>(t, 4, o);
    ST_CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
}

int main() {
    ST_RUN(tex1dfetch_linear);
    ST_RUN(tex2d_pitch_filtering_addressing);
    ST_RUN(tex2d_array_normalized_float);
    ST_RUN(fetch_from_destroyed_texture_faults);
    return st_summary();
}
