/* gpt_text.c - a character-level GPT, trained on any text file, on the GPU
   if there is one, otherwise on the CPU. `make demo-gpt` runs this.

   GPU:  nvcc -O2 -o gpt_text gpt_text.c gpudl_kernels.cu -lcublas -lcublasLt -lcudnn
   CPU:  cc -O2 -fopenmp -DGPUDL_NO_CUDA -o gpt_text gpt_text.c -lm
   Run:  ./gpt_text [FILE] [--steps N] [--batch B] [--layers L] [--heads H] [--width C] [--context T]
                    [--lr LR] [--seed S] [--temperature X] [--sample N] [--prompt TEXT] [--out FILE]
                    [--fp16 | --bf16] [--cpu] [--short] [--eval-dump FILE] [--bench] [--profile]
                    [--attention 0|1|2] [--init gpt2]
         FILE: any text (bytes); default: the license texts of Debian's
         base-files, /usr/share/common-licenses (about 237 KB of English).
         --short: a small model (2 layers, 2 heads, width 32, context 32) for
         100 steps of batch 16 (the tests run it); it fails (exit 1) unless
         the held-out loss falls below the loss that the training text's
         character frequencies give there (a model that ignores context).
         --eval-dump FILE: the ids, targets, logits and loss of a held-out
         batch, for tests/check_gpt.py (which recomputes them from the
         checkpoint in numpy and in PyTorch).
         --bench: times --steps training steps one by one, nothing else
         (bench/gpt_step.py runs it); with --profile, then where a step's
         time goes, per layer (gpudl_model_profile).
         --attention: the attention layers' path (gpudl_model_desc.attention):
         0 gpudl's choice, 1 cuBLAS GEMMs + softmax, 2 the fused kernels.
         --init gpt2: GPT-2's initialisation (GPUDL_INIT_GPT2) instead of
         gpudl's default (He before GELU, Xavier elsewhere; embeddings and
         attention normal(0, 0.02)): in the 100 steps of --short it learns
         slower (held-out 3.16-3.36 against 2.93-3.08 over seeds 1-3).

   The model, nanoGPT's (B batch, T context, C width, V vocabulary):
     ids (B,T) -> token + position embedding (B,T,C)
       -> L blocks: x + attn(ln_1(x)), then x + mlp(ln_2(x)), mlp = c_proj(GELU(c_fc(x))) (C -> 4C -> C)
       -> ln_f -> lm_head (B,T,V) -> cross-entropy against the next character at every position
   with nanoGPT's parameter names, so the checkpoint loads into a PyTorch
   module written with those names (tests/check_gpt.py has one):
     transformer.wte.weight (V,C), transformer.wpe.weight (T,C),
     transformer.h.<i>.ln_1.{weight,bias}, .attn.c_attn.{weight,bias} (3C,C),
     .attn.c_proj.{weight,bias}, .ln_2, .mlp.c_fc (4C,C), .mlp.c_proj (C,4C),
     transformer.ln_f, lm_head.{weight,bias} (V,C).
   Unlike nanoGPT, lm_head has a bias and its own weight (not tied to wte),
   and there is no dropout. The vocabulary is the distinct bytes of the
   text, sorted: id i is the i-th smallest byte that occurs. Trained with
   AdamW (weight decay 0.01), gradient clipping at 1, and a cosine schedule
   with warm-up. Batches are random windows of the first 90% of the text,
   gathered on the host into the same buffers every step (on the GPU the
   step is captured once into a CUDA graph, which reads them there); the
   last 10% is held out for the validation loss. */
#define GPUDL_IMPLEMENTATION
#include "gpudl.h"

#include <math.h>

typedef struct gpt_config {
    int64_t layers, heads, width, context, batch, steps;
    float   lr, temperature;
    uint64_t seed;
    int64_t sample_chars;
    const char *text_path, *out, *eval_dump, *prompt;
    gpudl_precision precision;
    int cpu, short_mode, bench, profile, attention, gpt2_init;
} gpt_config;

/* The text as ids, and its vocabulary. */
typedef struct gpt_text {
    uint8_t *ids;           /* (n) */
    int64_t  n, n_train;    /* the first n_train ids train, the rest are held out */
    int      vocab;
    uint8_t  byte_of[256];  /* id -> byte */
    uint8_t  id_of[256];    /* byte -> id */
    char     source[160];
} gpt_text;

