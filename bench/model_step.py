#!/usr/bin/env python3
"""model_step.py - A MODEL, NOT A MEASUREMENT: the time of one steady-state
training step (batch 128) on an H100 and an A100, from the work the step
asks of the GPU, for gpudl before issue 26, gpudl after it (targets until
counted) and PyTorch eager. Plain Python 3, no packages needed.

  python3 bench/model_step.py                  the table for every GPU below
  python3 bench/model_step.py --gpu h100-sxm   one GPU
  python3 bench/model_step.py --ops            also each row's device operations
  python3 bench/model_step.py --csv PATH       the rows as CSV (tools/gpu_session.sh puts
                                               the measured times beside them)
  python3 bench/model_step.py --check-torch    (needs torch; CPU is enough) trace PyTorch's
                                               aten ops for one step and compare them with
                                               the op lists this model assumes

What the model counts (per step, after warm-up)
  - device operations, in stream order: GEMMs (m, n, k, dtype), cuDNN
    convolutions, element-wise / reduction kernels (bytes read + written),
    memsets, small copies, host waits, graph launches;
  - the host's work to issue them: a launch per kernel, a library call per
    GEMM / convolution, the other CUDA runtime calls (cudaGetDevice,
    cudaGetLastError, ...), and for PyTorch its per-op framework overhead.
gpudl before: kernel by kernel from the emulated device's trace
(CUEMU_TRACE=1) of HEAD 42ad03e (2026-11-25), the counts of issue 26's
table. gpudl after: the fused floor of issue 26, padded or trimmed to the
counts in bench/step_counts.csv (targets until the step's helper counts
them). PyTorch eager: the aten ops of one step, traced with a
TorchDispatchMode (torch 2.15.0, on the CPU: --check-torch), each mapped to
what it launches on a GPU by the rules in torch_eager() below.

The step model (stated; every figure has a low and a high value, the two
columns of the table use all the low ones, then all the high ones)
  device time of an op = max(floor, bytes / (bandwidth x fraction),
                             flops / (peak x efficiency)) + gap to the next op
  host time of an op   = its launch or library-call cost (+ PyTorch's
                         per-aten-op overhead; views and detach cost that too)
  the host issues ops in order and never waits, except at a host wait
  (PyTorch's GradScaler reads found_inf with .item() every step); the
  stream runs them in order, each starting when the previous one is done
  and the host has issued it (+ a submit latency). Simulated over 8 steps;
  the step is the steady-state period, so it is max(host, device) for a
  step with no host wait and up to host + device with one. With a CUDA
  Graph the host issues one cudaGraphLaunch (+ the step's few other API
  calls) and the device pays the smaller in-graph gap per node.
Not modelled: L2 hits (the MLP's 22 MB of weights, gradients and momentum
fit in the H100's 50 MB and the A100's 40 MB L2, so memory times are an
upper bound), clocks below boost, a GEMM's algorithm choice, overlap of
independent ops (one stream), the host's CPU model (a fast server core is
at the low end of the host figures).
"""
import argparse
import csv
import os
import re
import sys

# ---------------------------------------------------------------- GPUs ----
# Dense peaks (no sparsity) and memory bandwidth, from NVIDIA's datasheets:
#   H100: "NVIDIA H100 Tensor Core GPU" datasheet (SXM5 80 GB: FP32 67 TFLOPS,
#         TF32 989 / FP16 1,979 TFLOPS *with sparsity*, i.e. 495 / 989 dense,
#         3.35 TB/s; PCIe 80 GB: FP32 51, FP16 1,513 sparse = 756 dense, 2.0 TB/s)
#         and the H100 whitepaper (SXM5: 132 SMs, 50 MB L2; PCIe: 114 SMs).
#   A100: "NVIDIA A100 Tensor Core GPU" datasheet (FP32 19.5 TFLOPS, TF32 156,
#         FP16 312 dense; 40 GB: 1,555 GB/s; 80 GB SXM: 2,039 GB/s) and the
#         A100 whitepaper (108 SMs, 40 MB L2).
#   H200: "NVIDIA H200 Tensor Core GPU" datasheet (SXM: the H100 SXM's FP32 67 and
#         FP16 1,979 sparse TFLOPS, 4.8 TB/s): the kind of machine the project may be lent.
# FP32 rows run with TF32 off (bench_train.c: GPUDL_MATH_FP32; torch_train.py:
# allow_tf32 = False), so their GEMMs use the FP32 (non-tensor) peak.
GPUS = {
    "h100-sxm":  dict(name="H100 SXM5 80 GB", fp32=67e12, fp16=989e12, bw=3.35e12, sms=132),
    "h100-pcie": dict(name="H100 PCIe 80 GB", fp32=51e12, fp16=756e12, bw=2.0e12, sms=114),
    "a100-80":   dict(name="A100 SXM4 80 GB", fp32=19.5e12, fp16=312e12, bw=2.039e12, sms=108),
    "a100-40":   dict(name="A100 SXM4 40 GB", fp32=19.5e12, fp16=312e12, bw=1.555e12, sms=108),
    "h200":      dict(name="H200 SXM 141 GB", fp32=67e12, fp16=989e12, bw=4.8e12, sms=132),
}

