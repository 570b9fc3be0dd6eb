# gpudl - make help lists the targets
# The library itself needs no build step: copy gpudl.h and gpudl_kernels.cu.
CC      ?= cc
NVCC    ?= nvcc
CFLAGS  ?= -O2
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)
# Probes that start programs (nvcc, python3, a compiler) run only when a
# recipe needs their answer, once per make (make help and make doctor run
# none of them): $(call lazy,VAR,command) defines VAR that way.
lazy = $(eval $(1) = $$(eval $(1) := $$$$(shell $(2)))$$($(1)))
# Where cuBLAS or cuDNN sit outside nvcc's search path (say, only in
# PyTorch's pip wheels), tools/cuda_flags.sh finds them: -I, -L and an
# rpath, and LD_LIBRARY_PATH for the programs run here ($(CUDA_RUN) before
# a command). Empty on a normal install.
$(call lazy,CUDA_FLAGS,$(if $(HAVE_NVCC),NVCC=$(NVCC) sh tools/cuda_flags.sh))
$(call lazy,CUDA_LIBDIRS,$(if $(HAVE_NVCC),NVCC=$(NVCC) sh tools/cuda_flags.sh --libdirs))
CUDA_RUN = $(if $(CUDA_LIBDIRS),LD_LIBRARY_PATH=$(CUDA_LIBDIRS)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH})
CUDA_LIBS  = $(CUDA_FLAGS) -lcublas -lcublasLt -lcudnn
# Data parallel (gpudl_dist): the examples take --dist when MPI (and, in nvcc
# builds, NCCL) are there: -DGPUDL_MPI with mpicc's flags, -DGPUDL_NCCL -lnccl.
HAVE_MPI := $(shell command -v mpicc >/dev/null 2>&1 && echo yes)
ifdef HAVE_MPI
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS := $(shell mpicc --showme:link 2>/dev/null)
DIST_FLAGS = -DGPUDL_MPI $(MPI_CFLAGS)
DIST_LIBS = $(MPI_LIBS)
endif
$(call lazy,HAVE_NCCL,$(if $(HAVE_NVCC),printf '\043include <nccl.h>\n' | $(NVCC) $$(CUDA_FLAGS) -x cu -E - >/dev/null 2>&1 && echo yes))
$(call lazy,HAVE_OPENBLAS,printf '\043include <cblas.h>\nint main(void){return 0;}\n' | $(CC) -x c - -o /dev/null -lopenblas 2>/dev/null && echo yes)

.PHONY: test-samples test-embed all help demo demo-gpt bench-gpt bench-cpu doctor data matmul-demo grade grade-class plots test test-extra test-all test-emu test-windows test-arm64 test-dist test-gpu test-gpu-suites test-gpu-sanitize test-sanitize fuzz bench bench-matmul bench-train bench-dist bench-contention gpu-static model clean
EXAMPLES = build/cnn_fashion build/mlp_fashion build/mixed_precision build/cpu_vs_gpu build/gradcheck build/doctor build/gpt_text
all: $(EXAMPLES)