/* Debian's base-files ships these (the symbolic links GPL, LGPL and GFDL
   would repeat GPL-3, LGPL-3 and GFDL-1.3). */
static const char *default_dir = "/usr/share/common-licenses";
static const char *default_files[] = {"Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.2", "GFDL-1.3", "GPL-1", "GPL-2",
                                      "GPL-3", "LGPL-2", "LGPL-2.1", "LGPL-3", "MPL-1.1", "MPL-2.0"};

/* Appends a file's bytes to *buf (size *n, capacity *cap); 0 if it cannot be read. */
static int append_file(const char *path, uint8_t **buf, int64_t *n, int64_t *cap) {
    FILE *f = fopen(path, "rb");
    size_t got;
    if (!f) return 0;
    for (;;) {
        if (*cap - *n < 65536) {
            int64_t nc = *cap ? *cap * 2 : 1 << 20;
            uint8_t *nb = (uint8_t *)realloc(*buf, (size_t)nc);
            if (!nb) { fclose(f); return 0; }
            *buf = nb;
            *cap = nc;
        }
        got = fread(*buf + *n, 1, (size_t)(*cap - *n), f);
        *n += (int64_t)got;
        if (got == 0) break;
    }
    fclose(f);
    return 1;
}

static int load_text(gpt_text *t, const char *path) {
    uint8_t *buf = NULL;
    int64_t n = 0, cap = 0, i;
    int present[256] = {0}, c, files = 0;
    memset(t, 0, sizeof *t);
    if (path) {
        if (!append_file(path, &buf, &n, &cap)) { fprintf(stderr, "cannot read %s\n", path); free(buf); return 0; }
        snprintf(t->source, sizeof t->source, "%s", path);
    } else {
        for (i = 0; i < (int64_t)(sizeof default_files / sizeof default_files[0]); i++) {
            char p[256];
            snprintf(p, sizeof p, "%s/%s", default_dir, default_files[i]);
            files += append_file(p, &buf, &n, &cap);
        }
        if (files == 0) {
            fprintf(stderr, "no text: the default is the license texts in %s (Debian's base-files), which this machine "
                    "does not have; give a text file: gpt_text FILE\n", default_dir);
            free(buf);
            return 0;
        }
        snprintf(t->source, sizeof t->source, "%s (%d license texts, Debian's base-files)", default_dir, files);
    }
    for (i = 0; i < n; i++) present[buf[i]] = 1;
    for (c = 0; c < 256; c++)
        if (present[c]) { t->byte_of[t->vocab] = (uint8_t)c; t->id_of[c] = (uint8_t)t->vocab; t->vocab++; }
    for (i = 0; i < n; i++) buf[i] = t->id_of[buf[i]];
    t->ids = buf;
    t->n = n;
    t->n_train = n - n / 10;
    return 1;
}

/* Baselines that ignore context: the entropy (nats) of the training part's
   character frequencies, and the loss those frequencies (add-one smoothed)
   give on the held-out part, the value a model must beat to have learned
   anything from context. */
static void unigram_baselines(const gpt_text *t, double *entropy, double *heldout) {
    double count[256] = {0}, h = 0, x = 0, total = (double)(t->n_train + t->vocab);
    int64_t i;
    for (i = 0; i < t->n_train; i++) count[t->ids[i]] += 1;
    for (i = 0; i < t->vocab; i++)
        if (count[i] > 0) h -= count[i] / (double)t->n_train * log(count[i] / (double)t->n_train);
    for (i = t->n_train; i < t->n; i++) x -= log((count[t->ids[i]] + 1) / total);
    *entropy = h;
    *heldout = x / (double)(t->n - t->n_train);
}

/* Window b of a batch (B,T): x = ids[start .. start+T), y = the next ids. */
static void put_window(const gpt_text *t, uint8_t *x, uint8_t *y, int64_t T, int64_t start) {
    memcpy(x, t->ids + start, (size_t)T);
    memcpy(y, t->ids + start + 1, (size_t)T);
}

