/* cooperative_groups/reduce.h (cuemu) - cg::reduce over a tile or a
   coalesced group, and the function objects it takes. */
#ifndef CUEMU_CG_REDUCE_H
#define CUEMU_CG_REDUCE_H
#include "../cooperative_groups.h"
#if defined(__cplusplus) && defined(__CUDACC__)

namespace cooperative_groups {

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

/* Every thread of the group gets op applied over the group's values
   (Programming Guide, Cooperative Groups, "reduce": over a thread_block_tile
   or a coalesced_group). A tile of several warps (64..1024 threads):
   each warp reduces its lanes, then every thread combines the warps'
   results, exchanged through the block's scratch (cuemu::tile_scratch)
   between two syncs of the tile. */
template <unsigned N, class P, class T, class Op>
T reduce(const thread_block_tile<N, P> &g, T v, Op op) {
    if constexpr (N <= 32) {
        for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, o));
        return v;
    } else {
        static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 128,
                      "cuemu: cg::reduce over a tile of more than 32 threads takes a trivially copyable type of at most 128 bytes");
        for (unsigned o = 16; o > 0; o >>= 1)
            v = op(v, details::by_words(v, [&](auto x) { return __shfl_xor_sync(0xffffffffu, x, (int)o, 32); }));
        unsigned char *slot = (unsigned char *)cuemu::tile_scratch() + 64 * 1024;
        unsigned first_warp = details::block_rank() / N * (N / 32);
        if (cuemu::lane_id() == 0) memcpy(slot + 128 * (details::block_rank() / 32), &v, sizeof(T));
        g.sync();
        T acc = v, x = v;
        memcpy(&acc, slot + 128 * first_warp, sizeof(T));
        for (unsigned k = 1; k < N / 32; k++) {
            memcpy(&x, slot + 128 * (first_warp + k), sizeof(T));
            acc = op(acc, x);
        }
        g.sync();   /* the slots are free again */
        return acc;
    }
}
template <class T, class Op> T reduce(const coalesced_group &g, T v, Op op) {
    T acc = g.shfl(v, 0);
    for (unsigned r = 1; r < g.size(); r++) acc = op(acc, g.shfl(v, r));
    return acc;
}

}  // namespace cooperative_groups
#endif
#endif