# --------------------------------------------------- the model's figures ----
# (low, high): low = the fast end (all low figures give the table's low
# column), high = the slow end. Times in microseconds.
#
# Launch and issue costs. Sources:
#  [G1] NVIDIA, "Getting Started with CUDA Graphs" (developer.nvidia.com/blog/
#       cuda-graphs/, 2019, V100): a 2.9 us kernel launched back to back
#       takes 3.8 us per kernel from a stream and 3.4 us from a graph: about
#       0.9 us of device-side gap per kernel in a stream, 0.5 us in a graph;
#       launch cost on the host a few us (hidden there behind the kernel).
#  [G2] NVIDIA, "Constant Time Launch for Straight-Line CUDA Graphs and Other
#       Performance Enhancements" (developer.nvidia.com/blog/, CUDA 12.6):
#       a straight-line graph's launch costs a constant few us on the host,
#       independent of its node count.
#  [G3] susun-blog.com, "pegainfer (3): From Launch Overhead to CUDA Graph"
#       (RTX 5070 Ti, CUDA 13.0): a kernel submission through the driver and
#       runtime takes about 4-6 us (launch + wait measured together).
#  [G4] Meta's HolisticTraceAnalysis docs, "CUDA kernel launch stats": in
#       PyTorch traces the CPU side of a launch (cudaLaunchKernel etc.) is
#       usually 5-20 us (profiled, so inflated).
#  [G5] CUDA.jl docs, "Graphs": a 4-layer MLP at batch 16, 50 us per
#       evaluation eager, 16 us as a graph (8 us of it CPU time).
#  [G6] github.com/ahrefs/ocannl issue 488 (RTX 5070 Ti Laptop, CUDA 13.3,
#       WSL2, 2026): enqueueing a launch costs the host 2.6-2.8 us; a graph
#       replay about 15 us fixed + 0.58 us per node; a chain of no-op kernels
#       launched one by one ran at about 6.4 us per kernel (a laptop under
#       WSL2: above this model's 2.4-4.0 us per small op, the risk to watch).
#  [M1] measured here (2026-11-25, the 2-vCPU Xeon VM of RESULTS.md, torch
#       2.15.0 CPU wheel, nice, busy neighbours): the MLP step with widths of 8
#       and batch 2 (compute negligible) takes 408 us for its 56 aten ops =
#       7.3 us per op of dispatcher + autograd + Python: the high figure; a
#       fast server core is about twice as fast: the low one.
P = {
    "launch_us":      (2.5, 4.0),   # host: one cudaLaunchKernel (<<<>>>) incl. the C around it [G1, G3, G6; issue 26]
    "lib_us":         (4.0, 8.0),   # host: one cuBLAS/cuBLASLt GEMM call (heuristic cache hit + launch): assumed, 1.5-2x a launch
    "cudnn_us":       (6.0, 12.0),  # host: one cuDNN convolution call (descriptor checks + 1-2 launches): assumed
    "memop_us":       (2.0, 4.0),   # host: cudaMemsetAsync / cudaMemcpyAsync [G1: same path as a launch]
    "api_us":         (0.05, 0.3),  # host: another runtime call (cudaGetDevice, cudaGetLastError, cudaEventRecord...): assumed
    "graph_launch_us": (2.5, 6.0),  # host: cudaGraphLaunch of a straight-line graph [G2]
    "torch_op_us":    (3.5, 7.3),   # host: PyTorch's per-aten-op overhead (all ops, views too) [M1]
    "sync_us":        (5.0, 10.0),  # a host wait: D2H copy of 4 bytes + the host thread waking: assumed
    "submit_us":      (2.0, 4.0),   # issue -> start on an idle device: assumed
    "gap_stream_us":  (0.9, 1.5),   # device: gap between back-to-back kernels of a stream [G1]
    "gap_graph_us":   (0.4, 0.9),   # device: the same inside a graph [G1, G2, G6]
    "floor_kernel_us": (1.5, 2.5),  # device: shortest duration of a small kernel (one wave, ramp-up + drain): assumed
    "floor_lib_us":   (2.5, 5.0),   # device: shortest GEMM / convolution (cuBLAS/cuDNN kernels, split-K, 1-2 kernels): assumed
    "bw_frac":        (0.80, 0.55), # of peak DRAM bandwidth reached by a streaming kernel (large: 80-90%; these are 0.1-40 MB)
    "eff_fp32":       (0.60, 0.30), # of the FP32 peak reached by SGEMM at M = 128 (few CTAs for 132 SMs): assumed
    "eff_tc":         (0.35, 0.10), # of the dense FP16 tensor-core peak at M = 128: assumed
}

F32, F16 = 4, 2


# ------------------------------------------------------------- the ops ----
def op(kind, name, nbytes=0.0, flops=0.0, dtype="fp32", torch_ops=0, note=""):
    """One device operation (or host-only step). kind: kernel, gemm, conv,
    memset, copy, sync, host (no device work), api (n other runtime calls in
    nbytes' place), graph."""
    return dict(kind=kind, name=name, bytes=float(nbytes), flops=float(flops), dtype=dtype, torch_ops=torch_ops, note=note)


def gemm(name, m, n, k, dt, accumulate=False, aux=0.0):
    """C(m,n) = A(m,k) B(k,n); 16-bit operands write their output in 16 bits,
    except weight gradients, which are FP32 (gpudl keeps them in f32)."""
    s = F16 if dt == "fp16" else F32
    out = F32 if accumulate or dt == "fp32" else s
    nbytes = (m * k + k * n) * s + m * n * out * (2 if accumulate else 1) + aux
    return op("gemm", name, nbytes, 2.0 * m * n * k, dt)


