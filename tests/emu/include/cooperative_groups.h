/* cooperative_groups.h (cuemu) - thread blocks, warp tiles of 1 to 32
   threads and coalesced groups, on the emulator's barriers and warp
   exchanges. A grid group can be named (thread_rank, size) but its sync()
   is not emulated: it reports an error. */
#ifndef CUEMU_COOPERATIVE_GROUPS_H
#define CUEMU_COOPERATIVE_GROUPS_H

#include <cuda_runtime.h>

#if defined(__cplusplus) && defined(__CUDACC__)   /* device code only, as the real header */

namespace cooperative_groups {

namespace details {
inline unsigned block_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }
inline unsigned popc(unsigned v) { return (unsigned)__builtin_popcount(v); }
/* The lane of the n-th set bit of mask. */
inline int nth_lane(unsigned mask, unsigned n) {
    for (int l = 0; l < 32; l++)
        if ((mask >> l) & 1) {
            if (n == 0) return l;
            n--;
        }
    return 0;
}
/* The groups' shuffles take any trivially copyable type (CUDA C++
   Programming Guide, Cooperative Groups, "Thread Block Tile": shfl,
   shfl_up, shfl_down, shfl_xor; unlike the __shfl_*_sync intrinsics, which
   move at most 8 bytes): a wider value moves in 4-byte words, one exchange
   each, in the same order on every lane. */
template <class T, class F> inline T by_words(const T &v, F f) {
    static_assert(std::is_trivially_copyable<T>::value, "cooperative groups shuffle a trivially copyable type");
    if constexpr (sizeof(T) <= 8) {
        return f(v);
    } else {
        unsigned w[(sizeof(T) + 3) / 4] = {};
        memcpy(w, &v, sizeof(T));
        for (unsigned &x : w) x = f(x);
        T out;
        memcpy(&out, w, sizeof(T));
        return out;
    }
}
}  // namespace details

class thread_block {
public:
    void sync() const { (void)cuemu::block_barrier(cuemu::BAR_SYNC, 1, CUEMU_SITE("thread_block::sync()")); }
    unsigned long long thread_rank() const { return details::block_rank(); }
    unsigned long long size() const { return details::block_size(); }
    unsigned long long num_threads() const { return details::block_size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
    bool is_valid() const { return true; }
};
inline thread_block this_thread_block() { return thread_block(); }

/* A group of 1..32 consecutive lanes of a warp (N a power of two). */
template <unsigned N, class Parent = void>
class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "cuemu: tiles of 1, 2, 4, 8, 16 or 32 threads");
public:
    static constexpr unsigned num_threads_c = N;
    thread_block_tile() = default;
    template <class Q> thread_block_tile(const thread_block_tile<N, Q> &) {}
    unsigned mask() const {
        unsigned lane = cuemu::lane_id();
        return N == 32 ? 0xffffffffu : ((1u << N) - 1) << (lane & ~(N - 1));
    }
    void sync() const { __syncwarp(mask()); }
    unsigned long long thread_rank() const { return cuemu::lane_id() & (N - 1); }
    unsigned long long size() const { return N; }
    unsigned long long num_threads() const { return N; }
    unsigned long long meta_group_rank() const { return details::block_rank() / N; }
    unsigned long long meta_group_size() const { return (details::block_size() + N - 1) / N; }
    bool is_valid() const { return true; }
    template <class T> T shfl(T v, int src) const {
        return details::by_words(v, [&](auto x) { return __shfl_sync(mask(), x, src, (int)N); });
    }
    template <class T> T shfl_down(T v, unsigned d) const {
        return details::by_words(v, [&](auto x) { return __shfl_down_sync(mask(), x, d, (int)N); });
    }
    template <class T> T shfl_up(T v, unsigned d) const {
        return details::by_words(v, [&](auto x) { return __shfl_up_sync(mask(), x, d, (int)N); });
    }
    template <class T> T shfl_xor(T v, unsigned m) const {
        return details::by_words(v, [&](auto x) { return __shfl_xor_sync(mask(), x, (int)m, (int)N); });
    }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
    unsigned ballot(int p) const {
        unsigned b = __ballot_sync(mask(), p);
        return N == 32 ? b : (b >> (cuemu::lane_id() & ~(N - 1))) & ((1u << N) - 1);
    }
    template <class T> unsigned match_any(T v) const {
        unsigned m = __match_any_sync(mask(), v);
        return N == 32 ? m : (m >> (cuemu::lane_id() & ~(N - 1))) & ((1u << N) - 1);
    }
};

