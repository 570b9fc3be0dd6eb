/* gpudl tests, core suite: status, half, rng, context, tensor, matmul, arith
   and timing. Every op on the CPU against a float64 reference, and (in the
   nvcc build) every op on the GPU against the CPU. Without a usable GPU the
   GPU tests print SKIPPED and count as skipped.

   CPU build:  cc -O2 -DGPUDL_NO_CUDA -fopenmp tests/suite_core.c -lm
   GPU build:  nvcc -O2 tests/suite_core.c gpudl_kernels.cu tests/gpu_faults.cu -lcublas -lcublasLt -lcudnn
   Run:        ./suite_core [substring | --cpu-only | --gpu-only] [--skip=NAME...]

   How the tests are laid out. Each section of gpudl.h has its tests in a file
   named for it (tests/test_<section>.c; small neighbouring sections share one:
   test_tensor.c holds status, half, rng, context and tensor). A runner, this
   file or tests/suite_train.c, is the one translation unit of its program: it
   defines GPUDL_IMPLEMENTATION, includes harness.h and then #includes its
   section files; the section files are never compiled on their own. So:
     - gpudl's implementation is compiled once per runner, as it was before
       the tests were split: every build of the suites (cc, clang, C++, nvcc,
       nvcc-emu plainly and under ASan) is still one compiler call per runner;
     - the tests that look inside gpudl (gpudl__ functions, the fields of
       gpudl_ctx and gpudl_model) can, wherever they live: internals are
       visible only in the implementation's translation unit;
     - harness.h stays what it was: static counters and functions, one copy.
   Two runners, not one: each is its own process (the core suite here; the
   layers, model, optim, amp, data and io sections in tests/suite_train.c,
   which needs the test data), and the builds and runs in tests/run.sh,
   tests/run_emu.sh and the Makefile pick one or both (the single-threaded
   build runs this one; compute-sanitizer runs each with name filters).
   The table below is the order the tests run in, CPU tests first, then GPU
   tests: they draw from the same CPU context's random stream, so the order
   is part of what they check. A new test goes in its section's file and in
   its runner's table. */
#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"
#include "harness.h"

#include "test_tensor.c"    /* status, half, rng, context, tensor */
#include "test_matmul.c"    /* matmul */
#include "test_arith.c"     /* arith: elementwise ops and reductions */
#include "test_timing.c"    /* timing */

/* >>main ------------------------------------------------------------------ */

static const test_case tests[] = {
    {"status_strings", test_status_strings},
    {"ctx_defaults", test_ctx_defaults},
    {"ctx_cuda_request_without_gpu", test_ctx_cuda_request},
    {"ctx_auto_fallback", test_ctx_auto_fallback},
    {"f16_known_values", test_f16_known_values},
    {"f16_roundtrip_and_rounding", test_f16_roundtrip_and_rounding},
    {"bf16_values_and_rounding", test_bf16_values_and_rounding},
    {"half_bulk_conversions", test_half_bulk_conversions},
    {"tensor_lifecycle", test_tensor_lifecycle},
    {"fill_and_random", test_fill_and_random},
    {"copy_cast", test_copy_cast},
    {"matmul_f32", test_matmul_f32},
    {"matmul_f32_each_kernel", test_matmul_f32_each_kernel},
    {"matmul_batched", test_matmul_batched},
    {"matmul_half", test_matmul_half},
    {"matmul_500_cube", test_matmul_500_cube},
    {"matmul_errors", test_matmul_errors},
    {"cpu_flush_denormals", test_cpu_flush_denormals},
    {"matmul_inside_user_threads", test_matmul_inside_user_threads},
    {"elementwise", test_elementwise},
    {"reductions", test_reductions},
    {"argmax_rows", test_argmax_rows},
    {"timer_and_bench", test_timer_and_bench},
    {"gpu_device_info", test_gpu_device_info},
    {"gpu_fill_random_cast", test_gpu_fill_random_cast},
    {"gpu_copies", test_gpu_copies},
    {"gpu_matmul", test_gpu_matmul},
    {"gpu_elementwise_reductions", test_gpu_elementwise_reductions},
    {"gpu_argmax", test_gpu_argmax},
    {"gpu_timer", test_gpu_timer},
    {"gpu_fill_integer_tensors", test_gpu_fill_integer_tensors},
    {"gpu_context_keeps_its_device", test_gpu_context_keeps_its_device},
    {"gpu_misuse_caught", test_gpu_misuse_caught},
    {"gpu_sticky_error_is_fatal", test_gpu_sticky_error_is_fatal},
    {"emu_profile", test_emu_profile},
    {"cublas_cudnn_status_names", test_gpu_library_status_names},
    {"threads_bound", test_threads_bound},
    {"share_cpu", test_share_cpu},
    {"gpu_misaligned_views_tensor", test_gpu_misaligned_views_tensor},   /* last two: they reseed the CPU context */
    {"gpu_misaligned_views_arith", test_gpu_misaligned_views_arith},
    {"gpu_reduce_once", test_gpu_reduce_once},
};

/* Besides the tests, the child processes of gpu_sticky_error_is_fatal and
   compute-sanitizer's control case (make test-gpu-sanitize). */
int main(int argc, char **argv) {
    g_argv0 = argv[0];
#ifndef GPUDL_NO_CUDA
    if (argc > 1 && !strcmp(argv[1], "--child-sticky-error")) return child_sticky_error();
    if (argc > 1 && !strcmp(argv[1], "--child-sticky-library")) return child_sticky_library();
    if (argc > 1 && !strcmp(argv[1], "--control-oob")) return child_control_oob();
#endif
    return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv);
}