static gpudl_model *build_gpt(gpudl_ctx *ctx, const gpt_config *c, int64_t vocab) {
    gpudl_model *m;
    gpudl_model_desc md;
    int64_t C = c->width, l;
    char name[96];
    GPUDL_CHECK(gpudl_model_create(ctx, &m, 1, &c->context));
    GPUDL_CHECK(gpudl_model_add_embedding(m, vocab, C));   /* transformer.wte.weight, transformer.wpe.weight */
    GPUDL_CHECK(gpudl_model_set_name(m, "transformer"));
    for (l = 0; l < c->layers; l++) {
        GPUDL_CHECK(gpudl_model_add_residual_begin(m));
        GPUDL_CHECK(gpudl_model_add_layernorm(m, C));
        snprintf(name, sizeof name, "transformer.h.%lld.ln_1", (long long)l);
        GPUDL_CHECK(gpudl_model_set_name(m, name));
        GPUDL_CHECK(gpudl_model_add_attention(m, C, c->heads));
        snprintf(name, sizeof name, "transformer.h.%lld.attn", (long long)l);
        GPUDL_CHECK(gpudl_model_set_name(m, name));
        GPUDL_CHECK(gpudl_model_add_residual_end(m));
        GPUDL_CHECK(gpudl_model_add_residual_begin(m));
        GPUDL_CHECK(gpudl_model_add_layernorm(m, C));
        snprintf(name, sizeof name, "transformer.h.%lld.ln_2", (long long)l);
        GPUDL_CHECK(gpudl_model_set_name(m, name));
        GPUDL_CHECK(gpudl_model_add_linear(m, C, 4 * C));
        snprintf(name, sizeof name, "transformer.h.%lld.mlp.c_fc", (long long)l);
        GPUDL_CHECK(gpudl_model_set_name(m, name));
        GPUDL_CHECK(gpudl_model_add_act(m, GPUDL_ACT_GELU, 0.0f));
        GPUDL_CHECK(gpudl_model_add_linear(m, 4 * C, C));
        snprintf(name, sizeof name, "transformer.h.%lld.mlp.c_proj", (long long)l);
        GPUDL_CHECK(gpudl_model_set_name(m, name));
        GPUDL_CHECK(gpudl_model_add_residual_end(m));
    }
    GPUDL_CHECK(gpudl_model_add_layernorm(m, C));
    GPUDL_CHECK(gpudl_model_set_name(m, "transformer.ln_f"));
    GPUDL_CHECK(gpudl_model_add_linear(m, C, vocab));
    GPUDL_CHECK(gpudl_model_set_name(m, "lm_head"));
    memset(&md, 0, sizeof md);
    md.max_batch = c->batch;
    md.seed = c->seed;
    md.init = c->gpt2_init ? GPUDL_INIT_GPT2 : GPUDL_INIT_DEFAULT;   /* --init gpt2: normal(0, 0.02), c_proj / sqrt(2 L) */
    md.attention = c->attention;    /* 0: gpudl chooses (GEMMs or the fused kernels), 1: GEMMs, 2: fused */
    GPUDL_CHECK(gpudl_model_build(m, &md));
    return m;
}

/* The mean loss over the held-out windows: nb batches at evenly spaced
   starts in the last 10% of the text (the same windows every time). */
static float validation_loss(gpudl_ctx *ctx, gpudl_model *m, const gpt_text *t, const gpt_config *c, gpudl_tensor *x,
                             gpudl_tensor *y, uint8_t *xh, uint8_t *yh, int nb) {
    int64_t T = c->context, B = c->batch, span = t->n - t->n_train - T - 1, k, b;
    double sum = 0;
    float loss = 0;
    gpudl_model_train(m, 0);
    for (k = 0; k < nb; k++) {
        for (b = 0; b < B; b++) put_window(t, xh + b * T, yh + b * T, T, t->n_train + (span * (k * B + b)) / (nb * B));
        GPUDL_CHECK(gpudl_tensor_upload(ctx, x, xh, (size_t)(B * T)));
        GPUDL_CHECK(gpudl_tensor_upload(ctx, y, yh, (size_t)(B * T)));
        GPUDL_CHECK(gpudl_model_forward(m, x, NULL));
        GPUDL_CHECK(gpudl_model_loss(m, y));
        GPUDL_CHECK(gpudl_model_loss_value(m, &loss));
        sum += loss;
    }
    gpudl_model_train(m, 1);
    return (float)(sum / nb);
}

