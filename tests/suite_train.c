/* gpudl tests, training suite: activation, linear, loss, conv, pool,
   batchnorm, dropout, model, gradcheck, optim, amp, data and io. Every layer
   on the CPU against a float64 reference, gradient checks for every layer,
   optimizers and schedules, mixed precision, the IDX loader's fault cases,
   the dataset, checkpoints (round trip, resume, corruption) and short
   training runs; in the nvcc build, every layer and training on the GPU
   against the CPU (SKIPPED without a GPU).

   Data: the Fashion-MNIST subset decompressed into $GPUDL_TEST_DATA
   (tests/run.sh does that; default build/test/data).
   CPU build:  cc -O2 -DGPUDL_NO_CUDA -fopenmp tests/suite_train.c -lm
   GPU build:  nvcc -O2 tests/suite_train.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   Run:        ./suite_train [substring | --cpu-only | --gpu-only] [--skip=NAME...]

   The layout (one file per section of gpudl.h, #included here into the one
   translation unit that holds gpudl's implementation) is explained at the
   top of tests/suite_core.c. Helpers that several section files use are in
   train_helpers.h. The table below is the order the tests run in (they share
   the CPU context's random stream). */
/* Fault injection (gpudl.h's GPUDL__FAULT): while g_fault_at >= 0, every
   guarded call of a kind in g_fault_kinds (bits 1 << kind) is counted in
   g_fault_seen, and the one numbered g_fault_at fails without running. */
#ifndef GPUDL_NO_CUDA
static long long g_fault_at = -1, g_fault_seen;
static int g_fault_kinds = ~0, g_fault_hit;
static int test_fault(int kind) {
    if (g_fault_at < 0 || !(g_fault_kinds & (1 << kind))) return 0;
    if (g_fault_seen++ != g_fault_at) return 0;
    g_fault_hit = kind;
    return 1;
}
#define GPUDL__FAULT(kind) test_fault(kind)
#endif

#define GPUDL_IMPLEMENTATION
#include "../gpudl.h"
#include "harness.h"
#include "train_helpers.h"

#include "test_layers.c"    /* activation, linear, loss, conv, pool, batchnorm, dropout */
#include "test_model.c"     /* model, gradcheck */
#include "test_optim.c"     /* optim */
#include "test_amp.c"       /* amp */
#include "test_data.c"      /* data */
#include "test_io.c"        /* io */
#include "test_override.c"  /* override, custom layers */
#include "test_transformer.c" /* transformer: embedding, layer norm, attention */

/* >>main ------------------------------------------------------------------ */

