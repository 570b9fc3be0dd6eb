/* cooperative_groups.h (cuemu) - the groups of the CUDA C++ Programming
   Guide's "Cooperative Groups" chapter on the emulator's barriers and warp
   exchanges: thread_group, the base every group converts to; thread_block;
   warp tiles of 1 to 32 threads; tiles of 64 to 1024 threads (several
   warps: sync, thread_rank, num_threads, meta_group_rank/size, shfl, any,
   all, cg::reduce); coalesced groups and their partitions
   (binary_partition, labeled_partition); block_tile_memory; the grid group,
   whose sync() needs a cooperative launch (cudaLaunchCooperativeKernel). */
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

/* The base of every group (Programming Guide, "Implicit Groups" and
   "Explicit Groups": a thread_block, a tile, a coalesced group and the grid
   group all convert to thread_group, which offers sync, thread_rank, size,
   num_threads and is_valid). kind_ says what it is; for a group of lanes of
   one warp (tiles, coalesced groups, partitions) mask_ names them. */
class thread_group {
protected:
    enum { K_BLOCK = 1, K_LANES = 2, K_GRID = 3, K_TILE = 4 };
    /* K_LANES: the lanes; K_TILE (a tile of several warps): its size;
       K_BLOCK: 1 when made with a block_tile_memory */
    unsigned kind_, mask_;
    thread_group(unsigned kind, unsigned mask) : kind_(kind), mask_(mask) {}
public:
    void sync() const {
        if (kind_ == K_BLOCK) (void)cuemu::block_barrier(cuemu::BAR_SYNC, 1, CUEMU_SITE("thread_group::sync()"));
        else if (kind_ == K_GRID) cuemu::grid_sync("cooperative_groups::grid_group::sync()");
        else if (kind_ == K_TILE)
            cuemu::tile_barrier(details::block_rank() / mask_ * mask_, mask_, "thread_block_tile<64..1024>::sync()");
        else __syncwarp(mask_);
    }
    unsigned long long thread_rank() const {
        if (kind_ == K_BLOCK) return details::block_rank();
        if (kind_ == K_GRID) {
            unsigned long long b = blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
            return b * details::block_size() + details::block_rank();
        }
        if (kind_ == K_TILE) return details::block_rank() % mask_;
        return details::popc(mask_ & ((1u << cuemu::lane_id()) - 1));
    }
    unsigned long long size() const {
        if (kind_ == K_BLOCK) return details::block_size();
        if (kind_ == K_GRID) return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * details::block_size();
        if (kind_ == K_TILE) return mask_;
        return details::popc(mask_);
    }
    unsigned long long num_threads() const { return size(); }
    bool is_valid() const { return kind_ != K_GRID || cuemu::grid_is_cooperative(); }
    /* the lanes of a warp-level group (internal) */
    unsigned cuemu_lanes() const { return mask_; }
    bool cuemu_is_warp_level() const { return kind_ == K_LANES; }
};

/* Programming Guide, Cooperative Groups, "Thread Block Tile": block_tile_memory
   provides the scratch memory that tiles of more than 32 threads need on
   devices before compute capability 8.0 (given to this_thread_block; a
   tiled_partition of more than 32 threads of a block made without one is
   an error there, tile_check). The emulator keeps its own scratch. */
template <unsigned MaxBlockSize = 1024> struct block_tile_memory {
    static_assert(MaxBlockSize >= 1 && MaxBlockSize <= 1024, "block_tile_memory: MaxBlockSize is at most 1024");
    unsigned char scratch[8];
};