# Networks at batch 128 (bench_train.c, torch_train.py).
B = 128
MLP = [(784, 1024), (1024, 1024), (1024, 10)]
MLP_PARAMS = sum(i * o + o for i, o in MLP)                        # 1 863 690
LENET_CONV = [  # (cin, cout, k, h_in, h_out): conv 5x5 pad 2 on 28x28, conv 5x5 on 14x14
    (1, 6, 5, 28, 28), (6, 16, 5, 14, 10)]
LENET_FC = [(400, 120), (120, 84), (84, 10)]
LENET_PARAMS = sum(co * ci * k * k + co for ci, co, k, _, _ in LENET_CONV) + sum(i * o + o for i, o in LENET_FC)  # 61 706


def conv_flops(ci, co, k, ho):
    return 2.0 * B * co * ho * ho * ci * k * k


def conv_op(name, ci, co, k, hi, ho, dt, what):
    s = F16 if dt == "fp16" else F32
    x, y, w = B * ci * hi * hi * s, B * co * ho * ho * s, co * ci * k * k * s
    if what == "fwd":
        nbytes = x + w + y
    elif what == "dgrad":
        nbytes = y + w + x
    else:   # wgrad: reads x and dy, writes dW (f32 for gpudl, dtype for torch: same order)
        nbytes = x + y + co * ci * k * k * F32
    return op("conv", name, nbytes, conv_flops(ci, co, k, ho), dt)


def params_of(model):
    return MLP_PARAMS if model == "mlp" else LENET_PARAMS


LENET_OPTIM = ["adam"]   # --lenet-optim: issue 26's table has Adam; bench_train.c and torch_train.py use SGD


def optimizer_of(model):
    return "sgd" if model == "mlp" else LENET_OPTIM[0]