template <unsigned N, class Parent> thread_block_tile<N, Parent> tiled_partition(const Parent &) {
    return thread_block_tile<N, Parent>();
}

/* The lanes of a warp active together (at the call). */
class coalesced_group {
    unsigned mask_;
public:
    explicit coalesced_group(unsigned m) : mask_(m) {}
    void sync() const { __syncwarp(mask_); }
    unsigned long long size() const { return details::popc(mask_); }
    unsigned long long num_threads() const { return details::popc(mask_); }
    unsigned long long thread_rank() const { return details::popc(mask_ & ((1u << cuemu::lane_id()) - 1)); }
    template <class T> T shfl(T v, unsigned rank) const {
        int src = details::nth_lane(mask_, rank);
        return details::by_words(v, [&](auto x) { return __shfl_sync(mask_, x, src); });
    }
    template <class T> T shfl_down(T v, unsigned d) const {
        unsigned r = (unsigned)thread_rank() + d;
        int src = details::nth_lane(mask_, r < size() ? r : (unsigned)thread_rank());
        return details::by_words(v, [&](auto x) { return __shfl_sync(mask_, x, src); });
    }
    template <class T> T shfl_up(T v, unsigned d) const {
        unsigned r = (unsigned)thread_rank();
        int src = details::nth_lane(mask_, r >= d ? r - d : r);
        return details::by_words(v, [&](auto x) { return __shfl_sync(mask_, x, src); });
    }
    int any(int p) const { return __any_sync(mask_, p); }
    int all(int p) const { return __all_sync(mask_, p); }
    unsigned ballot(int p) const {
        unsigned b = __ballot_sync(mask_, p), out = 0, k = 0;
        for (int l = 0; l < 32; l++)
            if ((mask_ >> l) & 1) out |= ((b >> l) & 1u) << k++;
        return out;
    }
    bool is_valid() const { return true; }
};
inline coalesced_group coalesced_threads_at(const char *site) { return coalesced_group(cuemu::active_mask(site)); }
/* A macro, so that each call site is its own point of convergence (see __activemask). */
#define coalesced_threads() coalesced_threads_at(CUEMU_SITE("coalesced_threads()"))

/* A tile of a runtime size (1..32, a power of two), as tiled_partition(block, n). */
class thread_group {
    unsigned n_;
public:
    explicit thread_group(unsigned n) : n_(n) {}
    unsigned mask() const {
        unsigned lane = cuemu::lane_id();
        return n_ >= 32 ? 0xffffffffu : ((1u << n_) - 1) << (lane & ~(n_ - 1));
    }
    void sync() const {
        if (n_ > 32) (void)cuemu::block_barrier(cuemu::BAR_SYNC, 1, CUEMU_SITE("thread_group::sync()"));
        else __syncwarp(mask());
    }
    unsigned long long thread_rank() const { return n_ > 32 ? details::block_rank() : cuemu::lane_id() & (n_ - 1); }
    unsigned long long size() const { return n_ > 32 ? details::block_size() : n_; }
    unsigned long long num_threads() const { return size(); }
};
inline thread_group tiled_partition(const thread_block &, unsigned n) {
    if (n == 0 || n > 32 || (n & (n - 1))) cuemu::trap("cooperative_groups::tiled_partition: tile size must be 1..32, a power of two");
    return thread_group(n);
}

class grid_group {
public:
    unsigned long long thread_rank() const {
        unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
        return b * details::block_size() + details::block_rank();
    }
    unsigned long long size() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * details::block_size(); }
    unsigned long long num_threads() const { return size(); }
    bool is_valid() const { return true; }
    void sync() const { cuemu::trap("cooperative_groups::grid_group::sync() is not emulated"); }
};
inline grid_group this_grid() { return grid_group(); }

template <class G> inline void sync(const G &g) { g.sync(); }

}  // namespace cooperative_groups

#endif /* __CUDACC__ */
#endif