/* The last forward's output (N,T,V), in the activations' dtype, as F32 on the host. */
static void logits_to_host(gpudl_ctx *ctx, const gpudl_tensor *out, float *host) {
    gpudl_tensor f32;
    GPUDL_CHECK(gpudl_tensor_create(ctx, &f32, GPUDL_F32, out->ndim, out->shape));
    GPUDL_CHECK(gpudl_tensor_cast(ctx, &f32, out));
    GPUDL_CHECK(gpudl_tensor_download(ctx, &f32, host, gpudl_tensor_bytes(&f32)));
    gpudl_tensor_free(ctx, &f32);
}

/* One training step's batch: B random windows of the first 90%, the same
   for a given seed and step on every device. */
static void gather_batch(const gpt_text *t, const gpt_config *c, int64_t step, uint8_t *xh, uint8_t *yh) {
    int64_t b, T = c->context;
    for (b = 0; b < c->batch; b++) {
        uint64_t r = gpudl_rng_bits(c->seed ^ 0x9e3779b97f4a7c15ull, (uint64_t)(step * c->batch + b));
        put_window(t, xh + b * T, yh + b * T, T, (int64_t)(r % (uint64_t)(t->n_train - T - 1)));
    }
}

/* Appends n characters to prompt (ids, length *len, capacity len + n): each
   one drawn from softmax(logits / temperature) at the last position of the
   last T ids (temperature 0: the most likely). Batch 1: the causal mask
   means positions after the last real one change nothing before it, so the
   window is padded with id 0 and the logits are read at the last real position. */
static void sample(gpudl_ctx *ctx, gpudl_model *m, const gpt_config *c, int vocab, uint8_t *ids, int64_t *len, int64_t n,
                   gpudl_tensor *xs, uint64_t seed) {
    int64_t T = c->context, i, k, start, real;
    uint8_t *win = (uint8_t *)calloc((size_t)T, 1);
    float *lg = (float *)malloc((size_t)(T * vocab) * sizeof(float));
    gpudl_tensor out;
    if (!win || !lg) { fprintf(stderr, "out of memory\n"); exit(1); }
    gpudl_model_train(m, 0);
    for (i = 0; i < n; i++) {
        float *row, mx, u;
        double z = 0, acc = 0;
        int pick = 0;
        start = *len > T ? *len - T : 0;
        real = *len - start;
        memset(win, 0, (size_t)T);
        memcpy(win, ids + start, (size_t)real);
        GPUDL_CHECK(gpudl_tensor_upload(ctx, xs, win, (size_t)T));
        GPUDL_CHECK(gpudl_model_forward(m, xs, &out));
        logits_to_host(ctx, &out, lg);
        row = lg + (real - 1) * vocab;
        mx = row[0];
        for (k = 1; k < vocab; k++) if (row[k] > mx) { mx = row[k]; pick = (int)k; }
        if (c->temperature > 0) {
            for (k = 0; k < vocab; k++) z += exp((double)(row[k] - mx) / c->temperature);
            u = gpudl_rng_uniform(seed, (uint64_t)i);
            for (k = 0, pick = vocab - 1; k < vocab; k++) {
                acc += exp((double)(row[k] - mx) / c->temperature) / z;
                if (u < acc) { pick = (int)k; break; }
            }
        }
        ids[(*len)++] = (uint8_t)pick;
    }
    gpudl_model_train(m, 1);
    free(win);
    free(lg);
}

/* --eval-dump: "gpt_text-eval N T V heads loss\n", then ids (N,T) I32,
   targets (N,T) I32, logits (N,T,V) F32, and the vocabulary's V bytes. */
