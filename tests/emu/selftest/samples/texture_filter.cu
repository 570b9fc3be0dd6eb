/* texture_filter.cu - texture objects in the cuda-samples style
   (simpleTexture, simplePitchLinearTexture): a 2D image in a CUDA array
   read with tex2D, bilinear filtering and normalised coordinates, shifted
   by a fraction of a texel; the same image in linear memory read with
   tex1Dfetch. The host reference follows the Programming Guide's
   "Texture Fetching" appendix: linear filtering at x - 0.5, weights in
   9-bit fixed point (8 fractional bits), clamp addressing.
   Build: nvcc texture_filter.cu */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include "sample_helpers.h"

__global__ void shift_kernel(float *out, cudaTextureObject_t tex, int w, int h, float dx, float dy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float u = (x + 0.5f + dx) / (float)w, v = (y + 0.5f + dy) / (float)h;
    out[y * w + x] = tex2D<float>(tex, u, v);
}

__global__ void fetch_kernel(float *out, cudaTextureObject_t tex, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * tex1Dfetch<float>(tex, n - 1 - i);
}

static float texel(const float *img, int w, int h, int x, int y) {   /* clamp addressing */
    x = x < 0 ? 0 : x >= w ? w - 1 : x;
    y = y < 0 ? 0 : y >= h ? h - 1 : y;
    return img[y * w + x];
}

static float bilinear(const float *img, int w, int h, float u, float v) {
    float xb = u * w - 0.5f, yb = v * h - 0.5f;
    int i = (int)floorf(xb), j = (int)floorf(yb);
    float a = roundf((xb - i) * 256.0f) / 256.0f, b = roundf((yb - j) * 256.0f) / 256.0f;   /* 9-bit fixed point */
    return (1 - a) * (1 - b) * texel(img, w, h, i, j) + a * (1 - b) * texel(img, w, h, i + 1, j) +
           (1 - a) * b * texel(img, w, h, i, j + 1) + a * b * texel(img, w, h, i + 1, j + 1);
}

int main(void) {
    const int w = 67, h = 45, n = w * h;
    const float dx = 0.3f, dy = -0.7f;
    float *img = (float *)malloc(n * sizeof(float)), *res = (float *)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) img[i] = sinf(0.37f * (i % w)) + cosf(0.21f * (i / w));

    cudaChannelFormatDesc fmt = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    checkErrors(cudaMallocArray(&arr, &fmt, w, h));
    checkErrors(cudaMemcpy2DToArray(arr, 0, 0, img, w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
    cudaResourceDesc res_desc = {};
    res_desc.resType = cudaResourceTypeArray;
    res_desc.res.array.array = arr;
    cudaTextureDesc tex_desc = {};
    tex_desc.addressMode[0] = cudaAddressModeClamp;
    tex_desc.addressMode[1] = cudaAddressModeClamp;
    tex_desc.filterMode = cudaFilterModeLinear;
    tex_desc.readMode = cudaReadModeElementType;
    tex_desc.normalizedCoords = 1;
    cudaTextureObject_t tex = 0;
    checkErrors(cudaCreateTextureObject(&tex, &res_desc, &tex_desc, NULL));

    float *d_out, *d_lin;
    checkErrors(cudaMalloc(&d_out, n * sizeof(float)));
    checkErrors(cudaMalloc(&d_lin, n * sizeof(float)));
    dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
    shift_kernel<<<grid, block>>>(d_out, tex, w, h, dx, dy);
    checkLastError("shift_kernel");
    checkErrors(cudaMemcpy(res, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    double err2d = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float want = bilinear(img, w, h, (x + 0.5f + dx) / w, (y + 0.5f + dy) / h);
            err2d = fmax(err2d, fabs(res[y * w + x] - want));
        }

    /* linear memory: tex1Dfetch, point reads by integer index */
    checkErrors(cudaMemcpy(d_lin, img, n * sizeof(float), cudaMemcpyHostToDevice));
    cudaResourceDesc lin_desc = {};
    lin_desc.resType = cudaResourceTypeLinear;
    lin_desc.res.linear.devPtr = d_lin;
    lin_desc.res.linear.desc = fmt;
    lin_desc.res.linear.sizeInBytes = n * sizeof(float);
    cudaTextureDesc pt_desc = {};
    pt_desc.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex_lin = 0;
    checkErrors(cudaCreateTextureObject(&tex_lin, &lin_desc, &pt_desc, NULL));
    fetch_kernel<<<(n + 255) / 256, 256>>>(d_out, tex_lin, n);
    checkLastError("fetch_kernel");
    checkErrors(cudaMemcpy(res, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad1d = 0;
    for (int i = 0; i < n; i++) bad1d += res[i] != 2.0f * img[n - 1 - i];

    printf("tex2D bilinear: max error %.3g against the fixed-point reference; tex1Dfetch: %d of %d wrong\n", err2d, bad1d, n);
    checkErrors(cudaDestroyTextureObject(tex));
    checkErrors(cudaDestroyTextureObject(tex_lin));
    checkErrors(cudaFreeArray(arr));
    cudaFree(d_out); cudaFree(d_lin);
    free(img); free(res);
    int ok = err2d < 1e-5 && bad1d == 0;
    printf("%s\n", ok ? "Test PASSED" : "Test FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