class thread_block : public thread_group {
public:
    thread_block() : thread_group(K_BLOCK, 0) {}
    explicit thread_block(bool with_tile_memory) : thread_group(K_BLOCK, with_tile_memory ? 1u : 0u) {}
    bool cuemu_has_tile_memory() const { return mask_ == 1; }
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
template <unsigned MaxBlockSize> inline thread_block this_thread_block(block_tile_memory<MaxBlockSize> &) {
    if (details::block_size() > MaxBlockSize)
        cuemu::trap("cooperative_groups::this_thread_block(block_tile_memory<MaxBlockSize>): the block has more "
                    "threads than MaxBlockSize");
    return thread_block(true);
}

/* A group of 1..32 consecutive lanes of a warp, or (64..1024) of N
   consecutive threads of the block, whole warps (N a power of two;
   Programming Guide, Cooperative Groups, "Thread Block Tile": tiles of up
   to 1024 threads since CUDA 11). A tile of several warps has sync,
   thread_rank, num_threads, meta_group_rank/size, shfl, any and all (as
   nvcc 13's header has them; exchanged through the block's scratch,
   cuemu::tile_scratch, between two syncs of the tile), is not a
   thread_group (no conversion), and has no shfl_up/down/xor, ballot, match
   or mask: a compile-time error. */
#define CUEMU_WARP_TILE_ONLY(f) static_assert(N <= 32, "cooperative_groups::thread_block_tile<N>::" f \
                                              " is available only for tiles of at most 32 threads")
namespace details {
/* the base of a tile of several warps: a thread_group inside, not one outside */
class multi_warp_base : protected thread_group {
protected:
    multi_warp_base(unsigned kind, unsigned n) : thread_group(kind, n) {}
};
}  // namespace details
template <unsigned N, class Parent = void>
class thread_block_tile : public std::conditional_t<(N <= 32), thread_group, details::multi_warp_base> {
    static_assert(N >= 1 && (N & (N - 1)) == 0, "cooperative_groups: a tile's size is a power of two");
    static_assert(N <= 1024, "cooperative_groups: a tile has at most 1024 threads");
    using base = std::conditional_t<(N <= 32), thread_group, details::multi_warp_base>;
    static unsigned lanes() {
        if constexpr (N > 32) {
            return N;
        } else {
            unsigned lane = cuemu::lane_id();
            return N == 32 ? 0xffffffffu : ((1u << N) - 1) << (lane & ~(N - 1));
        }
    }
    static constexpr unsigned kind() { return N > 32 ? 4u /* K_TILE */ : 2u /* K_LANES */; }
    /* several warps: every thread of the tile writes v to its slot, then
       reads the one of rank src (64 bytes a thread) */
    template <class T> T multi_shfl(T v, unsigned src) const {
        static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 64,
                      "cuemu: shfl over a tile of more than 32 threads takes a trivially copyable type of at most 64 bytes");
        unsigned char *slot = (unsigned char *)cuemu::tile_scratch();
        unsigned first = details::block_rank() / N * N;
        memcpy(slot + 64 * details::block_rank(), &v, sizeof(T));
        sync();
        T out = v;
        memcpy(&out, slot + 64 * (first + (src & (N - 1))), sizeof(T));
        sync();
        return out;
    }
    int multi_vote(int p, bool every) const {
        unsigned w = every ? (unsigned)__all_sync(0xffffffffu, p) : (unsigned)__any_sync(0xffffffffu, p);
        unsigned char *slot = (unsigned char *)cuemu::tile_scratch() + 64 * 1024;
        unsigned first_warp = details::block_rank() / N * (N / 32);
        if (cuemu::lane_id() == 0) slot[details::block_rank() / 32] = (unsigned char)(w != 0);
        sync();
        int r = every ? 1 : 0;
        for (unsigned k = 0; k < N / 32; k++) r = every ? (r && slot[first_warp + k]) : (r || slot[first_warp + k]);
        sync();
        return r;
    }