static const test_case tests[] = {
    {"activations", test_activations},
    {"linear", test_linear},
    {"softmax_xent", test_softmax_xent},
    {"mse", test_mse},
    {"conv2d", test_conv2d},
    {"pool2d", test_pool2d},
    {"pool2d_2x2_special", test_pool2d_2x2_special},
    {"batchnorm", test_batchnorm},
    {"dropout", test_dropout},
    {"gradcheck_every_layer", test_gradcheck_layers},
    {"gradcheck_api", test_gradcheck_catches_errors},
    {"model_api_errors", test_model_api_errors},
    {"model_refused_layer", test_model_refused_layer},
    {"grad_accumulation", test_grad_accumulation},
    {"predict_into_callers_tensor", test_predict_into_callers_tensor},
    {"optimizers", test_optimizers},
    {"optimizers_vectorised", test_optimizers_vectorised},
    {"lr_schedules", test_lr_schedules},
    {"idx_loader_faults", test_idx_loader},
    {"idx_gzip", test_idx_gzip},
    {"idx_gunzip_builtin", test_gunzip_builtin},
    {"dataset", test_dataset},
    {"dataset_float_images", test_dataset_float_images},
    {"training_learns", test_training_learns},
    {"checkpoint_roundtrip_resume", test_checkpoint_roundtrip_and_resume},
    {"checkpoint_corruption", test_checkpoint_corruption},
    {"scaler_state_machine", test_scaler_state_machine},
    {"nonfinite_detector", test_nonfinite_detector},
    {"persistent_overflow", test_persistent_overflow},
    {"scaler_checkpoint", test_scaler_checkpoint},
    {"mixed_precision_accuracy", test_mixed_precision_accuracy},
    {"memory_report", test_memory_report},
    {"layers_16bit", test_layers_16bit},
    {"bias_sums", test_bias_sums},
    {"gpu_layers", test_gpu_layers},
    {"gpu_layers_16bit", test_gpu_layers_16bit},
    {"gpu_layers_bias_sums", test_gpu_layers_bias_sums},
    {"gpu_layers_batchnorm_chunks", test_gpu_layers_batchnorm_chunks},
    {"gpu_amp_steps", test_gpu_amp_steps},
    {"gpu_fused_parity", test_gpu_fused_parity},
    {"gpu_layers_linear_lt", test_gpu_layers_linear_lt},
    {"gpu_training_parity", test_gpu_training_parity},
    {"gpu_mixed_precision_full", test_gpu_mixed_precision_full},
    {"gpu_layers_linear_lt_alignment", test_gpu_layers_linear_lt_alignment},
    {"gpu_conv_algorithm_choice", test_gpu_conv_algorithm_choice},
    {"gpu_emu_counters_training_step", test_gpu_emu_counters_training_step},
    {"gpu_xent_label_out_of_range", test_gpu_xent_label_out_of_range},   /* last: the others keep their random draws */
    {"activations_nonfinite", test_activations_nonfinite},               /* new tests go after it, for the same reason */
    {"nonfinite_fp32_bf16", test_nonfinite_fp32_bf16},
    {"gpu_activations_nonfinite", test_gpu_activations_nonfinite},
    {"gpu_nonfinite_fp32_bf16", test_gpu_nonfinite_fp32_bf16},
    {"activations_edges", test_activations_edges},
    {"gpu_activations_edges", test_gpu_activations_edges},
    {"mnist_messages", test_mnist_messages},
    {"checkpoint_not_safetensors", test_checkpoint_not_safetensors},
    {"fashion_mnist_find", test_fashion_mnist_find},
    {"checkpoint_save_twice", test_checkpoint_save_twice},
    {"checkpoint_to_memory", test_checkpoint_to_memory},
    {"override_per_context", test_override_per_context},
    {"override_trains_model", test_override_trains_model},
    {"gemm_f16_override", test_gemm_f16_override},
    {"check_op", test_check_op},
    {"custom_layer_check", test_custom_layer_check},
    {"custom_layer_errors", test_custom_layer_errors},
    {"custom_layer_cnn", test_custom_layer_cnn},
    {"gpu_override_and_custom", test_gpu_override_and_custom},
    {"model_profile", test_model_profile},
    {"transformer_embedding", test_transformer_embedding},
    {"transformer_layernorm", test_transformer_layernorm},
    {"transformer_layernorm_in_place", test_transformer_layernorm_in_place},
    {"transformer_attention", test_transformer_attention},
    {"transformer_attention_fused", test_transformer_attention_fused},
    {"transformer_causal", test_transformer_causal},
    {"transformer_xent_positions", test_transformer_xent_positions},
    {"transformer_bad_input", test_transformer_bad_input},
    {"transformer_block", test_transformer_block},
    {"transformer_model", test_transformer_model},
    {"transformer_model_causal", test_transformer_model_causal},
    {"transformer_model_learns", test_transformer_model_learns},
    {"transformer_model_checkpoint", test_transformer_model_checkpoint},
    {"transformer_model_bad", test_transformer_model_bad},
    {"transformer_model_residual", test_transformer_model_residual},
    {"transformer_model_override", test_transformer_model_override},
    {"transformer_model_gpt2_init", test_transformer_model_gpt2_init},
    {"gpu_transformer_ops", test_gpu_transformer_ops},
    {"gpu_transformer_edges", test_gpu_transformer_edges},
    {"gpu_transformer_counts", test_gpu_transformer_counts},
    {"gpu_transformer_block", test_gpu_transformer_block},
    {"gpu_transformer_model", test_gpu_transformer_model},
    {"gpu_gpt_learns_fp16", test_gpu_gpt_learns_fp16},
    {"gpu_bad_batch_skips", test_gpu_bad_batch_skips},
    {"gpu_transformer_residual", test_gpu_transformer_residual},
    {"gpu_transformer_step_counts", test_gpu_emu_gpt_step_counts},
    {"gpu_emu_model_release", test_gpu_emu_model_release},
    {"gpu_kernels_views_and_pool_cells", test_gpu_kernels_views_and_pool_cells},
    {"gpu_step_atomic", test_gpu_step_atomic},
    {"gpu_emu_step_floor", test_gpu_emu_step_floor},
    {"gpu_graph_step", test_gpu_graph_step},
    {"gpu_zero_grad_contract", test_gpu_zero_grad_contract},
    {"dataset_dtype", test_dataset_dtype},
    {"gpu_dataset_dtype", test_gpu_dataset_dtype},
    {"model_input_16bit", test_model_input_16bit},
    {"gpu_model_input_16bit", test_gpu_model_input_16bit},
    {"check_attn", test_check_attn},
    {"gpu_check_attn", test_gpu_check_attn},
};

int main(int argc, char **argv) { return run_tests(tests, sizeof tests / sizeof tests[0], argc, argv); }