help:
	@echo "make demo          train the demo CNN on Fashion-MNIST (GPU if there is one, else the CPU)"
	@echo "make demo-gpt      train a small character-level GPT on Debian's license texts, then sample it (a few minutes on a CPU)"
	@echo "make doctor        check the build on this machine: driver, GPU, libraries, CPU, data; says what to fix"
	@echo "make matmul-demo   time t @ t and a 10000^2 product on the CPU and the GPU"
	@echo "make               build every example into build/"
	@echo "make test          the test suite on any machine, GPU or not: every area, about 10 minutes on 2 cores"
	@echo "make test-all      every tier in full (make test-extra, then make test): about 58 minutes"
	@echo "make test-extra    what make test leaves out: sanitizers, fuzzing, the full tiers below"
	@echo "make test-emu      the GPU path on the emulated CUDA device, in full"
	@echo "make test-samples  CUDA programs in the cuda-samples style, one per feature, on the emulated device"
	@echo "make test-embed    gpudl.h warning-free under users' flags and compilers (EMBED_ARGS=--full: every one)"
	@echo "make test-windows  the CPU suites and examples built by MinGW-w64, run under Wine"
	@echo "make test-arm64    the CPU suites built for aarch64 (NEON GEMM), run under QEMU (slow; make test runs a subset)"
	@echo "make test-dist     data parallel: 2 MPI ranks on the CPU, 2 NCCL ranks on the emulated GPU"
	@echo "make test-gpu      the GPU suites and compute-sanitizer, on a GPU machine"
	@echo "make test-sanitize the CPU suites under ASan/UBSan"
	@echo "make fuzz          libFuzzer on the IDX and checkpoint loaders (clang)"
	@echo "make bench         benchmarks: tables, CSV and pictures (bench/*.png) under bench/"
	@echo "make bench-gpt     the GPT step on the CPU: gpudl against PyTorch and JAX, same threads (bench/gpt_step.py)"
	@echo "make bench-cpu     issue 38's table: MLP, LeNet-5, GPT step, SGEMM on the CPU, README and -march=native builds against PyTorch, JAX, OpenBLAS (bench/bench_cpu.py)"
	@echo "make bench-dist    data parallel on the CPU cores: 1 rank x 2 threads against 2 ranks x 1"
	@echo "make bench-contention  1 and 2 OpenMP threads, idle and beside a busy core (bench/contention.csv)"
	@echo "make gpu-static    NVIDIA's compiler on the kernels, no GPU needed: registers, spills, occupancy (sm_80/90/100/120),"
	@echo "                   128-bit loads in the sm_90 SASS (cuobjdump from NVIDIA's pip wheel, into build/nvtools)"
	@echo "make model         a stated model (not a measurement) of the training step on H100/A100 (bench/model_step.py)"
	@echo "make plots         redraw the pictures; with build/demo.csv from make demo DEMO_ARGS=\"--log build/demo.csv\""
	@echo "make data          find or fetch Fashion-MNIST into build/data"
	@echo "make grade A=relu_xent|sgemm|maxpool|attention|tensor_core [SRC=file] [GRADE_ARGS=--no-train]"
	@echo "                   grade an assignment (assignments/README.md): default SRC is its starter file"
	@echo "make grade-class A=... DIR=folder [OUT=grades.csv] [GRADE_ARGS=--no-train]"
	@echo "                   grade a class: every file of the folder, in parallel, sandboxed; a CSV row and a feedback file each"
	@echo "make clean         remove build/, the benchmark CSVs and the emulator's cache"

# Examples run on the GPU when there is one (nvcc build), else on the CPU.
ifdef HAVE_NVCC
build/%: examples/%.c gpudl.h gpudl_kernels.cu | build
	$(NVCC) $(CFLAGS) $(CUDA_ARCH) -Xcompiler -fopenmp -I. $(DIST_FLAGS) $(if $(HAVE_NCCL),-DGPUDL_NCCL) -o $@ $< \
	    gpudl_kernels.cu $(CUDA_LIBS) $(if $(HAVE_NCCL),-lnccl) $(DIST_LIBS) -lgomp
else
build/%: examples/%.c gpudl.h | build
	$(CC) $(CFLAGS) -fopenmp -DGPUDL_NO_CUDA -I. $(DIST_FLAGS) -o $@ $< -lm $(DIST_LIBS)
endif

# A self-check of this machine, in seconds: the tools, the GPU, the emulated
# device, MPI; then gpudl's own report (examples/doctor.c), built with cc
# where there is no NVIDIA driver and with nvcc where there is.
doctor:
	@NVCC=$(NVCC) CC=$(CC) sh tools/doctor.sh
build/doctor_cpu: examples/doctor.c gpudl.h | build
	$(CC) $(CFLAGS) -fopenmp -DGPUDL_NO_CUDA -I. -o $@ examples/doctor.c -lm

# The main job: train the CNN on Fashion-MNIST (data: see data/README.md).
demo: build/cnn_fashion data
	$(CUDA_RUN) ./build/cnn_fashion --data build/data/fashion-mnist $(DEMO_ARGS)

data:
	@sh data/prepare.sh

# A small GPT (examples/gpt_text.c: 4 layers, 4 heads, width 128, context 64)
# trained on the license texts of Debian's base-files, then sampled; the
# checkpoint, with nanoGPT's names, goes to build/gpt_text.safetensors. On
# the GPU where nvidia-smi sees one (the nvcc build), else on the CPU with
# cc's build (quicker to build, its OpenMP threads bound one per core).
# DEMO_ARGS="--steps 300 --temperature 0.5 FILE" changes the run.
build/gpt_text_cpu: examples/gpt_text.c gpudl.h | build
	$(CC) $(CFLAGS) -fopenmp -DGPUDL_NO_CUDA -I. -o $@ examples/gpt_text.c -lm