public:
    static constexpr unsigned num_threads_c = N;
    thread_block_tile() : base(kind(), lanes()) {}
    template <class Q> thread_block_tile(const thread_block_tile<N, Q> &) : base(kind(), lanes()) {}
    unsigned mask() const { CUEMU_WARP_TILE_ONLY("mask()"); return this->mask_; }
    void sync() const {
        if constexpr (N > 32) cuemu::tile_barrier(details::block_rank() / N * N, N, "thread_block_tile<64..1024>::sync()");
        else __syncwarp(this->mask_);
    }
    unsigned long long thread_rank() const {
        if constexpr (N > 32) return details::block_rank() & (N - 1);
        else return cuemu::lane_id() & (N - 1);
    }
    unsigned long long size() const { return N; }
    unsigned long long num_threads() const { return N; }
    unsigned long long meta_group_rank() const { return details::block_rank() / N; }
    unsigned long long meta_group_size() const { return (details::block_size() + N - 1) / N; }
    bool is_valid() const { return true; }
    template <class T> T shfl(T v, int src) const {
        if constexpr (N > 32) return multi_shfl(v, (unsigned)src);
        else return details::by_words(v, [&](auto x) { return __shfl_sync(mask(), x, src, (int)N); });
    }
    template <class T> T shfl_down(T v, unsigned d) const {
        CUEMU_WARP_TILE_ONLY("shfl_down");
        return details::by_words(v, [&](auto x) { return __shfl_down_sync(mask(), x, d, (int)N); });
    }
    template <class T> T shfl_up(T v, unsigned d) const {
        CUEMU_WARP_TILE_ONLY("shfl_up");
        return details::by_words(v, [&](auto x) { return __shfl_up_sync(mask(), x, d, (int)N); });
    }
    template <class T> T shfl_xor(T v, unsigned m) const {
        CUEMU_WARP_TILE_ONLY("shfl_xor");
        return details::by_words(v, [&](auto x) { return __shfl_xor_sync(mask(), x, (int)m, (int)N); });
    }
    int any(int p) const {
        if constexpr (N > 32) return multi_vote(p, false);
        else return __any_sync(mask(), p);
    }
    int all(int p) const {
        if constexpr (N > 32) return multi_vote(p, true);
        else return __all_sync(mask(), p);
    }
    unsigned ballot(int p) const {
        CUEMU_WARP_TILE_ONLY("ballot");
        unsigned b = __ballot_sync(mask(), p);
        return N == 32 ? b : (b >> (cuemu::lane_id() & ~(N - 1))) & ((1u << N) - 1);
    }
    template <class T> unsigned match_any(T v) const {
        CUEMU_WARP_TILE_ONLY("match_any");
        unsigned m = __match_any_sync(mask(), v);
        return N == 32 ? m : (m >> (cuemu::lane_id() & ~(N - 1))) & ((1u << N) - 1);
    }
};

template <unsigned N, class Parent> thread_block_tile<N, Parent> tiled_partition(const Parent &parent) {
    if constexpr (N > 32) {
        static_assert(std::is_same<Parent, thread_block>::value || std::is_base_of<thread_block, Parent>::value,
                      "cooperative_groups::tiled_partition: tiles of more than 32 threads are made from a thread_block");
        cuemu::tile_check(N, parent.cuemu_has_tile_memory());
    }
    return thread_block_tile<N, Parent>();
}

/* The lanes of a warp active together (at the call), or a partition of a
   warp-level group. */
class coalesced_group : public thread_group {
public:
    explicit coalesced_group(unsigned m) : thread_group(K_LANES, m) {}
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
    template <class T> unsigned match_any(T v) const {
        unsigned m = __match_any_sync(mask_, v), out = 0, k = 0;
        for (int l = 0; l < 32; l++)
            if ((mask_ >> l) & 1) out |= ((m >> l) & 1u) << k++;
        return out;
    }
    bool is_valid() const { return true; }
};
inline coalesced_group coalesced_threads_at(const char *site) { return coalesced_group(cuemu::active_mask(site)); }
/* A macro, so that each call site is its own point of convergence (see __activemask). */
#define coalesced_threads() coalesced_threads_at(CUEMU_SITE("coalesced_threads()"))

/* Programming Guide, "Group Partitioning": tiled_partition of any group
   into tiles of n threads (a power of two, at most 32 here): the tile of
   consecutive ranks of the parent that the calling thread belongs to. */