# ------------------------------------------------ gpudl before issue 26 ----
def gpudl_before(model, prec, lt=False):
    """Kernel by kernel as the emulated device traced HEAD 42ad03e (counts of
    issue 26's table: MLP FP32 15 kernels + 8 library calls + 1 memset, FP16
    16 + 8 + 1, LeNet-5 (Adam) FP32 27 + 14 + 1, FP16 30 + 14 + 1; with
    cuBLASLt on, 3 kernels fewer; each step also copies the 40-byte scaler
    state to pinned memory, without a wait). Runtime API calls per step, same
    trace: 60 / 63 / 93 / 100 (49 / 52 / 82 / 89 with cuBLASLt). LeNet-5 was
    counted with Adam; with SGD the kernels are the same, the update moves
    20 instead of 28 bytes per parameter."""
    h16 = prec == "fp16"
    s = F16 if h16 else F32
    P_ = params_of(model)
    ops = [op("memset", "zero_grad: memset of the flat gradients", 4 * P_)]
    ops.append(op("kernel", "gather the batch (u8 -> f32)", B * 784 * (1 + 4) + B * 8))
    if h16:
        ops.append(op("kernel", "cast the input to f16", B * 784 * (4 + 2)))
    if model == "mlp":
        for i, (fi, fo) in enumerate(MLP):
            last = i == len(MLP) - 1
            if lt:
                ops.append(gemm(f"fc{i+1} forward, cuBLASLt {'BIAS' if last else 'RELU_BIAS'} epilogue", B, fo, fi, prec, aux=fo * s))
            else:
                ops.append(gemm(f"fc{i+1} forward (cublasGemmEx)", B, fo, fi, prec))
                ops.append(op("kernel", f"fc{i+1} bias{'' if last else ' + ReLU'}", 2 * B * fo * s + fo * s))
        acts = [B * fo for _, fo in MLP]
    else:
        for i, (ci, co, k, hi, ho) in enumerate(LENET_CONV):
            ops.append(conv_op(f"conv{i+1} forward (cuDNN)", ci, co, k, hi, ho, prec, "fwd"))
            ops.append(op("kernel", f"conv{i+1} bias + ReLU", 2 * B * co * ho * ho * s))
            ops.append(op("kernel", f"pool{i+1} forward", B * co * ho * ho * s * 1.25 + B * co * ho * ho // 4 * 4))
        for i, (fi, fo) in enumerate(LENET_FC):
            last = i == len(LENET_FC) - 1
            if lt:
                ops.append(gemm(f"fc{i+1} forward, cuBLASLt epilogue", B, fo, fi, prec, aux=fo * s))
            else:
                ops.append(gemm(f"fc{i+1} forward", B, fo, fi, prec))
                ops.append(op("kernel", f"fc{i+1} bias{'' if last else ' + ReLU'}", 2 * B * fo * s))
        acts = [B * fo for _, fo in LENET_FC]
    ops.append(op("kernel", "loss: softmax cross-entropy per row", B * 10 * s + B * 8))
    ops.append(op("kernel", "loss: sum of the rows (one block)", B * 4 + 4))
    ops.append(op("kernel", "loss: gradient", B * 10 * (s + s) + B * 4))
    fcs = MLP if model == "mlp" else LENET_FC
    for i in reversed(range(len(fcs))):
        fi, fo = fcs[i]
        first_layer = model == "mlp" and i == 0
        ops.append(gemm(f"fc{i+1} dW (accumulates)", fo, fi, B, prec, accumulate=True))
        if not first_layer:
            ops.append(gemm(f"fc{i+1} dX", B, fi, fo, prec))
        ops.append(op("kernel", f"fc{i+1} bias gradient (column sums)", B * fo * s + fo * 4 * 2))
        if i > 0:
            ops.append(op("kernel", f"ReLU backward before fc{i+1}", 3 * B * fi * s))
    if model == "lenet":
        for i in reversed(range(len(LENET_CONV))):
            ci, co, k, hi, ho = LENET_CONV[i]
            y = B * co * ho * ho
            ops.append(op("kernel", f"pool{i+1} backward (argmax recomputed per input element)", y * s * 2 + y // 4 * s))
            ops.append(op("kernel", f"conv{i+1} ReLU backward", 3 * y * s))
            ops.append(op("kernel", f"conv{i+1} bias gradient, partial sums", y * s))
            ops.append(op("kernel", f"conv{i+1} bias gradient, final (one block)", 4096))
            ops.append(conv_op(f"conv{i+1} dW (cuDNN; FP32 accumulates in place)", ci, co, k, hi, ho, prec, "wgrad"))
            if h16:
                ops.append(op("kernel", f"conv{i+1} dW (16-bit) accumulated into the f32 gradients", co * ci * k * k * 10))
            if i > 0:
                ops.append(conv_op(f"conv{i+1} dX (cuDNN)", ci, co, k, hi, ho, prec, "dgrad"))
    ops.append(op("kernel", "non-finite check / unscale: a pass over the gradients", 8 * P_))
    per = 20 if optimizer_of(model) == "sgd" else 28
    ops.append(op("kernel", f"optimizer ({optimizer_of(model)}), flat buffers" + (", + the 16-bit weight copy" if h16 else ""),
                  per * P_ + (2 * P_ if h16 else 0)))
    ops.append(op("kernel", "loss scaler / check state update (one thread)", 64))
    ops.append(op("copy", "scaler state to pinned memory (40 B, async)", 40))
    api = {("mlp", "fp32"): 60, ("mlp", "fp16"): 63, ("lenet", "fp32"): 93, ("lenet", "fp16"): 100}[(model, prec)] - (11 if lt else 0)
    nlaunch = sum(1 for o in ops if o["kind"] in ("kernel", "memset", "copy"))
    ops.append(op("api", "other CUDA runtime calls (cudaGetDevice, cudaGetLastError, ...)", api - nlaunch))
    del acts
    return ops


# --------------------------------------- gpudl after issue 26 (targets) ----
def gpudl_after(model, prec, counts):
    """The fused floor of issue 26 (cuBLASLt epilogues forward and backward,
    one loss kernel, one update kernel with the non-finite check folded in,
    no zero_grad memset, cuDNN's fused bias + activation), in stream order,
    then fitted to the kernel and memset counts of bench/step_counts.csv:
    padded with small element-wise kernels (one activation read + written)
    or trimmed (the gather, the loss and the update stay)."""
    h16 = prec == "fp16"
    s = F16 if h16 else F32
    P_ = params_of(model)
    ops = [op("kernel", "gather the batch" + (" (+ the cast to 16 bits)" if h16 else ""), B * 784 * (1 + s) + B * 8)]
    ops[0]["keep"] = True
    if model == "lenet":
        for i, (ci, co, k, hi, ho) in enumerate(LENET_CONV):
            ops.append(conv_op(f"conv{i+1} forward + bias + ReLU (cuDNN fused)", ci, co, k, hi, ho, prec, "fwd"))
            ops.append(op("kernel", f"pool{i+1} forward (saves the argmax)", B * co * ho * ho * s * 1.25 + B * co * ho * ho // 4))
    fcs = MLP if model == "mlp" else LENET_FC
    for i, (fi, fo) in enumerate(fcs):
        last = i == len(fcs) - 1
        ops.append(gemm(f"fc{i+1} forward, {'BIAS' if last else 'RELU_AUX_BIAS'} epilogue", B, fo, fi, prec,
                        aux=fo * s + (0 if last else B * fo / 8)))
    ops.append(op("kernel", "softmax cross-entropy: forward, mean and gradient in one", B * 10 * 2 * s + B * 8))
    ops[-1]["keep"] = True
    for i in reversed(range(len(fcs))):
        fi, fo = fcs[i]
        ops.append(gemm(f"fc{i+1} dW, BGRADB epilogue (overwrites)", fo, fi, B, prec))
        if not (model == "mlp" and i == 0):
            ops.append(gemm(f"fc{i+1} dX{', DRELU epilogue' if i > 0 else ''}", B, fi, fo, prec, aux=B * fi / 8 if i > 0 else 0))
    if model == "lenet":
        for i in reversed(range(len(LENET_CONV))):
            ci, co, k, hi, ho = LENET_CONV[i]
            y = B * co * ho * ho
            ops.append(op("kernel", f"pool{i+1} + ReLU backward (from saved indices)", y * s * 2 + y // 4 * s + y // 4))
            ops.append(op("kernel", f"conv{i+1} bias gradient (one pass)", y * s))
            ops.append(conv_op(f"conv{i+1} dW (cuDNN, overwrites)", ci, co, k, hi, ho, prec, "wgrad"))
            if i > 0:
                ops.append(conv_op(f"conv{i+1} dX (cuDNN)", ci, co, k, hi, ho, prec, "dgrad"))
    per = 20 if optimizer_of(model) == "sgd" else 28
    ops.append(op("kernel", "update: non-finite check + unscale + optimizer + scaler, one pass", per * P_ + (2 * P_ if h16 else 0)))
    ops[-1]["keep"] = True
    want_k, want_m = counts["kernels"], counts["memsets"]
    act = B * (1024 if model == "mlp" else 6 * 14 * 14) * s
    note = ""
    nk = sum(1 for o in ops if o["kind"] == "kernel")
    if nk > want_k:
        drop = nk - want_k
        for j in reversed(range(len(ops))):
            if drop and ops[j]["kind"] == "kernel" and not ops[j].get("keep"):
                del ops[j]
                drop -= 1
        note = f"{nk - want_k - drop} kernel(s) of the fused list left out to match the counted {want_k}"
        if drop:
            note += f" ({want_k} is below the gather, the loss and the update: {nk - (nk - want_k - drop)} modelled)"
    for _ in range(want_k - nk):
        ops.insert(-1, op("kernel", "another small kernel (the counts' rest: one activation read + written)", 2 * act))
    nlib = sum(1 for o in ops if o["kind"] in ("gemm", "conv"))
    if nlib != counts["library_calls"]:
        note += f"; library calls: {nlib} in the fused list, {counts['library_calls']} counted (the list's are used)"
    ops = [op("memset", "a memset (the counts' rest)", 4 * P_) for _ in range(want_m)] + ops
    graph = counts["graph"]
    if graph:
        ops.insert(0, op("graph", "cudaGraphLaunch: the whole step"))
    napi = counts["host_api_calls"] - (1 if graph else sum(1 for o in ops if o["kind"] in ("kernel", "memset", "copy")))
    ops.append(op("api", "other CUDA runtime calls", max(0, napi)))
    for o in ops:
        o["in_graph"] = bool(graph) and o["kind"] not in ("graph", "api")
    return ops, note.lstrip("; ")


# ---------------------------------------------------- PyTorch eager ----
# One step of torch_train.py (zero_grad(set_to_none=True), forward,
# F.cross_entropy, backward, optimizer.step(); FP16: torch.autocast +
# GradScaler), as the aten ops PyTorch 2.15 dispatches (TorchDispatchMode on
# the CPU, optimizers with foreach=True, PyTorch's default on CUDA), each
# mapped to its CUDA work:
#   addmm with a 1-D bias     -> 1 cuBLASLt GEMM with the bias in its epilogue
#                                (aten/src/ATen/native/cuda/Blas.cpp, useLtInterface)
#   mm                        -> 1 cuBLAS GEMM
#   convolution               -> 1 cuDNN call + 1 kernel adding the bias
#   convolution_backward      -> cuDNN dgrad (when the input needs it) + wgrad + 1 bias-sum kernel
#   relu, threshold_backward, _log_softmax(_backward_data), nll_loss_forward, ones_like,
#   sum (bias gradients), max_pool2d_with_indices(_backward), _to_copy (autocast casts),
#   mul, reciprocal, full     -> 1 kernel each
#   nll_loss_backward         -> 2 kernels (zero the gradient, scatter -1/N)
#   _foreach_* on CUDA tensors -> 1 multi_tensor_apply launch each (6 or 10 tensors,
#                                at most 33 chunks of 64 Ki elements: one launch holds 320)
#   _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_ -> 1 kernel each
#   _local_scalar_dense of found_inf (GradScaler.step) -> a 4-byte copy and a host wait
#   Adam's step counters live on the CPU (capturable=False): their _foreach_add_ and
#   the 2 .item() per parameter cost host time only
#   t, view, detach, lift_fresh, _record_function_* -> host time only
def torch_eager(model, prec):
    h16 = prec == "fp16"
    s = F16 if h16 else F32
    P_ = params_of(model)
    ops = []

    def host(name, n=1):
        for _ in range(n):
            ops.append(op("host", name, torch_ops=1))

    def k(name, nbytes):
        ops.append(op("kernel", name, nbytes, torch_ops=1))

    def cast(name, n_el, src=F32, dst=F16):
        k(f"_to_copy: {name}", n_el * (src + dst))

    host("_record_function_enter_new (zero_grad's profiler scope)"); host("_record_function_exit")
    if model == "mlp":
        layers = [("fc", i, fi, fo) for i, (fi, fo) in enumerate(MLP)]
    else:
        layers = [("conv", i) + LENET_CONV[i] for i in range(2)] + [("fc", i, fi, fo) for i, (fi, fo) in enumerate(LENET_FC)]
    nfc = sum(1 for L in layers if L[0] == "fc")
    # forward
    for j, L in enumerate(layers):
        if L[0] == "conv":
            _, i, ci, co, kk, hi, ho = L
            if h16:
                cast("bias", co); cast("weight", co * ci * kk * kk)
                if j == 0:
                    cast("input", B * ci * hi * hi)
            y = B * co * ho * ho
            c = conv_op(f"convolution: conv{i+1} (cuDNN)", ci, co, kk, hi, ho, prec, "fwd")
            c["torch_ops"] = 1
            ops.append(c)
            ops.append(op("kernel", f"conv{i+1} bias add (part of convolution)", 2 * y * s + co * s))
            k("relu", 2 * y * s); host("detach")
            k("max_pool2d_with_indices", y * s + y // 4 * (s + 8))
            if i == 1:
                host("view (flatten)")
        else:
            _, i, fi, fo = L
            if h16:
                cast("bias", fo); cast("weight", fi * fo)
                if j == 0:
                    cast("input", B * fi)
            host("t")
            g = gemm(f"addmm: fc{i+1} (cuBLASLt, bias epilogue)", B, fo, fi, prec, aux=fo * s)
            g["torch_ops"] = 1
            ops.append(g)
            if i < nfc - 1:
                k("relu", 2 * B * fo * s); host("detach")
    if h16:
        cast("logits to f32 (autocast)", B * 10, F16, F32)
    k("_log_softmax", 2 * B * 10 * 4); host("detach"); k("nll_loss_forward", B * 10 * 4 + B * 8)
    if h16:
        k("mul: scaler.scale(loss)", 12)
    k("ones_like", 4)
    if h16:
        k("mul (backward of the scaling)", 12)
    k("nll_loss_backward: zero", B * 10 * 4)
    ops.append(op("kernel", "nll_loss_backward: scatter", B * 8 + B * 4))
    host("detach")
    k("_log_softmax_backward_data", 3 * B * 10 * 4)
    if h16:
        cast("logits' gradient to f16", B * 10, F32, F16)
    # backward
    for j in reversed(range(len(layers))):
        L = layers[j]
        if L[0] == "fc":
            _, i, fi, fo = L
            if j > 0:
                host("t")
                g = gemm(f"mm: fc{i+1} dX", B, fi, fo, prec)
                g["torch_ops"] = 1
                ops.append(g)
            host("t")
            g = gemm(f"mm: fc{i+1} dW", fo, fi, B, prec)
            g["torch_ops"] = 1
            ops.append(g)
            host("t")
            k(f"sum: fc{i+1} bias gradient", B * fo * s + fo * s)
            host("view"); host("t")
            if h16:
                cast("dW to f32", fi * fo, F16, F32); host("detach"); cast("db to f32", fo, F16, F32); host("detach")
            else:
                host("detach", 2)
            if j > 0 and layers[j - 1][0] == "fc":
                host("detach"); k("threshold_backward (ReLU)", 3 * B * fi * s)
            if j > 0 and layers[j - 1][0] == "conv":
                host("view (unflatten)")
        else:
            _, i, ci, co, kk, hi, ho = L
            y = B * co * ho * ho
            k(f"max_pool2d_with_indices_backward: pool{i+1}", y // 4 * (s + 8) + y * s)
            host("detach"); k(f"threshold_backward: conv{i+1} ReLU", 3 * y * s)
            c = conv_op(f"convolution_backward: conv{i+1} dW (cuDNN)", ci, co, kk, hi, ho, prec, "wgrad")
            c["torch_ops"] = 1
            ops.append(c)
            if j > 0:
                ops.append(conv_op(f"convolution_backward: conv{i+1} dX (cuDNN)", ci, co, kk, hi, ho, prec, "dgrad"))
            ops.append(op("kernel", f"convolution_backward: conv{i+1} bias gradient", y * s + co * s))
            if h16:
                cast("dW to f32", co * ci * kk * kk, F16, F32); host("detach"); cast("db to f32", co, F16, F32); host("detach")
            else:
                host("detach", 2)
    nparam = 2 * len(layers)
    # GradScaler.unscale_ and the check
    if h16:
        k("_to_copy: scale to f64", 12); k("reciprocal", 16); k("_to_copy: to f32", 12); k("full: found_inf", 4)
        k("_to_copy: inv_scale (copy=True)", 8); k("_to_copy: found_inf (copy=True)", 8)
        k("_amp_foreach_non_finite_check_and_unscale_", 8 * P_)
        ops.append(op("sync", "_local_scalar_dense: found_inf.item() (copy + host wait)", 4, torch_ops=1))
    host("_record_function_enter_new (optimizer.step's profiler scope)")
    if optimizer_of(model) == "sgd":
        k("_foreach_mul_: momentum buffers", 8 * P_)
        k("_foreach_add_: buffers += grads", 12 * P_)
        k("_foreach_add_: params -= lr * buffers", 12 * P_)
    else:
        host("lift_fresh (a CPU scalar)"); host("_foreach_add_: step counters (CPU)")
        k("_foreach_lerp_: exp_avg", 12 * P_); k("_foreach_mul_: exp_avg_sq", 8 * P_)
        k("_foreach_addcmul_: exp_avg_sq", 12 * P_)
        host("_local_scalar_dense: bias corrections (CPU step counters)", 2 * nparam)
        k("_foreach_sqrt", 8 * P_); k("_foreach_div_", 8 * P_); k("_foreach_add_: eps", 8 * P_)
        k("_foreach_addcdiv_: params", 16 * P_)
    host("_record_function_exit")
    if h16:
        k("_amp_update_scale_", 16)
    return ops


# ------------------------------------------------------------ timing ----
def device_us(o, gpu, lo):
    i = 0 if lo else 1
    if o["kind"] in ("host", "api", "graph", "sync"):
        return 0.0
    gap = P["gap_graph_us" if o.get("in_graph") else "gap_stream_us"][i]
    floor = P["floor_lib_us" if o["kind"] in ("gemm", "conv") else "floor_kernel_us"][i]
    t_mem = o["bytes"] / (gpu["bw"] * P["bw_frac"][i]) * 1e6
    t_cmp = 0.0
    if o["flops"]:
        fp16 = o["dtype"] == "fp16"
        t_cmp = o["flops"] / (gpu["fp16" if fp16 else "fp32"] * P["eff_tc" if fp16 else "eff_fp32"][i]) * 1e6
    if o["kind"] == "copy":
        floor = P["floor_kernel_us"][i]
    return max(floor, t_mem, t_cmp) + gap


def host_us(o, impl, lo):
    i = 0 if lo else 1
    kind = o["kind"]
    t = P["torch_op_us"][i] * o.get("torch_ops", 0) if impl == "torch" else 0.0
    if o.get("in_graph"):
        return t
    if kind == "kernel":
        t += P["launch_us"][i]
    elif kind == "gemm":
        t += P["lib_us"][i]
    elif kind == "conv":
        t += P["cudnn_us"][i]
    elif kind in ("memset", "copy"):
        t += P["memop_us"][i]
    elif kind == "api":
        t += P["api_us"][i] * o["bytes"]
    elif kind == "graph":
        t += P["graph_launch_us"][i]
    elif kind == "sync":
        t += P["memop_us"][i]
    return t


def simulate(ops, impl, gpu, lo, steps=8):
    """Host issues in order; the stream runs in order. Returns the
    steady-state step (us), the host's and the device's busy time per step."""
    i = 0 if lo else 1
    h = d = 0.0
    ends = []
    for _ in range(steps):
        graph_start = None
        for o in ops:
            h += host_us(o, impl, lo)
            if o["kind"] == "graph":
                graph_start = h
                continue
            dt = device_us(o, gpu, lo)
            if dt:
                ready = (graph_start if o.get("in_graph") else h) + P["submit_us"][i]
                d = max(d, ready) + dt
            if o["kind"] == "sync":
                h = max(h, d) + P["sync_us"][i]
        ends.append(max(h, d))
    period = (ends[-1] - ends[len(ends) // 2]) / (len(ends) - 1 - len(ends) // 2)
    host_busy = sum(host_us(o, impl, lo) for o in ops)
    dev_busy = sum(device_us(o, gpu, lo) for o in ops)
    return period, host_busy, dev_busy


def load_counts(path):
    rows = {}
    with open(path) as fh:
        for r in csv.DictReader(fh):
            if r["variant"] != "gpudl-after":
                continue
            rows[(r["model"], r["precision"])] = dict(
                kernels=int(r["kernels"]), library_calls=int(r["library_calls"]), memsets=int(r["memsets"]),
                graph=int(r["graph"]), host_api_calls=int(r["host_api_calls"]), status=r["status"])
    return rows


def rows_for(counts):
    """(model, precision, variant label, impl, ops, note) for every row of the table."""
    out = []
    for model in ("mlp", "lenet"):
        for prec in ("fp32", "fp16"):
            out.append((model, prec, "gpudl before", "gpudl", gpudl_before(model, prec), "counted (emulator, HEAD 42ad03e)"))
            out.append((model, prec, "gpudl before, cuBLASLt on", "gpudl", gpudl_before(model, prec, lt=True),
                        "counted (emulator, HEAD 42ad03e)"))
            c = counts.get((model, prec))
            if c:
                g = dict(c, graph=0, host_api_calls=c["kernels"] + c["memsets"] + 10)
                ops, note = gpudl_after(model, prec, g)
                out.append((model, prec, "gpudl after, no graph", "gpudl", ops, c["status"] + (f"; {note}" if note else "")))
                if c["graph"]:
                    ops, note = gpudl_after(model, prec, c)
                    out.append((model, prec, "gpudl after, CUDA Graph", "gpudl", ops, c["status"] + (f"; {note}" if note else "")))
            out.append((model, prec, "PyTorch eager", "torch", torch_eager(model, prec),
                        "aten ops traced (torch 2.15.0, CPU), mapped to CUDA work"))
    return out


def counts_of(ops):
    n = {"kernel": 0, "gemm": 0, "conv": 0, "memset": 0, "copy": 0, "sync": 0, "graph": 0}
    for o in ops:
        if o["kind"] in n:
            n[o["kind"]] += 1
    return n


def main():
    ap = argparse.ArgumentParser(description="A model (not a measurement) of one training step on H100/A100.")
    ap.add_argument("--gpu", choices=list(GPUS) + ["all"], default="all")
    ap.add_argument("--counts", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "step_counts.csv"))
    ap.add_argument("--ops", action="store_true", help="list each row's device operations")
    ap.add_argument("--csv", help="write the rows as CSV")
    ap.add_argument("--check-torch", action="store_true", help="trace PyTorch (needs torch) and compare with the op lists")
    ap.add_argument("--lenet-optim", choices=["adam", "sgd"], default="adam",
                    help="LeNet-5's optimizer: adam (issue 26's table, default) or sgd (momentum: bench_train.c, torch_train.py)")
    a = ap.parse_args()
    LENET_OPTIM[0] = a.lenet_optim
    if a.check_torch:
        return check_torch()
    counts = load_counts(a.counts) if os.path.exists(a.counts) else {}
    if not counts:
        print(f"note: no gpudl-after rows in {a.counts}: those rows are left out", file=sys.stderr)
    rows = rows_for(counts)
    gpus = list(GPUS) if a.gpu == "all" else [a.gpu]
    print("A MODEL, NOT A MEASUREMENT: one training step at batch 128, per the assumptions in bench/model_step.py")
    print(f"(MLP 784-1024-1024-10 with SGD momentum; LeNet-5 with {'Adam' if optimizer_of('lenet') == 'adam' else 'SGD momentum'})")
    print("(step = steady-state period of a host issuing in order and one stream running in order: max(host, device)\n"
          " without a host wait; no overlap = host + device, the bound if nothing overlapped; "
          "low = all fast figures, high = all slow ones)")
    out = []
    for gk in gpus:
        gpu = GPUS[gk]
        print(f"\n== {gpu['name']}: FP32 {gpu['fp32'] / 1e12:g} TFLOPS (TF32 off), FP16 tensor {gpu['fp16'] / 1e12:g} "
              f"TFLOPS dense, {gpu['bw'] / 1e12:g} TB/s")
        print(f"{'model':<6} {'prec':<5} {'variant':<26} {'kern':>4} {'lib':>3} {'mset':>4} {'wait':>4} {'host us':>11} "
              f"{'device us':>11} {'step us':>11} {'bound':>6} {'no overlap':>11}")
        for model, prec, label, impl, ops, note in rows:
            n = counts_of(ops)
            lo, hlo, dlo = simulate(ops, impl, gpu, True)
            hi, hhi, dhi = simulate(ops, impl, gpu, False)
            bound = "host" if hlo + hhi > dlo + dhi else "device"
            if n["sync"]:
                bound += "+w"
            print(f"{model:<6} {prec:<5} {label:<26} {n['kernel']:>4} {n['gemm'] + n['conv']:>3} {n['memset']:>4} "
                  f"{n['sync']:>4} {hlo:>5.0f}-{hhi:<5.0f} {dlo:>5.0f}-{dhi:<5.0f} {lo:>5.0f}-{hi:<5.0f} {bound:>6} "
                  f"{hlo + dlo:>5.0f}-{hhi + dhi:<5.0f}")
            out.append(dict(gpu=gk, model=model, precision=prec, optimizer=optimizer_of(model), variant=label, kernels=n["kernel"],
                            library_calls=n["gemm"] + n["conv"], memsets=n["memset"], host_waits=n["sync"],
                            graph=n["graph"], host_us_low=round(hlo, 1), host_us_high=round(hhi, 1),
                            device_us_low=round(dlo, 1), device_us_high=round(dhi, 1), step_us_low=round(lo, 1),
                            step_us_high=round(hi, 1), source=note))
            if a.ops and gk == gpus[0]:
                for o in ops:
                    if o["kind"] == "host":
                        continue
                    print(f"      {o['kind']:<6} {device_us(o, gpu, True):6.1f}-{device_us(o, gpu, False):<6.1f} us  "
                          f"{o['bytes'] / 1e6 if o['kind'] != 'api' else 0:8.3f} MB {o['flops'] / 1e6:8.1f} MFLOP  "
                          f"{o['name']}{' x %d' % o['bytes'] if o['kind'] == 'api' else ''}")
    notes = sorted({r[5] for r in rows})
    print("\nsources of the rows: " + " | ".join(notes))
    if a.csv:
        with open(a.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(out[0].keys()))
            w.writeheader()
            w.writerows(out)
        print(f"wrote {a.csv}")
    return 0


# ----------------------------------------------- --check-torch (torch) ----
def check_torch():
    """Traces one step of each model with PyTorch on the CPU (after 2 warm-up
    steps) and compares its aten ops, by name and count, with the host and
    device ops torch_eager() assumes (autocast FP16 on the CPU casts like
    CUDA's for these ops)."""
    import collections
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    class Rec(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    def make(name):
        if name == "mlp":
            return nn.Sequential(*[m for i, (fi, fo) in enumerate(MLP)
                                   for m in ([nn.Linear(fi, fo)] + ([nn.ReLU()] if i < len(MLP) - 1 else []))])
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                             nn.Linear(84, 10))

    bad = 0
    print(f"torch {torch.__version__}: aten ops of one step (TorchDispatchMode, CPU, foreach optimizers) against the model")
    for model in ("mlp", "lenet"):
        for prec in ("fp32", "fp16"):
            torch.manual_seed(1)
            net = make(model)
            opt = (torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=True) if optimizer_of(model) == "sgd"
                   else torch.optim.Adam(net.parameters(), lr=1e-3, foreach=True))
            x = torch.randn(B, 784) if model == "mlp" else torch.randn(B, 1, 28, 28)
            y = torch.arange(B) % 10
            scaler = torch.amp.GradScaler("cpu") if prec == "fp16" else None

            def step():
                opt.zero_grad(set_to_none=True)
                if scaler:
                    with torch.autocast(device_type="cpu", dtype=torch.float16):
                        loss = F.cross_entropy(net(x), y)
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                else:
                    F.cross_entropy(net(x), y).backward()
                    opt.step()
            step()
            step()
            r = Rec()
            with r:
                step()
            ops = torch_eager(model, prec)
            traced = len(r.ops)
            modelled = sum(o["torch_ops"] for o in ops)
            n = counts_of(ops)
            tc = collections.Counter(r.ops)
            mc = collections.Counter()
            for o in ops:
                if o["torch_ops"]:
                    mc[re.split(r"[: (]", o["name"])[0]] += o["torch_ops"]
            ok = tc == mc
            if not ok:
                print(f"     traced but not modelled: {dict(tc - mc)}; modelled but not traced: {dict(mc - tc)}")
            bad += not ok
            print(f"  {model:<6} {prec}: traced {traced} aten ops, the model {modelled}: {'agree op by op' if ok else 'DIFFER'}; "
                  f"on a GPU: {n['kernel']} kernels + {n['gemm'] + n['conv']} library calls"
                  f"{' + a copy and a host wait' if n['sync'] else ''}")
            print("     " + ", ".join(f"{k} {v}" for k, v in sorted(tc.items())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