demo-gpt:
	@if [ -n "$(HAVE_NVCC)" ] && nvidia-smi -L >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory build/gpt_text && $(CUDA_RUN) ./build/gpt_text --out build/gpt_text.safetensors $(DEMO_ARGS); \
	else $(MAKE) --no-print-directory build/gpt_text_cpu && ./build/gpt_text_cpu --out build/gpt_text.safetensors $(DEMO_ARGS); fi

# Teaching (assignments/README.md). build/grade/grade is the grader
# (assignments/grade.c built by cc, no student code in it): per submission
# it compiles the student's file in a fresh folder, checks what it calls and
# includes, links it with the runner (grade.c -DGRADE_RUNNER; built once,
# kept in build/grade/cache with its hash) and runs it in sandboxed child
# processes. The CUDA assignments build with nvcc where nvidia-smi sees a
# GPU, otherwise with the emulated device's nvcc-emu; maxpool is plain C.
#   make grade A=<assignment> [SRC=<file>] [GRADE_ARGS=--no-train]      one file: its table, score: X/Y
#   make grade-class A=<assignment> DIR=<folder> [OUT=grades.csv] [GRADE_ARGS=...]   a class, in parallel
GRADE_ASSIGNMENTS = relu_xent sgemm maxpool attention tensor_core
GRADE_ARGS ?=
OUT ?= grades.csv
GRADE_KIT ?= .
build/grade/grade: assignments/grade.c gpudl.h
	@mkdir -p build/grade
	$(CC) -O2 -I. -o $@ assignments/grade.c -lm
# The grader's command line for assignment $$a (shell): the toolchain this machine has.
GRADE_CMD = if [ -n "$(HAVE_NVCC)" ] && nvidia-smi -L >/dev/null 2>&1; then nvcc="$(NVCC)"; flags="$(CUDA_FLAGS)"; \
	    else nvcc=tests/emu/nvcc-emu; flags=; fi; \
	    $(CUDA_RUN) ./build/grade/grade "$$a" --kit "$(GRADE_KIT)" --cc "$(CC)" --nvcc "$$nvcc" --cuda-flags "$$flags" \
	        --cache build/grade/cache --data build/test/data
GRADE_CHECK_A = case " $(GRADE_ASSIGNMENTS) " in *" $$a "*) [ -n "$$a" ] ;; *) false ;; esac
grade: build/grade/grade build/test/data/.stamp
	@a="$(A)"; $(GRADE_CHECK_A) || { \
	    echo "usage: make grade A=<$$(echo $(GRADE_ASSIGNMENTS) | tr ' ' '|')> [SRC=file] [GRADE_ARGS=--no-train]"; exit 2; }; \
	ext=cu; [ "$$a" = maxpool ] && ext=c; \
	src="$(or $(SRC),assignments/$(A)/starter.$$ext)"; \
	$(GRADE_CMD) "$$src" $(GRADE_ARGS)
grade-class: build/grade/grade build/test/data/.stamp
	@a="$(A)"; { $(GRADE_CHECK_A) && [ -n "$(DIR)" ]; } || { \
	    echo "usage: make grade-class A=<$$(echo $(GRADE_ASSIGNMENTS) | tr ' ' '|')> DIR=<folder> [OUT=grades.csv] [GRADE_ARGS=--no-train]"; exit 2; }; \
	$(GRADE_CMD) "$(DIR)" --out "$(OUT)" $(GRADE_ARGS)

# The matmul experiment: CPU vs GPU in FP32, TF32 and FP16.
matmul-demo: build/cpu_vs_gpu
	$(CUDA_RUN) ./build/cpu_vs_gpu $(DEMO_ARGS)

# The tiers (README, Tests): make test, every area in about 10 minutes (DESIGN.md: 10 at most);
# make test-extra, the rest; make test-all, both (CI: .ci/run).
test:
	python3 tools/check_sections.py
	bash tests/run.sh
test-extra:
	bash tests/run.sh --extra
test-all:
	@$(MAKE) --no-print-directory test-extra; s=$$?; $(MAKE) --no-print-directory test && exit $$s

