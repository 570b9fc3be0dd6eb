/* cuda_pipeline.h (cuemu) - the pipeline primitives and
   nvcuda::experimental::pipeline over them (CUDA C++ Programming Guide,
   "Pipeline Primitives Interface"). The awbarrier forms (arrive_on) are not
   emulated. */
#ifndef CUEMU_CUDA_PIPELINE_H
#define CUEMU_CUDA_PIPELINE_H
#include "cuda_pipeline_primitives.h"
#if defined(__cplusplus) && defined(__CUDACC__)

namespace nvcuda {
namespace experimental {
class pipeline {
    unsigned batch_ = 0;
public:
    pipeline() = default;
    pipeline(const pipeline &) = delete;
    pipeline &operator=(const pipeline &) = delete;
    unsigned int commit() {
        __pipeline_commit();
        return batch_++;
    }
    void wait(unsigned int batch) { __pipeline_wait_prior(batch_ - 1 - batch); }
    template <unsigned int N> void wait_prior() { __pipeline_wait_prior(N); }
};
template <class T> inline void memcpy_async(T &dst, const T &src, pipeline &) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "memcpy_async: an object of 4, 8 or 16 bytes");
    __pipeline_memcpy_async(&dst, &src, sizeof(T));
}
template <class T, size_t DstN, size_t SrcN> inline void memcpy_async(T (*dst)[DstN], const T (*src)[SrcN], pipeline &) {
    static_assert(DstN >= SrcN && (sizeof(T) * SrcN == 4 || sizeof(T) * SrcN == 8 || sizeof(T) * SrcN == 16),
                  "memcpy_async: arrays of 4, 8 or 16 bytes");
    __pipeline_memcpy_async(dst, src, sizeof(T) * SrcN);
}
}  // namespace experimental
}  // namespace nvcuda

#endif
#endif
