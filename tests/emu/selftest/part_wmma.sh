# part_wmma.sh - Warp Matrix Functions (<mma.h>) beyond wmma.cu and
# strict_wmma.cu (sourced by run.sh after the self-test programs):
# the API-only results under a permuted fragment mapping, the emulator's
# mma.h found before a CUDA toolkit's (whose host bodies are empty) even
# with -I pointing into the toolkit, and what is refused at compile time.
echo "== warp matrix functions: mapping, header precedence, refusals"
if [ -x "$OUT/wmma" ]; then
    CUEMU_SCHEDULE=shuffle CUEMU_SEED=3 program wmma_shuffled_mapping "$OUT/wmma"
else
    bad wmma_shuffled_mapping "(wmma was not built)"
fi
if [ -f /usr/local/cuda/include/mma.h ]; then
    build_and_run wmma_with_toolkit_include "$HERE/wmma.cu" -O2 -I/usr/local/cuda/include
else
    skip wmma_with_toolkit_include "(no /usr/local/cuda/include/mma.h)"
fi
wmma_refused() {   # wmma_refused NAME WANT SOURCE: the build fails and says WANT
    local name=$1 want=$2 src=$OUT/wmma_refused_$1.cu
    printf '#include <mma.h>\nusing namespace nvcuda;\n__global__ void k() { %s }\nint main() { return 0; }\n' "$3" >"$src"
    if "$NVCC_EMU" -o "$OUT/wmma_refused_$name" "$src" >"$OUT/wmma_refused_$name.log" 2>&1; then
        bad "wmma_refuses_$name" "(built)"
    elif grep -q "$want" "$OUT/wmma_refused_$name.log"; then ok "wmma_refuses_$name"
    else bad "wmma_refuses_$name" "(no \"$want\" in the compiler's output)"; tail -5 "$OUT/wmma_refused_$name.log" | sed 's/^/        /'; fi
}
wmma_refused sub_byte "sub-byte WMMA types (u4, s4, b1) are not emulated" \
    'wmma::fragment<wmma::matrix_a, 8, 8, 32, wmma::experimental::precision::u4, wmma::row_major> a; (void)a;'
wmma_refused undocumented_shape "not in the CUDA C++ Programming Guide's" \
    'wmma::fragment<wmma::matrix_a, 16, 16, 8, __half, wmma::row_major> a; (void)a;'
wmma_refused accumulator_layout "an accumulator takes no layout" \
    'wmma::fragment<wmma::accumulator, 16, 16, 16, float, wmma::row_major> a; (void)a;'
wmma_refused accumulator_load_without_layout "takes the layout" \
    'wmma::fragment<wmma::accumulator, 16, 16, 16, float> c; wmma::load_matrix_sync(c, (const float *)0, 16);'
wmma_refused type_pairing "pairing of matrix_a/matrix_b and accumulator" \
    'wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a; wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b; wmma::fragment<wmma::accumulator, 16, 16, 16, int> c; wmma::mma_sync(c, a, b, c);'