# The GPU path on the emulated CUDA device (tests/emu), on any machine: the
# emulator's self-tests, the GPU suites (also under ASan/UBSan), the examples
# in a short mode and the device profiles. make test runs it too.
test-emu:
	bash tests/run_emu.sh

# CUDA programs of ours in the style of NVIDIA's cuda-samples, one per feature
# (textures, cooperative groups, WMMA, memory pools, 3D copies, host functions,
# clusters, __CUDA_ARCH__...), built with plain nvcc lines on the emulated
# device; fetches nothing (tests/run_samples.sh; part of make test-extra).
test-samples:
	bash tests/run_samples.sh

# gpudl.h under the flags and compilers users build with, warnings as errors (tests/run_embed.sh):
# the core in make test, EMBED_ARGS=--full the whole matrix (in make test-extra)
test-embed:
	bash tests/run_embed.sh $(EMBED_ARGS)

# The students' other machines, cross-built and emulated (tests/run_cross.sh):
# Windows through MinGW-w64 and Wine, aarch64 through QEMU user mode.
test-windows:
	bash tests/run_cross.sh windows
test-arm64:
	bash tests/run_cross.sh arm64

# Data parallel with two processes under mpirun (tests/run_dist.sh): both halves;
# make test runs the CPU ranks (--cpu), make test-extra the NCCL ranks (--gpu).
test-dist:
	bash tests/run_dist.sh

# On a GPU machine: the GPU suites (FP16/BF16 accuracy on the full
# Fashion-MNIST when make data finds it), then compute-sanitizer's memcheck (with
# leak check), racecheck, initcheck and synccheck over them, after a control
# run that must be flagged (proof the sanitizer really runs). The two halves
# also run alone: make test-gpu-suites, make test-gpu-sanitize.
CS = compute-sanitizer --error-exitcode 1
# Tests whose child process faults on purpose: a sanitizer would (rightly) report them.
SANITIZE_SKIP = --skip=gpu_sticky_error_is_fatal
# Two test programs, each one translation unit that #includes its section
# files (tests/suite_core.c explains the layout).
CORE_TESTS = tests/suite_core.c tests/test_tensor.c tests/test_matmul.c tests/test_arith.c tests/test_timing.c tests/harness.h
TRAIN_TESTS = tests/suite_train.c tests/train_helpers.h tests/test_layers.c tests/test_model.c tests/test_optim.c \
    tests/test_amp.c tests/test_data.c tests/test_io.c tests/test_override.c tests/test_transformer.c tests/harness.h
GPU_TESTS = build/suite_core_cuda build/suite_train_cuda
build/suite_core_cuda: $(CORE_TESTS) tests/gpu_faults.cu gpudl.h gpudl_kernels.cu | build
	$(NVCC) -O2 $(CUDA_ARCH) -Xcompiler -fopenmp -o $@ tests/suite_core.c gpudl_kernels.cu tests/gpu_faults.cu $(CUDA_LIBS) -lgomp
build/suite_train_cuda: $(TRAIN_TESTS) gpudl.h gpudl_kernels.cu | build
	$(NVCC) -O2 $(CUDA_ARCH) -Xcompiler -fopenmp -o $@ tests/suite_train.c gpudl_kernels.cu $(CUDA_LIBS) -lgomp