inline thread_group tiled_partition(const thread_group &parent, unsigned n) {
    struct tile : thread_group {
        tile(unsigned m) : thread_group(K_LANES, m) {}
    };
    if (n == 0 || n > 32 || (n & (n - 1)))
        cuemu::trap("cooperative_groups::tiled_partition: tiles of 1..32 threads, a power of two, are emulated");
    if (!parent.cuemu_is_warp_level()) {
        unsigned lane = cuemu::lane_id();
        return tile(n >= 32 ? 0xffffffffu : ((1u << n) - 1) << (lane & ~(n - 1)));
    }
    unsigned m = parent.cuemu_lanes(), mine = (unsigned)parent.thread_rank() / n, out = 0, r = 0;
    if (n > details::popc(m) || details::popc(m) % n)
        cuemu::trap("cooperative_groups::tiled_partition: the tile size must divide the parent group's size");
    for (int l = 0; l < 32; l++)
        if ((m >> l) & 1) {
            if (r / n == mine) out |= 1u << l;
            r++;
        }
    return tile(out);
}

/* Programming Guide, "binary_partition": splits a warp-level group into the
   threads whose predicate is true and those whose is false; every thread of
   the parent takes part (a collective operation). */
inline coalesced_group binary_partition(const coalesced_group &g, bool pred) {
    unsigned m = g.cuemu_lanes(), b = __ballot_sync(m, pred);
    return coalesced_group(pred ? (b & m) : (~b & m));
}
template <unsigned N, class P> inline coalesced_group binary_partition(const thread_block_tile<N, P> &g, bool pred) {
    static_assert(N <= 32, "Binary partition is available only for tiles of size smaller or equal to 32");
    unsigned m = g.mask(), b = __ballot_sync(m, pred);
    return coalesced_group(pred ? (b & m) : (~b & m));
}
/* Programming Guide, "labeled_partition": the threads of the parent with the
   same label (an integral or pointer value) form one coalesced group. */
template <class L> inline coalesced_group labeled_partition(const coalesced_group &g, L label) {
    static_assert(std::is_integral<L>::value || std::is_pointer<L>::value,
                  "labeled_partition predicate must be an integral or pointer type");
    unsigned long long v;
    if constexpr (std::is_pointer<L>::value) v = (unsigned long long)(uintptr_t)label;
    else v = (unsigned long long)label;
    return coalesced_group(__match_any_sync(g.cuemu_lanes(), v));
}
template <class L, unsigned N, class P> inline coalesced_group labeled_partition(const thread_block_tile<N, P> &g, L label) {
    static_assert(std::is_integral<L>::value || std::is_pointer<L>::value,
                  "labeled_partition predicate must be an integral or pointer type");
    static_assert(N <= 32, "Labeled partition is available only for tiles of size smaller or equal to 32");
    unsigned long long v;
    if constexpr (std::is_pointer<L>::value) v = (unsigned long long)(uintptr_t)label;
    else v = (unsigned long long)label;
    return coalesced_group(__match_any_sync(g.mask(), v));
}

/* Programming Guide, "Grid Group": sync() waits for every thread of the
   grid; the grid must have been launched with cudaLaunchCooperativeKernel
   (or cudaLaunchKernelEx with cudaLaunchAttributeCooperative), else
   is_valid() is false and sync() is an error here. */
class grid_group : public thread_group {
public:
    grid_group() : thread_group(K_GRID, 0) {}
    unsigned long long thread_rank() const { return thread_group::thread_rank(); }
    unsigned long long size() const { return thread_group::size(); }
    unsigned long long num_threads() const { return size(); }
    unsigned long long block_rank() const {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    unsigned long long num_blocks() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    dim3 group_dim() const { return gridDim; }
    dim3 dim_blocks() const { return gridDim; }
    dim3 block_index() const { return blockIdx; }
    bool is_valid() const { return cuemu::grid_is_cooperative(); }
    void sync() const { cuemu::grid_sync("cooperative_groups::grid_group::sync()"); }
};
inline grid_group this_grid() { return grid_group(); }

template <class G> inline void sync(const G &g) { g.sync(); }

}  // namespace cooperative_groups

#endif /* __CUDACC__ */
#endif