static void eval_dump(gpudl_ctx *ctx, gpudl_model *m, const gpt_text *t, const gpt_config *c, gpudl_tensor *x,
                      gpudl_tensor *y, uint8_t *xh, uint8_t *yh, const char *path) {
    int64_t B = c->batch, T = c->context, V = t->vocab, i, span = t->n - t->n_train - T - 1;
    int32_t *ids = (int32_t *)malloc((size_t)(2 * B * T) * sizeof(int32_t));
    float *lg = (float *)malloc((size_t)(B * T * V) * sizeof(float)), loss = 0;
    gpudl_tensor out;
    FILE *f;
    if (!ids || !lg) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (i = 0; i < B; i++) put_window(t, xh + i * T, yh + i * T, T, t->n_train + span * i / B);
    gpudl_model_train(m, 0);
    GPUDL_CHECK(gpudl_tensor_upload(ctx, x, xh, (size_t)(B * T)));
    GPUDL_CHECK(gpudl_tensor_upload(ctx, y, yh, (size_t)(B * T)));
    GPUDL_CHECK(gpudl_model_forward(m, x, &out));
    GPUDL_CHECK(gpudl_model_loss(m, y));
    GPUDL_CHECK(gpudl_model_loss_value(m, &loss));
    logits_to_host(ctx, &out, lg);
    gpudl_model_train(m, 1);
    for (i = 0; i < B * T; i++) { ids[i] = xh[i]; ids[B * T + i] = yh[i]; }
    f = fopen(path, "wb");
    if (!f || fprintf(f, "gpt_text-eval %lld %lld %lld %lld %.9g\n", (long long)B, (long long)T, (long long)V,
                      (long long)c->heads, (double)loss) < 0
        || fwrite(ids, sizeof(int32_t), (size_t)(2 * B * T), f) != (size_t)(2 * B * T)
        || fwrite(lg, sizeof(float), (size_t)(B * T * V), f) != (size_t)(B * T * V)
        || fwrite(t->byte_of, 1, (size_t)V, f) != (size_t)V || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    printf("eval dump: %s (a held-out batch of %lld x %lld, loss %.4f)\n", path, (long long)B, (long long)T, (double)loss);
    free(ids);
    free(lg);
}

/* --bench: 3 warm-up steps, then steps timed one by one (each waits for
   the device); their median, min and max per step. --profile: then 10 steps
   with gpudl_model_profile on (a measuring mode: it waits around each layer). */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void bench_steps(gpudl_ctx *ctx, gpudl_model *m, const gpt_text *t, const gpt_config *c, gpudl_tensor *x,
                        gpudl_tensor *y, uint8_t *xh, uint8_t *yh) {
    int64_t n = c->steps > 0 ? c->steps : 20, i, B = c->batch, T = c->context;
    double *ms = (double *)malloc((size_t)n * sizeof(double));
    float loss = 0;
    if (!ms) { fprintf(stderr, "out of memory\n"); exit(1); }
    for (i = -3; i < n; i++) {
        double t0 = gpudl_now();
        gather_batch(t, c, i + 3, xh, yh);
        GPUDL_CHECK(gpudl_tensor_upload(ctx, x, xh, (size_t)(B * T)));
        GPUDL_CHECK(gpudl_tensor_upload(ctx, y, yh, (size_t)(B * T)));
        GPUDL_CHECK(gpudl_model_train_step(m, x, y));
        GPUDL_CHECK(gpudl_ctx_sync(ctx));
        if (i >= 0) ms[i] = 1e3 * (gpudl_now() - t0);
    }
    GPUDL_CHECK(gpudl_model_loss_value(m, &loss));
    qsort(ms, (size_t)n, sizeof(double), cmp_double);
    printf("bench: %lld steps  median_ms %.4f  min_ms %.4f  max_ms %.4f  tokens_per_s %.0f  loss %.4f\n", (long long)n,
           ms[n / 2], ms[0], ms[n - 1], (double)(B * T) * 1e3 / ms[n / 2], (double)loss);
    free(ms);
    if (c->profile) {
        static char rep[16384];
        GPUDL_CHECK(gpudl_model_profile(m, 1));
        for (i = 0; i < 10; i++) {
            gather_batch(t, c, n + 3 + i, xh, yh);
            GPUDL_CHECK(gpudl_tensor_upload(ctx, x, xh, (size_t)(B * T)));
            GPUDL_CHECK(gpudl_tensor_upload(ctx, y, yh, (size_t)(B * T)));
            GPUDL_CHECK(gpudl_model_train_step(m, x, y));
        }
        printf("%s", gpudl_model_profile_report(m, rep, sizeof rep));
        GPUDL_CHECK(gpudl_model_profile(m, 0));
    }
}

static void print_text(const gpt_text *t, const uint8_t *ids, int64_t n) {
    int64_t i;
    for (i = 0; i < n; i++) putchar(t->byte_of[ids[i]]);
}

static int usage(const char *prog) {
    fprintf(stderr, "usage: %s [FILE] [--steps N] [--batch B] [--layers L] [--heads H] [--width C] [--context T] [--lr LR]\n"
                    "       [--seed S] [--temperature X] [--sample N] [--prompt TEXT] [--out FILE] [--fp16 | --bf16] [--cpu]\n"
                    "       [--short] [--eval-dump FILE] [--bench] [--profile] [--attention 0|1|2] [--init gpt2]\n", prog);
    return 2;
}

int main(int argc, char **argv) {
    gpt_config c;
    gpt_text text;
    gpudl_ctx_desc cd;
    gpudl_ctx *ctx;
    gpudl_model *m;
    gpudl_optim_desc od;
    gpudl_tensor x, y, xv, yv, xs;
    uint8_t *xh, *yh, *gen;
    int64_t i, step, log_every, B, T, shape[2], gen_len = 0;
    int64_t steps_set = 0, batch_set = 0, layers_set = 0, heads_set = 0, width_set = 0, context_set = 0;
    double h1, h1_heldout, t_log, train_s = 0;
    float loss = 0, val0, val = 0;
    int gpu, eval_batches, ok = 1, lr_set = 0;

    memset(&c, 0, sizeof c);
    c.layers = 4; c.heads = 4; c.width = 128; c.context = 64; c.batch = 32;
    c.lr = 1e-3f; c.temperature = 0.8f; c.seed = 1; c.sample_chars = 400;
    c.out = "gpt_text.safetensors";
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--steps") && v) steps_set = c.steps = atoll(argv[++i]);
        else if (!strcmp(a, "--batch") && v) batch_set = c.batch = atoll(argv[++i]);
        else if (!strcmp(a, "--layers") && v) layers_set = c.layers = atoll(argv[++i]);
        else if (!strcmp(a, "--heads") && v) heads_set = c.heads = atoll(argv[++i]);
        else if (!strcmp(a, "--width") && v) width_set = c.width = atoll(argv[++i]);
        else if (!strcmp(a, "--context") && v) context_set = c.context = atoll(argv[++i]);
        else if (!strcmp(a, "--lr") && v) { c.lr = (float)atof(argv[++i]); lr_set = 1; }
        else if (!strcmp(a, "--seed") && v) c.seed = (uint64_t)atoll(argv[++i]);
        else if (!strcmp(a, "--temperature") && v) c.temperature = (float)atof(argv[++i]);
        else if (!strcmp(a, "--sample") && v) c.sample_chars = atoll(argv[++i]);
        else if (!strcmp(a, "--prompt") && v) c.prompt = argv[++i];
        else if (!strcmp(a, "--out") && v) c.out = argv[++i];
        else if (!strcmp(a, "--eval-dump") && v) c.eval_dump = argv[++i];
        else if (!strcmp(a, "--fp16")) c.precision = GPUDL_PRECISION_FP16;
        else if (!strcmp(a, "--bf16")) c.precision = GPUDL_PRECISION_BF16;
        else if (!strcmp(a, "--cpu")) c.cpu = 1;
        else if (!strcmp(a, "--short")) c.short_mode = 1;
        else if (!strcmp(a, "--bench")) c.bench = 1;
        else if (!strcmp(a, "--profile")) c.profile = 1;
        else if (!strcmp(a, "--attention") && v) c.attention = atoi(argv[++i]);
        else if (!strcmp(a, "--init") && v && !strcmp(v, "gpt2")) { c.gpt2_init = 1; i++; }
        else if (a[0] != '-' && !c.text_path) c.text_path = a;
        else return usage(argv[0]);
    }
    if (c.short_mode) {   /* a small model, a few dozen steps: what the tests run (flags given still win) */
        if (!layers_set) c.layers = 2;
        if (!heads_set) c.heads = 2;
        if (!width_set) c.width = 32;
        if (!context_set) c.context = 32;
        if (!batch_set) c.batch = 16;
        if (!steps_set) c.steps = 100;
        if (!lr_set) c.lr = 1e-2f;
        if (c.sample_chars == 400) c.sample_chars = 80;
    }
    if (c.layers < 1 || c.heads < 1 || c.width < 1 || c.context < 2 || c.batch < 1 || c.steps < 0 || c.lr <= 0
        || c.temperature < 0 || c.sample_chars < 0 || c.width % c.heads || c.attention < 0 || c.attention > 2) {
        fprintf(stderr, "bad configuration: layers, heads, width, batch >= 1, context >= 2, heads dividing width, lr > 0, "
                "attention 0-2\n");
        return 2;
    }
    if (!load_text(&text, c.text_path)) return 1;
    B = c.batch;
    T = c.context;
    if (text.n - text.n_train < T + 2 || text.n_train < T + 2) {
        fprintf(stderr, "%s: %lld bytes are too few for windows of %lld (give a longer text or a smaller --context)\n",
                text.source, (long long)text.n, (long long)T);
        return 1;
    }

    memset(&cd, 0, sizeof cd);
    cd.bind_threads = 1;   /* this program owns its process: OpenMP's threads one per core (a library call would not) */
    cd.device = c.cpu ? GPUDL_DEVICE_CPU : GPUDL_DEVICE_AUTO;
    cd.log = gpudl_log_stderr;
    GPUDL_CHECK(gpudl_ctx_create(&cd, &ctx));
    gpu = gpudl_ctx_device(ctx) == GPUDL_DEVICE_CUDA;
    if (!gpu) (void)gpudl_cpu_flush_denormals(ctx, 1);   /* subnormal moments are slow on a CPU */
    if (!steps_set && !c.short_mode) c.steps = gpu ? 5000 : 1000;
    m = build_gpt(ctx, &c, text.vocab);
    if (c.precision != GPUDL_PRECISION_FP32) GPUDL_CHECK(gpudl_model_set_precision(m, c.precision, NULL));
    memset(&od, 0, sizeof od);
    od.kind = GPUDL_OPTIM_ADAMW;
    od.lr = c.lr;
    od.beta2 = 0.99f;
    od.weight_decay = 0.01f;
    od.clip_norm = 1.0f;
    od.schedule = GPUDL_SCHED_COSINE;
    od.warmup_steps = c.steps >= 1000 ? 100 : c.steps / 10;
    od.total_steps = c.steps > 0 ? c.steps : 1;
    od.min_lr = c.lr / 10;
    GPUDL_CHECK(gpudl_model_set_optimizer(m, &od));

    shape[0] = B;
    shape[1] = T;
    GPUDL_CHECK(gpudl_tensor_create(ctx, &x, GPUDL_U8, 2, shape));    /* (B,T) ids, the step's inputs */
    GPUDL_CHECK(gpudl_tensor_create(ctx, &y, GPUDL_U8, 2, shape));    /* (B,T) the next ids */
    GPUDL_CHECK(gpudl_tensor_create(ctx, &xv, GPUDL_U8, 2, shape));   /* (B,T) held-out windows */
    GPUDL_CHECK(gpudl_tensor_create(ctx, &yv, GPUDL_U8, 2, shape));
    shape[0] = 1;
    GPUDL_CHECK(gpudl_tensor_create(ctx, &xs, GPUDL_U8, 2, shape));   /* (1,T) sampling window */
    xh = (uint8_t *)malloc((size_t)(B * T));
    yh = (uint8_t *)malloc((size_t)(B * T));
    gen = (uint8_t *)malloc((size_t)(c.sample_chars + 256 + (c.prompt ? strlen(c.prompt) : 0)));
    if (!xh || !yh || !gen) { fprintf(stderr, "out of memory\n"); return 1; }

    unigram_baselines(&text, &h1, &h1_heldout);
    printf("device: %s%s\n", gpu ? "GPU" : "CPU", c.precision == GPUDL_PRECISION_FP16 ? ", FP16 mixed precision"
                                                 : c.precision == GPUDL_PRECISION_BF16 ? ", BF16 mixed precision" : "");
    printf("text: %s: %lld bytes, vocabulary %d; %lld train, %lld held out\n", text.source, (long long)text.n, text.vocab,
           (long long)text.n_train, (long long)(text.n - text.n_train));
    printf("model: %lld layers, %lld heads, width %lld, context %lld; %lld parameters\n", (long long)c.layers,
           (long long)c.heads, (long long)c.width, (long long)T, (long long)gpudl_model_num_params(m));
    printf("training: %lld steps of %lld x %lld tokens, AdamW lr %g (cosine, warm-up %lld), seed %llu\n",
           (long long)c.steps, (long long)B, (long long)T, (double)c.lr, (long long)od.warmup_steps,
           (unsigned long long)c.seed);
    printf("context-free baselines: the training text's character entropy %.4f nats; its frequencies score %.4f on the held-out text\n",
           h1, h1_heldout);

    if (c.bench) {
        bench_steps(ctx, m, &text, &c, &x, &y, xh, yh);
        goto done;
    }
    eval_batches = c.short_mode ? 2 : 8;
    val0 = validation_loss(ctx, m, &text, &c, &xv, &yv, xh, yh, eval_batches);
    printf("step %5d  val loss %.4f (ln V = %.4f)\n", 0, (double)val0, log((double)text.vocab));

    /* training: random windows of the first 90%, loss and speed every log_every steps */
    log_every = c.short_mode ? 20 : c.steps >= 2000 ? 250 : 100;
    GPUDL_CHECK(gpudl_ctx_sync(ctx));
    t_log = gpudl_now();
    for (step = 0; step < c.steps; step++) {
        gather_batch(&text, &c, step, xh, yh);
        GPUDL_CHECK(gpudl_tensor_upload(ctx, &x, xh, (size_t)(B * T)));
        GPUDL_CHECK(gpudl_tensor_upload(ctx, &y, yh, (size_t)(B * T)));
        GPUDL_CHECK(gpudl_model_train_step(m, &x, &y));
        if ((step + 1) % log_every == 0 || step + 1 == c.steps) {
            double now, ms;
            int64_t k = (step % log_every) + 1;
            GPUDL_CHECK(gpudl_model_loss_value(m, &loss));   /* waits for the device */
            now = gpudl_now();
            ms = 1e3 * (now - t_log) / (double)k;
            train_s += now - t_log;
            printf("step %5lld  loss %.4f  lr %.2e  %8.2f ms/step  %9.0f tokens/s\n", (long long)(step + 1), (double)loss,
                   (double)gpudl_optim_lr(&od, step), ms, (double)(B * T) * 1e3 / ms);
            fflush(stdout);
            if ((step + 1) % (log_every * 5) == 0 && step + 1 < c.steps) {
                val = validation_loss(ctx, m, &text, &c, &xv, &yv, xh, yh, eval_batches);
                printf("step %5lld  val loss %.4f\n", (long long)(step + 1), (double)val);
            }
            t_log = gpudl_now();
        }
    }
    val = validation_loss(ctx, m, &text, &c, &xv, &yv, xh, yh, eval_batches);
    printf("val loss %.4f after %lld steps (the frequencies' %.4f): training %.1f s, %.2f ms/step, %.0f tokens/s\n",
           (double)val, (long long)c.steps, h1_heldout, train_s, c.steps ? 1e3 * train_s / (double)c.steps : 0.0,
           train_s > 0 ? (double)(c.steps * B * T) / train_s : 0.0);
    if (c.short_mode && (steps_set || batch_set || lr_set))
        printf("(--short checks learning with its own steps, batch and lr only)\n");
    else if (c.short_mode && !(val < h1_heldout)) {
        printf("FAIL: the held-out loss %.4f is not below the character frequencies' %.4f\n", (double)val, h1_heldout);
        ok = 0;
    }

    /* a sample: the prompt (default: a newline), then sample_chars drawn characters */
    if (c.prompt) {
        const char *p;
        for (p = c.prompt; *p; p++)
            if (text.byte_of[text.id_of[(uint8_t)*p]] == (uint8_t)*p) gen[gen_len++] = text.id_of[(uint8_t)*p];
    }
    if (gen_len == 0) gen[gen_len++] = text.byte_of[text.id_of['\n']] == '\n' ? text.id_of['\n'] : 0;
    {
        sample(ctx, m, &c, text.vocab, gen, &gen_len, c.sample_chars, &xs, c.seed + 7);
        printf("sample (temperature %g, seed %llu):\n---\n", (double)c.temperature, (unsigned long long)c.seed);
        print_text(&text, gen, gen_len);
        printf("\n---\n");
    }
    if (c.eval_dump) eval_dump(ctx, m, &text, &c, &xv, &yv, xh, yh, c.eval_dump);
    if (c.out && c.out[0]) {
        GPUDL_CHECK(gpudl_model_save(ctx, m, c.out));
        printf("checkpoint: %s (nanoGPT's names; tests/check_gpt.py loads it into PyTorch)\n", c.out);
    }
done:
    gpudl_tensor_free(ctx, &x); gpudl_tensor_free(ctx, &y); gpudl_tensor_free(ctx, &xv); gpudl_tensor_free(ctx, &yv);
    gpudl_tensor_free(ctx, &xs);
    gpudl_model_destroy(m);
    gpudl_ctx_destroy(ctx);
    free(xh); free(yh); free(gen); free(text.ids);
    return ok ? 0 : 1;
}