build/test/data/.stamp: data/fashion-mnist-subset/*.gz
	mkdir -p build/test/data && for f in data/fashion-mnist-subset/*.gz; do gunzip -c $$f > build/test/data/$$(basename $$f .gz); done
	touch $@
test-gpu: $(GPU_TESTS)
	$(MAKE) --no-print-directory test-gpu-suites
	$(MAKE) --no-print-directory test-gpu-sanitize
test-gpu-suites: $(GPU_TESTS) build/test/data/.stamp
	@sh data/prepare.sh
	$(CUDA_RUN) ./build/suite_core_cuda --gpu-only
	$(CUDA_RUN) GPUDL_TEST_DATA=build/test/data GPUDL_FULL_DATA=build/data/fashion-mnist ./build/suite_train_cuda --gpu-only
test-gpu-sanitize: $(GPU_TESTS) build/test/data/.stamp
	@$(if $(CUDA_LIBDIRS),export LD_LIBRARY_PATH=$(CUDA_LIBDIRS)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH};) if command -v compute-sanitizer >/dev/null 2>&1; then \
	    if $(CS) --tool memcheck ./build/suite_core_cuda --control-oob >build/sanitizer_control.log 2>&1; then \
	        echo "FAIL: compute-sanitizer did not flag the out-of-bounds control kernel"; exit 1; \
	    else echo "ok      compute-sanitizer flags the control kernel"; fi; \
	    for tool in "memcheck --leak-check full" racecheck initcheck synccheck; do \
	        echo "== compute-sanitizer --tool $$tool"; \
	        $(CS) --tool $$tool ./build/suite_core_cuda gpu_ $(SANITIZE_SKIP) || exit 1; \
	        GPUDL_TEST_DATA=build/test/data $(CS) --tool $$tool ./build/suite_train_cuda gpu_layers || exit 1; \
	        $(CS) --tool $$tool ./build/suite_train_cuda gpu_amp || exit 1; \
	        $(CS) --tool $$tool ./build/suite_train_cuda gpu_fused || exit 1; \
	        $(CS) --tool $$tool ./build/suite_train_cuda gpu_xent || exit 1; \
	    done; \
	else echo "compute-sanitizer not installed: sanitizer runs SKIPPED"; fi

# The CPU suites under AddressSanitizer + UndefinedBehaviorSanitizer, with
# leak detection: any report fails the run.
SAN = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
test-sanitize: | build
	mkdir -p build/test/data && for f in data/fashion-mnist-subset/*.gz; do gunzip -c $$f > build/test/data/$$(basename $$f .gz); done
	$(CC) -std=c99 $(SAN) -DGPUDL_NO_CUDA -fopenmp -o build/suite_core_san tests/suite_core.c -lm
	$(CC) -std=c99 $(SAN) -DGPUDL_NO_CUDA -fopenmp -o build/suite_train_san tests/suite_train.c -lm
	$(CC) -std=c99 $(SAN) -DGPUDL_NO_CUDA -o build/test_faults_san tests/test_faults.c -lm
	@echo "(expected below: AddressSanitizer's WARNING that it failed to allocate an absurd size; the out-of-memory tests ask for one)"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 ./build/suite_core_san --cpu-only
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 GPUDL_TEST_DATA=build/test/data ./build/suite_train_san --cpu-only
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 ./build/test_faults_san

# libFuzzer on the two loaders (clang), FUZZ_SECONDS each, from the committed
# seed corpus (copied, so the repository's corpus only grows by hand: add
# every crasher there as a regression test). The corpus is replayed first.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
fuzz: | build
	@for t in idx ckpt; do \
	    $(FUZZ_CC) -O1 -g -fsanitize=fuzzer,address,undefined -DGPUDL_NO_CUDA -o build/fuzz_$$t tests/fuzz/fuzz_$$t.c -lm || exit 1; \
	    ./build/fuzz_$$t -runs=0 tests/fuzz/corpus_$$t >build/fuzz_$$t.replay.log 2>&1 || { cat build/fuzz_$$t.replay.log; exit 1; }; \
	    rm -rf build/fuzz_work_$$t && mkdir -p build/fuzz_work_$$t && cp tests/fuzz/corpus_$$t/* build/fuzz_work_$$t/; \
	    echo "fuzzing the $$t loader for $(FUZZ_SECONDS) s"; \
	    ./build/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -artifact_prefix=build/fuzz_crash_$$t- \
	        build/fuzz_work_$$t >build/fuzz_$$t.log 2>&1 || { tail -40 build/fuzz_$$t.log; \
	        echo "crash: minimise it, fix it, add it to tests/fuzz/corpus_$$t"; exit 1; }; \
	    tail -1 build/fuzz_$$t.log; \
	done

BENCH_BLAS = $(if $(HAVE_OPENBLAS),-DGPUDL_BENCH_OPENBLAS -lopenblas)
# Without a GPU the benchmarks are the CPU-only build, the one a student
# compiles: it binds its OpenMP threads (a CUDA build does not), and on a
# 2-vCPU VM the unbound threads scattered the MLP step over 9-16 ms.
$(call lazy,BENCH_NVCC,$(if $(HAVE_NVCC),nvidia-smi -L >/dev/null 2>&1 && echo 1))
build/bench_matmul: bench/bench_matmul.c gpudl.h gpudl_kernels.cu | build
	$(if $(BENCH_NVCC),$(NVCC) -O2 $(CUDA_ARCH) -Xcompiler -fopenmp -o $@ bench/bench_matmul.c gpudl_kernels.cu $(CUDA_LIBS) -lgomp $(BENCH_BLAS),$(CC) -O2 -fopenmp -DGPUDL_NO_CUDA -o $@ bench/bench_matmul.c -lm $(BENCH_BLAS))
build/bench_train: bench/bench_train.c gpudl.h gpudl_kernels.cu | build
	$(if $(BENCH_NVCC),$(NVCC) -O2 $(CUDA_ARCH) -Xcompiler -fopenmp -o $@ bench/bench_train.c gpudl_kernels.cu $(CUDA_LIBS) -lgomp,$(CC) -O2 -fopenmp -DGPUDL_NO_CUDA -o $@ bench/bench_train.c -lm)

# Benchmarks: tables on stdout, CSV under bench/. Never pass/fail. With a
# GPU and PyTorch: matmul and training steps (FP32, FP16, BF16) side by side
# with torch (eager, torch.compile, autocast + GradScaler) in the same run.
# (make bench-matmul, make bench-train: one half each; one after the other, never in parallel)
# Debian's matplotlib is /usr/bin/python3's; plot.py says SKIPPED without it.
PLOT_PY := $(shell [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)
bench:
	$(MAKE) --no-print-directory bench-matmul
	$(MAKE) --no-print-directory bench-train
	$(MAKE) --no-print-directory plots
plots:
	$(PLOT_PY) bench/plot.py
bench-matmul: build/bench_matmul
	$(CUDA_RUN) ./build/bench_matmul $(BENCH_ARGS)
	@if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then \
	    python3 bench/torch_matmul.py; \
	else echo "torch_matmul.py SKIPPED: no PyTorch with a GPU here"; fi
# The anchors' Python (PyTorch, JAX): BENCH_PY=venv/bin/python make bench (bench/README.md)
BENCH_PY ?= python3
# The GPT step on the CPU against PyTorch and JAX, interleaved rounds, same
# thread count (bench/gpt_step.py; each anchor run by the Python that has it:
# build/torchvenv, build/jaxvenv, or BENCH_PY; bench/gpt_step.csv).
bench-gpt: build/gpt_text_cpu
	$(BENCH_PY) bench/gpt_step.py $(BENCH_ARGS)
# Issue 38's table: MLP, LeNet-5, the GPT step and SGEMM on the CPU, gpudl
# built as the README says (cc -O2 -fopenmp) and with -march=native, against
# PyTorch, JAX and OpenBLAS, interleaved rounds, same threads (bench/cpu.csv).
bench-cpu:
	python3 bench/bench_cpu.py $(BENCH_ARGS)
# Data parallel on this machine's cores: 1 rank x 2 threads against 2 ranks x 1 (bench/dist.csv).
bench-dist:
	bash bench/bench_dist.sh $(BENCH_ROUNDS)
# OpenMP beside another program: 1 and 2 threads, idle and with one core busy (bench/contention.csv).
bench-contention:
	bash bench/bench_contention.sh $(BENCH_ROUNDS)
bench-train: build/bench_train
	$(CUDA_RUN) ./build/bench_train $(BENCH_ARGS)
	@if $(BENCH_PY) -c 'import torch' 2>/dev/null; then $(BENCH_PY) bench/torch_train.py $(BENCH_ARGS); \
	else echo "torch_train.py SKIPPED: no PyTorch for $(BENCH_PY) (bench/README.md)"; fi
	@if $(BENCH_PY) -c 'import jax' 2>/dev/null; then $(BENCH_PY) bench/jax_train.py $(BENCH_ARGS); \
	else echo "jax_train.py SKIPPED: no JAX for $(BENCH_PY) (bench/README.md)"; fi

build:
	mkdir -p build

clean:
	rm -rf build bench/*.csv bench/*.png tests/emu/.cache

# NVIDIA's compiler on the kernels, without a GPU (tools/gpu_static.sh):
# registers, spills, static shared memory and theoretical occupancy per kernel
# for sm_80/90/100/120, and global-load widths in the sm_90 SASS. Fails on a
# spill or on a vectorised kernel without a 128-bit load.
gpu-static:
	@NVCC=$(NVCC) sh tools/gpu_static.sh

# A stated model, not a measurement, of the training step on H100 and A100
# (bench/model_step.py, its sources inside; counts from bench/step_counts.csv).
MODEL_ARGS ?=
model:
	python3 bench/model_step.py $(MODEL_ARGS)
