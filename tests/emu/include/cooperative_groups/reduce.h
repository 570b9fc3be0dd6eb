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

/* Every thread of the group gets op applied over the group's values. */
template <unsigned N, class P, class T, class Op>
T reduce(const thread_block_tile<N, P> &g, T v, Op op) {
    for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, o));
    return v;
}
template <class T, class Op> T reduce(const coalesced_group &g, T v, Op op) {
    T acc = g.shfl(v, 0);
    for (unsigned r = 1; r < g.size(); r++) acc = op(acc, g.shfl(v, r));
    return acc;
}

}  // namespace cooperative_groups
#endif
#endif
