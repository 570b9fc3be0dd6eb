/* sanitizer.cpp - the emulator's compute-sanitizer tools: memcheck,
   racecheck, initcheck and synccheck, as NVIDIA's Compute Sanitizer User
   Manual describes them, for programs built by nvcc-emu and run by
   tests/emu/compute-sanitizer.

   The device code's instrumentation (access.cpp, exec.cpp) tells this file
   about every access, barrier and warp exchange of a kernel (sanitizer.h);
   the runtime about every device allocation, free and non-kernel write
   (internal.h). What a tool finds goes out as one line per finding
   ("records", below) on the file descriptor CUEMU_SAN_FD (the script's
   pipe; stderr without one); the script resolves program counters to
   source lines and prints compute-sanitizer's reports.

   - memcheck (Manual, "Memcheck Tool"): accesses out of bounds of a device
     allocation (also inside the padding that rounds an allocation up, where
     the device itself would not fault), accesses to freed device memory,
     out-of-bounds shared and misaligned accesses (the instrumentation
     faults them and calls san_bad_access first); with --leak-check full
     the device allocations still live at exit ("Leak Checking"). As on a
     GPU under memcheck, an invalid access ends in an "unspecified launch
     failure" (cudaErrorLaunchFailure, sticky).
   - racecheck (Manual, "Racecheck Tool"): shared-memory hazards between two
     threads of a block with no barrier between them: write-after-write,
     write-after-read, read-after-write; atomics are not hazards. Threads of
     one warp are as independent as any two threads of the block: since
     Volta, independent thread scheduling (CUDA C++ Programming Guide,
     "Independent Thread Scheduling", "Warp Synchronous Programming")
     means lanes do not run in lock step, so only a warp-level
     synchronisation among them (__syncwarp, or a *_sync exchange naming
     both: san_warp_sync) orders their accesses; the emulated devices are
     all 7.5 and later. A hazard whose write leaves the value unchanged has
     no effect on the program (the Manual's INFO severity, not printed at
     the default print level) and is not reported.
   - initcheck (Manual, "Initcheck Tool"): a kernel's read of device global
     memory that nothing wrote since cudaMalloc (a byte of shadow per
     device byte; cudaMemset/cudaMemcpy/library outputs and kernel writes
     mark bytes written). Global memory only, unless the command line's
     --initcheck-address-space (global, the default; shared; all) asks for
     shared memory too (CUEMU_SAN_INIT_SPACE): then a read of a __shared__
     byte that no thread of the block wrote since the block started
     ("Uninitialized __shared__ memory read"; a block's shared memory starts
     undefined: Programming Guide, "Shared Memory").
   - synccheck (Manual, "Synccheck Tool"): barrier and warp-synchronisation
     errors the executor finds (san_sync_error).

   Cost: nothing when no tool runs (every entry point tests one integer).
   With a tool: per-worker state (a worker runs one block at a time) and a
   lock only for what is shared (the allocation map, the reports). */
#include "sanitizer.h"
#include "access.h"
#include "state.h"
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cuemu {

bool san_var_at(size_t off, size_t *vo, size_t *vs, std::string *name);

namespace {

/* >>tool and options */
int g_tool = -1;                 /* SanTool; -1 until read */
bool g_leak_check = false;       /* CUEMU_SAN_LEAK_CHECK=1 (--leak-check full) */
bool g_init_global = true;       /* initcheck's address spaces (CUEMU_SAN_INIT_SPACE: global, shared or all) */
bool g_init_shared = false;
int g_fd = 2;                    /* CUEMU_SAN_FD: where records go */
std::string *g_capture = nullptr;   /* self-tests: records go here instead */
const unsigned kPerSite = 32;    /* full records per (kind, pc); more are only counted */

std::mutex &out_mu() {
    static std::mutex *m = new std::mutex();
    return *m;
}

void at_exit();

int read_tool() {
    const char *t = getenv("CUEMU_SANITIZER");
    int tool = SAN_NONE;
    if (t && *t) {
        if (!strcmp(t, "memcheck")) tool = SAN_MEMCHECK;
        else if (!strcmp(t, "racecheck")) tool = SAN_RACECHECK;
        else if (!strcmp(t, "initcheck")) tool = SAN_INITCHECK;
        else if (!strcmp(t, "synccheck")) tool = SAN_SYNCCHECK;
        else {
            fprintf(stderr, "cuemu: CUEMU_SANITIZER=%s: want memcheck, racecheck, initcheck or synccheck\n", t);
            exit(1);
        }
    }
    if (tool) {
        const char *fd = getenv("CUEMU_SAN_FD");
        if (fd && *fd) g_fd = atoi(fd);
        const char *lc = getenv("CUEMU_SAN_LEAK_CHECK");
        g_leak_check = tool == SAN_MEMCHECK && lc && !strcmp(lc, "1");
        const char *is = getenv("CUEMU_SAN_INIT_SPACE");
        if (is && *is) {
            if (strcmp(is, "global") && strcmp(is, "shared") && strcmp(is, "all")) {
                fprintf(stderr, "cuemu: CUEMU_SAN_INIT_SPACE=%s: want global, shared or all\n", is);
                exit(1);
            }
            g_init_global = strcmp(is, "shared") != 0;
            g_init_shared = strcmp(is, "global") != 0;
        }
        atexit(at_exit);
    }
    return tool;
}

inline int tool() {
    int t = __atomic_load_n(&g_tool, __ATOMIC_RELAXED);
    if (__builtin_expect(t < 0, 0)) {
        static const int first = read_tool();   /* once, even when threads race here */
        t = first;
        __atomic_store_n(&g_tool, t, __ATOMIC_RELAXED);
    }
    return t;
}

/* >>records: "CUEMU-SAN<TAB>kind<TAB>key=value..." one line each, values
   escaped (%, tab, newline as %xx). Written whole under a lock, so records
   of several threads never interleave (and a pipe keeps the writes of up
   to PIPE_BUF bytes of several processes whole). */
struct Rec {
    std::string s;
    explicit Rec(const char *kind) : s("CUEMU-SAN\t") { s += kind; }
    Rec &kv(const char *k, const std::string &v) {
        s += '\t';
        s += k;
        s += '=';
        for (char c : v) {
            if (c == '%' || c == '\t' || c == '\n' || c == '\r') {
                char b[4];
                snprintf(b, sizeof b, "%%%02x", (unsigned char)c);
                s += b;
            } else {
                s += c;
            }
        }
        return *this;
    }
    Rec &kv(const char *k, const char *v) { return kv(k, std::string(v ? v : "")); }
    Rec &num(const char *k, unsigned long long v) { return kv(k, std::to_string(v)); }
    Rec &hex(const char *k, unsigned long long v) {
        char b[32];
        snprintf(b, sizeof b, "0x%llx", v);
        return kv(k, b);
    }
    Rec &dim(const char *k, unsigned x, unsigned y, unsigned z) {
        char b[64];
        snprintf(b, sizeof b, "%u,%u,%u", x, y, z);
        return kv(k, b);
    }
    void emit() {
        s += '\n';
        std::lock_guard<std::mutex> lk(out_mu());
        if (g_capture) {
            *g_capture += s;
            return;
        }
        size_t off = 0;
        while (off < s.size()) {
            ssize_t n = write(g_fd, s.data() + off, s.size() - off);
            if (n <= 0) break;
            off += (size_t)n;
        }
    }
};

/* A program counter as "module offset": the script runs addr2line on the
   module with the offset (ELF position-independent objects are linked at
   0, so the offset from the load address is the link-time address). */
std::string pc_text(const void *pc) {
    if (!pc) return "";
    Dl_info di;
    if (!dladdr(pc, &di) || !di.dli_fbase) {
        char b[32];
        snprintf(b, sizeof b, "0x%lx", (unsigned long)(uintptr_t)pc);
        return std::string(b) + " ?";
    }
    uintptr_t addr = (uintptr_t)pc - 1;   /* a return address: the call is the instruction before */
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)di.dli_fbase;
    if (eh->e_type == ET_DYN) addr -= (uintptr_t)di.dli_fbase;
    std::string mod = di.dli_fname ? di.dli_fname : "";
    if (mod.empty() || mod[0] != '/') {
        static const std::string exe = [] {
            char buf[4096];
            ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
            return n > 0 ? std::string(buf, (size_t)n) : std::string();
        }();
        Dl_info me;
        /* the main program: its name in the link map is not a full path */
        if (!exe.empty() && dladdr((void *)&pc_text, &me) && me.dli_fbase == di.dli_fbase) mod = exe;
        else if (!exe.empty() && mod.empty()) mod = exe;
        else {
            char *r = realpath(mod.c_str(), nullptr);
            if (r) {
                mod = r;
                free(r);
            }
        }
    }
    char b[32];
    snprintf(b, sizeof b, "0x%lx", (unsigned long)addr);
    return std::string(b) + " " + mod;
}

/* Counts records per site, so that a kernel that fails in every thread
   prints a bounded number of full records. */
std::mutex g_site_mu;
std::unordered_map<std::string, unsigned long long> *g_sites;
unsigned long long g_suppressed;

std::string site(const char *kind, const void *pc) {
    char b[64];
    snprintf(b, sizeof b, "%s %p", kind, pc);
    return b;
}

bool site_allows(const std::string &key) {
    std::lock_guard<std::mutex> lk(g_site_mu);
    if (!g_sites) g_sites = new std::unordered_map<std::string, unsigned long long>();
    unsigned long long &n = (*g_sites)[key];
    if (++n <= kPerSite) return true;
    g_suppressed++;
    return false;
}

/* >>the running grid (one at a time: the executor runs one unit of work at
   a time; set before its blocks start, read by the workers) */
struct GridInfo {
    std::string kernel, file;
    int line = 0, device = 0;
    dim3 grid{}, block{};
    std::atomic<bool> failed{false};   /* memcheck ended it with a launch failure */
};
GridInfo g_grid;

Rec &where(Rec &r, const void *pc) {
    r.kv("kernel", g_grid.kernel).kv("launch", g_grid.file + ":" + std::to_string(g_grid.line));
    r.kv("pc", pc_text(pc));
    r.dim("thread", threadIdx.x, threadIdx.y, threadIdx.z);
    r.dim("block", blockIdx.x, blockIdx.y, blockIdx.z);
    return r;
}

/* memcheck: the device answers an invalid access with an unspecified
   launch failure (the Manual's examples: "Program hit
   cudaErrorLaunchFailure (error 719) due to "unspecified launch failure""). */
void memcheck_fail() {
    if (!g_grid.failed.exchange(true)) raise_sticky(g_grid.device, cudaErrorLaunchFailure);
}

/* >>device allocations (san_alloc / san_free): bounds for memcheck, shadow
   bytes for initcheck (1: written), host backtraces for the leak check */
struct AllocRec {
    uintptr_t base;
    size_t size;
    int device;
    uint8_t *shadow = nullptr;   /* initcheck: one byte per device byte */
    size_t shadow_len = 0;
    std::vector<void *> bt;      /* --leak-check full: where it was allocated */
};

std::shared_mutex g_alloc_mu;
std::map<uintptr_t, AllocRec *> *g_live;    /* by base */
std::map<uintptr_t, AllocRec *> *g_freed;   /* the most recent frees, by base */
std::vector<uintptr_t> *g_freed_order;
const size_t kFreedKept = 1024;
std::atomic<uint64_t> g_alloc_gen{1};       /* changes at every free: invalidates the workers' caches */
/* How far around an allocation an access counts as its overrun: the
   runtime's page (an allocation ends where its guard page starts). */
size_t slack() {
    static size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

void ensure_maps() {
    if (!g_live) {
        g_live = new std::map<uintptr_t, AllocRec *>();
        g_freed = new std::map<uintptr_t, AllocRec *>();
        g_freed_order = new std::vector<uintptr_t>();
    }
}

void drop_shadow(AllocRec *a) {
    if (a->shadow) munmap(a->shadow, a->shadow_len);
    a->shadow = nullptr;
}

/* >>per-worker state */
struct Cell {                /* racecheck: what happened to one shared byte in the current epoch */
    uint32_t w_epoch, w_clk;
    uint16_t w_tid;
    uint8_t w_changed;       /* the write changed the byte's value */
    uint8_t pad;
    uint32_t r_epoch[2], r_clk[2];
    uint16_t r_tid[2];
    const void *w_pc;
    const void *r_pc[2];
};

struct Hazard {              /* one racecheck finding, before the racing write's value is known */
    char type;               /* 'W' WAW, 'A' WAR, 'R' RAW */
    uint16_t other_tid;
    bool other_write;
    const void *other_pc;
    size_t off;
};

struct WorkerSan {
    char *smem = nullptr, *dyn = nullptr;
    size_t smem_bytes = 0, dyn_bytes = 0;
    uintptr_t lo = 0, hi = 0;            /* the shared address space of the block */
    /* racecheck */
    Cell *cells = nullptr;
    size_t ncells = 0;
    uint32_t epoch = 0;                  /* grows at every block and barrier: older cells are ordered */
    std::vector<uint32_t> vc;            /* per thread: a vector clock over the lanes of its warp */
    unsigned nthreads = 0;
    bool pending = false;                /* a write whose new value is not known yet */
    char *p_addr = nullptr;
    size_t p_size = 0;
    unsigned char p_old[32];
    uint16_t p_tid = 0;
    const void *p_pc = nullptr;
    Hazard p_haz[3];
    int p_nhaz = 0;
    dim3 p_thread{}, p_block{};
    /* initcheck of shared memory: per byte of the window, the block (serial)
       whose thread last wrote it; a byte not written in this block reads as
       uninitialised */
    uint32_t *written = nullptr;
    size_t nwritten = 0;
    uint32_t block_serial = 0;
    /* memcheck/initcheck: the allocation of the last global access */
    AllocRec *cache = nullptr;
    uint64_t cache_gen = 0;
    /* memcheck: the last access reported (a fault that follows it is the same error) */
    uintptr_t last_bad = 0;
    size_t last_bad_size = 0;
};

thread_local WorkerSan *t_ws;

/* What the tool saw (the "end" record: proof that it ran, for the self-tests) */
std::atomic<unsigned long long> g_n_blocks{0}, g_n_access{0}, g_n_shared{0}, g_n_barriers{0};
thread_local unsigned long long t_n_access, t_n_shared;

WorkerSan &ws() {
    if (!t_ws) t_ws = new WorkerSan();   /* one per worker thread, for the life of the process */
    return *t_ws;
}

unsigned linear_tid() { return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y; }

bool in_shared(const WorkerSan &w, uintptr_t a) { return a >= w.lo && a < w.hi; }

/* >>global lookups */
/* The live allocation holding [a, a + n), the nearest one for a report, or
   a freed one. Returns 0 inside, 1 out of bounds of a live allocation
   (near), 2 in freed memory, -1 unknown memory (host, static data, stack:
   not the tools' business). */
int lookup(WorkerSan &w, uintptr_t a, size_t n, AllocRec **out) {
    uint64_t gen = g_alloc_gen.load(std::memory_order_acquire);
    if (w.cache && w.cache_gen == gen && a >= w.cache->base && a + n <= w.cache->base + w.cache->size) {
        *out = w.cache;
        return 0;
    }
    std::shared_lock<std::shared_mutex> lk(g_alloc_mu);
    if (!g_live) return -1;
    auto it = g_live->upper_bound(a);
    if (it != g_live->begin()) {
        AllocRec *r = std::prev(it)->second;
        if (a >= r->base && a + n <= r->base + r->size) {
            w.cache = r;
            w.cache_gen = gen;
            *out = r;
            return 0;
        }
        size_t sz = r->size ? r->size : 1;
        size_t padded = (sz + 255) / 256 * 256 + slack();
        if (a < r->base + padded) {
            *out = r;
            return 1;
        }
    }
    /* just before the next one, on its first page (the runtime maps an
       allocation so that it ends at a guard page: what lies before it on
       that page is its own padding; below that page is another mapping) */
    if (it != g_live->end() && a >= (it->first & ~(uintptr_t)(slack() - 1))) {
        *out = it->second;
        return 1;
    }
    auto f = g_freed->upper_bound(a);
    if (f != g_freed->begin()) {
        AllocRec *r = std::prev(f)->second;
        if (a < r->base + (r->size ? r->size : 1)) {
            *out = r;
            return 2;
        }
    }
    return -1;
}

/* >>memcheck */
void report_global(WorkerSan &w, uintptr_t a, size_t n, bool write, int how, const AllocRec *r, const void *pc) {
    memcheck_fail();
    w.last_bad = a;
    w.last_bad_size = n;
    if (!site_allows(site("mg", pc))) return;
    Rec rec("memcheck");
    rec.kv("what", "oob").kv("space", "global").kv("rw", write ? "write" : "read").num("size", n).hex("addr", a);
    if (how == 2) rec.kv("freed", "1").hex("abase", r->base).num("asize", r->size);
    else if (r) rec.hex("abase", r->base).num("asize", r->size);
    where(rec, pc).emit();
}

/* On the running thread's own stack: local memory, not the tools' business. */
__attribute__((noinline)) bool on_stack(uintptr_t a) {
    char probe;
    uintptr_t sp = (uintptr_t)&probe;
    return a >= sp - 4096 && a < sp + fiber_stack_bytes();
}

void memcheck_access(WorkerSan &w, uintptr_t a, size_t n, bool write, const void *pc) {
    if (in_shared(w, a) || on_stack(a)) return;   /* shared: the instrumentation checked it (san_bad_access reports) */
    AllocRec *r = nullptr;
    int how = lookup(w, a, n, &r);
    if (how > 0) report_global(w, a, n, write, how, r, pc);
}

/* >>initcheck */
void ensure_written(WorkerSan &w, size_t n) {
    if (n <= w.nwritten) return;
    size_t want = (n + 65535) / 65536 * 65536;
    void *p = mmap(nullptr, want * sizeof(uint32_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return;
    if (w.written) {
        memcpy(p, w.written, w.nwritten * sizeof(uint32_t));
        munmap(w.written, w.nwritten * sizeof(uint32_t));
    }
    w.written = (uint32_t *)p;
    w.nwritten = want;
}

void initcheck_shared(WorkerSan &w, uintptr_t a, size_t n, bool write, bool atomic, const void *pc) {
    size_t off = a - (uintptr_t)w.smem;
    ensure_written(w, off + n);
    if (off + n > w.nwritten) return;
    uint32_t *s = w.written + off;
    if (!write || atomic) {
        for (size_t i = 0; i < n; i++) {
            if (s[i] == w.block_serial) continue;
            if (site_allows(site("is", pc))) {
                Rec rec("initcheck");
                rec.kv("what", "uninit").kv("space", "shared").kv("rw", "read").num("size", n).hex("addr", off);
                where(rec, pc).emit();
            }
            break;
        }
    }
    if (write)
        for (size_t i = 0; i < n; i++) s[i] = w.block_serial;
}

void initcheck_access(WorkerSan &w, uintptr_t a, size_t n, bool write, bool atomic, const void *pc) {
    if (in_shared(w, a)) {
        if (g_init_shared && w.smem) initcheck_shared(w, a, n, write, atomic, pc);
        return;
    }
    if (!g_init_global || on_stack(a)) return;
    AllocRec *r = nullptr;
    if (lookup(w, a, n, &r) != 0 || !r->shadow) return;
    uint8_t *s = r->shadow + (a - r->base);
    if (!write || atomic) {
        for (size_t i = 0; i < n; i++) {
            if (__atomic_load_n(&s[i], __ATOMIC_RELAXED)) continue;
            if (site_allows(site("ig", pc))) {
                Rec rec("initcheck");
                rec.kv("what", "uninit").kv("space", "global").kv("rw", "read").num("size", n).hex("addr", a);
                rec.hex("abase", r->base).num("asize", r->size);
                where(rec, pc).emit();
            }
            break;
        }
    }
    if (write)
        for (size_t i = 0; i < n; i++) __atomic_store_n(&s[i], (uint8_t)1, __ATOMIC_RELAXED);
}

/* >>racecheck */
std::mutex g_race_mu;
struct RaceSite {
    std::string rec;          /* the record of its first instance, without the count */
    unsigned long long count = 0;
    bool emitted = false;
};
std::map<std::string, RaceSite> *g_races;

/* The lane clocks: thread t's knowledge of lane l of its warp. */
inline uint32_t &vclock(WorkerSan &w, unsigned t, unsigned lane) { return w.vc[(size_t)t * 32 + lane]; }

/* Did the access of thread o at lane clock c happen before what thread t
   does now? Same thread: program order. Same warp: a warp
   synchronisation both took part in since. Otherwise: only a block
   barrier, which starts a new epoch (the caller tests epochs). */
bool ordered(WorkerSan &w, unsigned t, unsigned o, uint32_t c) {
    if (o == t) return true;
    if ((o >> 5) != (t >> 5) || (size_t)t * 32 + 32 > w.vc.size()) return false;
    return c <= vclock(w, t, o & 31);
}

void ensure_cells(WorkerSan &w, size_t n) {
    if (n <= w.ncells) return;
    size_t want = (n + 65535) / 65536 * 65536;
    void *p = mmap(nullptr, want * sizeof(Cell), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    if (w.cells) {
        memcpy(p, w.cells, w.ncells * sizeof(Cell));
        munmap(w.cells, w.ncells * sizeof(Cell));
    }
    w.cells = (Cell *)p;
    w.ncells = want;
}

void race_found(WorkerSan &w, const Hazard &h, bool write, const void *pc, dim3 thread, dim3 block) {
    static const char *names[] = {"WAW", "WAR", "RAW"};
    const char *type = h.type == 'W' ? names[0] : h.type == 'A' ? names[1] : names[2];
    /* the earlier access first, as the Manual's reports list them */
    char key[160];
    snprintf(key, sizeof key, "%s %p %p", type, h.other_pc, pc);
    unsigned ox = h.other_tid % blockDim.x, oy = (h.other_tid / blockDim.x) % blockDim.y,
             oz = h.other_tid / (blockDim.x * blockDim.y);
    std::lock_guard<std::mutex> lk(g_race_mu);
    if (!g_races) g_races = new std::map<std::string, RaceSite>();
    RaceSite &s = (*g_races)[key];
    if (s.count++ == 0) {
        Rec r("racecheck");
        r.kv("hazard", type).kv("space", "shared").hex("offset", h.off);
        size_t vo = 0, vs = 0;
        std::string var = "dynamic shared memory (extern __shared__)";
        uintptr_t a = (uintptr_t)w.smem + h.off;
        if (!(w.dyn && a >= (uintptr_t)w.dyn && a < (uintptr_t)w.dyn + w.dyn_bytes)) {
            var = "?";
            san_var_at(h.off, &vo, &vs, &var);
        } else {
            vo = (size_t)(w.dyn - w.smem);
            vs = w.dyn_bytes;
        }
        r.kv("var", var).num("var_offset", h.off - vo).num("var_size", vs);
        r.kv("kernel", g_grid.kernel).kv("launch", g_grid.file + ":" + std::to_string(g_grid.line));
        r.dim("block", block.x, block.y, block.z);
        r.kv("a_rw", h.other_write ? "Write" : "Read").dim("a_thread", ox, oy, oz).kv("a_pc", pc_text(h.other_pc));
        r.kv("b_rw", write ? "Write" : "Read").dim("b_thread", thread.x, thread.y, thread.z).kv("b_pc", pc_text(pc));
        s.rec = r.s;
    }
}

/* The pending write's value is known now: its hazards count if it changed
   the value (an unchanged value is the Manual's INFO severity). */
void resolve_pending(WorkerSan &w) {
    if (!w.pending) return;
    w.pending = false;
    bool changed = w.p_size > sizeof w.p_old;
    size_t base = (size_t)(w.p_addr - w.smem);
    for (size_t i = 0; i < w.p_size && i < sizeof w.p_old; i++) {
        bool c = (unsigned char)w.p_addr[i] != w.p_old[i];
        changed |= c;
        if (base + i < w.ncells) w.cells[base + i].w_changed = c;
    }
    if (w.p_size > sizeof w.p_old)
        for (size_t i = 0; i < w.p_size && base + i < w.ncells; i++) w.cells[base + i].w_changed = 1;
    if (!changed) return;
    for (int i = 0; i < w.p_nhaz; i++) race_found(w, w.p_haz[i], true, w.p_pc, w.p_thread, w.p_block);
}

void racecheck_access(WorkerSan &w, uintptr_t a, size_t n, bool write, const void *pc) {
    if (!in_shared(w, a) || !w.smem) return;
    size_t off = a - (uintptr_t)w.smem;
    ensure_cells(w, off + n);
    if (off + n > w.ncells) return;
    unsigned t = linear_tid();
    if (t >= w.nthreads) return;
    uint32_t clk = (size_t)t * 32 + 32 <= w.vc.size() ? vclock(w, t, t & 31) : 0;
    uint32_t e = w.epoch;
    if (write) {
        int nh = 0;
        bool waw = false, war = false;
        for (size_t i = 0; i < n; i++) {
            Cell &c = w.cells[off + i];
            if (!waw && c.w_epoch == e && !ordered(w, t, c.w_tid, c.w_clk)) {
                waw = true;
                w.p_haz[nh++] = Hazard{'W', c.w_tid, true, c.w_pc, off + i};
            }
            for (int k = 0; k < 2 && !war; k++)
                if (c.r_epoch[k] == e && !ordered(w, t, c.r_tid[k], c.r_clk[k])) {
                    war = true;
                    w.p_haz[nh++] = Hazard{'A', c.r_tid[k], false, c.r_pc[k], off + i};
                }
            c.w_epoch = e;
            c.w_tid = (uint16_t)t;
            c.w_clk = clk;
            c.w_pc = pc;
            c.w_changed = 1;
            c.r_epoch[0] = c.r_epoch[1] = 0;   /* later accesses race with this write, not with those reads */
        }
        /* the hazards count once the new value is known (resolve_pending) */
        w.pending = true;
        w.p_addr = (char *)a;
        w.p_size = n;
        memcpy(w.p_old, (const void *)a, n < sizeof w.p_old ? n : sizeof w.p_old);
        w.p_tid = (uint16_t)t;
        w.p_pc = pc;
        w.p_nhaz = nh;
        w.p_thread = dim3(threadIdx.x, threadIdx.y, threadIdx.z);
        w.p_block = dim3(blockIdx.x, blockIdx.y, blockIdx.z);
        return;
    }
    bool raw = false;
    for (size_t i = 0; i < n; i++) {
        Cell &c = w.cells[off + i];
        if (!raw && c.w_epoch == e && c.w_changed && !ordered(w, t, c.w_tid, c.w_clk)) {
            raw = true;
            race_found(w, Hazard{'R', c.w_tid, true, c.w_pc, off + i}, false, pc, dim3(threadIdx.x, threadIdx.y, threadIdx.z),
                       dim3(blockIdx.x, blockIdx.y, blockIdx.z));
        }
        /* remember two readers: the first and the latest other one */
        int k = c.r_epoch[0] != e || c.r_tid[0] == t ? 0 : 1;
        c.r_epoch[k] = e;
        c.r_tid[k] = (uint16_t)t;
        c.r_clk[k] = clk;
        c.r_pc[k] = pc;
    }
}

void flush_races() {
    std::lock_guard<std::mutex> lk(g_race_mu);
    if (!g_races) return;
    for (auto &kv : *g_races) {
        RaceSite &s = kv.second;
        if (s.emitted || !s.count) continue;
        s.emitted = true;
        Rec r("racecheck");
        r.s = s.rec;
        r.num("count", s.count).emit();
    }
}

/* >>shared variables of the running kernels (san_shared_var) */
struct VarRec { size_t off, size; std::string name; };
std::mutex g_var_mu;
std::map<size_t, VarRec> *g_vars;

} /* namespace */

/* The static __shared__ variable that holds shared offset off. */
bool san_var_at(size_t off, size_t *vo, size_t *vs, std::string *name) {
    std::lock_guard<std::mutex> lk(g_var_mu);
    if (!g_vars) return false;
    auto it = g_vars->upper_bound(off);
    if (it == g_vars->begin()) return false;
    const VarRec &v = std::prev(it)->second;
    if (off >= v.off + v.size) return false;
    *vo = v.off;
    *vs = v.size;
    *name = v.name;
    return true;
}

/* >>entry points */
int san_tool() { return tool(); }

/* Self-tests only: switch the tool on or off and catch the records. */
void san_test_reset(int t, std::string *capture) {
    tool();
    {
        std::lock_guard<std::mutex> lk(out_mu());
        g_capture = capture;
    }
    __atomic_store_n(&g_tool, t, __ATOMIC_RELAXED);
    std::lock_guard<std::mutex> lk(g_site_mu);
    if (g_sites) g_sites->clear();
    std::lock_guard<std::mutex> lk2(g_race_mu);
    if (g_races) g_races->clear();
}

void san_test_leak_check(bool on) { g_leak_check = on; }

void san_alloc(const void *p, size_t bytes, int device) {
    if (!tool() || !p) return;
    AllocRec *r = new AllocRec();
    r->base = (uintptr_t)p;
    r->size = bytes;
    r->device = device;
    /* initcheck tracks device memory only: the host writes managed memory
       directly, unseen (the Manual: "uninitialized device global memory") */
    if (tool() == SAN_INITCHECK && bytes && classify(p) == MEM_DEVICE) {
        void *s = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s != MAP_FAILED) {
            r->shadow = (uint8_t *)s;
            r->shadow_len = bytes;
        }
    }
    if (g_leak_check) {
        void *frames[24];
        int n = backtrace(frames, 24);
        r->bt.assign(frames, frames + (n > 0 ? n : 0));
    }
    std::unique_lock<std::shared_mutex> lk(g_alloc_mu);
    ensure_maps();
    auto old = g_live->find(r->base);
    if (old != g_live->end()) {   /* a free we were not told about */
        drop_shadow(old->second);
        delete old->second;
    }
    (*g_live)[r->base] = r;
    g_alloc_gen++;
}

void san_free(const void *p) {
    if (!tool() || !p) return;
    std::unique_lock<std::shared_mutex> lk(g_alloc_mu);
    ensure_maps();
    auto it = g_live->find((uintptr_t)p);
    if (it == g_live->end()) return;
    AllocRec *r = it->second;
    g_live->erase(it);
    g_alloc_gen++;
    drop_shadow(r);
    r->bt.clear();
    auto old = g_freed->find(r->base);
    if (old != g_freed->end()) delete old->second;
    (*g_freed)[r->base] = r;
    g_freed_order->push_back(r->base);
    if (g_freed_order->size() > 2 * kFreedKept) {
        /* forget the oldest frees (a record may still sit in a worker's cache: kept until much later) */
        std::vector<uintptr_t> keep(g_freed_order->end() - kFreedKept, g_freed_order->end());
        for (auto b = g_freed_order->begin(); b != g_freed_order->end() - kFreedKept; ++b) {
            auto f = g_freed->find(*b);
            if (f != g_freed->end() && std::find(keep.begin(), keep.end(), *b) == keep.end()) {
                delete f->second;
                g_freed->erase(f);
            }
        }
        *g_freed_order = keep;
    }
}

void san_written(const void *p, size_t bytes) {
    if (tool() != SAN_INITCHECK || !p || !bytes) return;
    std::shared_lock<std::shared_mutex> lk(g_alloc_mu);
    if (!g_live) return;
    uintptr_t a = (uintptr_t)p, end = a + bytes;
    auto it = g_live->upper_bound(a);
    if (it != g_live->begin()) --it;
    for (; it != g_live->end() && it->first < end; ++it) {
        AllocRec *r = it->second;
        if (!r->shadow) continue;
        uintptr_t lo = a > r->base ? a : r->base, hi = end < r->base + r->size ? end : r->base + r->size;
        if (lo < hi) memset(r->shadow + (lo - r->base), 1, hi - lo);
    }
}

void san_kernel_begin(const char *kernel, const char *file, int line, dim3 grid, dim3 block, int device) {
    if (!tool()) return;
    g_grid.kernel = kernel ? kernel : "(kernel)";
    g_grid.file = file ? file : "?";
    g_grid.line = line;
    g_grid.grid = grid;
    g_grid.block = block;
    g_grid.device = device;
    g_grid.failed = false;
}

void san_kernel_end() {
    if (tool() == SAN_RACECHECK) flush_races();
}

void san_block_begin(char *smem, size_t smem_bytes, char *dynamic, size_t dynamic_bytes) {
    if (!tool()) return;
    WorkerSan &w = ws();
    resolve_pending(w);
    w.smem = smem;
    w.smem_bytes = smem_bytes;
    w.dyn = dynamic;
    w.dyn_bytes = dynamic_bytes;
    w.lo = (uintptr_t)smem;
    w.hi = (uintptr_t)smem + smem_bytes;
    if (dynamic && (uintptr_t)dynamic >= w.lo && (uintptr_t)dynamic + dynamic_bytes > w.hi) w.hi = (uintptr_t)dynamic + dynamic_bytes;
    w.last_bad = 0;
    if (tool() == SAN_INITCHECK && g_init_shared && ++w.block_serial == 0) {   /* a new block: nothing written yet */
        if (w.written) memset(w.written, 0, w.nwritten * sizeof(uint32_t));
        w.block_serial = 1;
    }
    if (tool() != SAN_RACECHECK) return;
    w.epoch++;
    unsigned n = blockDim.x * blockDim.y * blockDim.z;
    w.nthreads = n;
    w.vc.assign((size_t)((n + 31) & ~31u) * 32, 0);
    for (unsigned t = 0; t < n; t++) vclock(w, t, t & 31) = 1;
}

void san_block_end() {
    if (!tool() || !t_ws) return;
    g_n_blocks++;
    g_n_access += t_n_access;
    g_n_shared += t_n_shared;
    t_n_access = t_n_shared = 0;
    resolve_pending(*t_ws);
    t_ws->smem = nullptr;
    t_ws->lo = t_ws->hi = 0;
}

void san_shared_var(size_t offset, size_t size, const char *what) {
    if (!tool()) return;
    std::lock_guard<std::mutex> lk(g_var_mu);
    if (!g_vars) g_vars = new std::map<size_t, VarRec>();
    auto it = g_vars->find(offset);
    if (it != g_vars->end() && it->second.size == size) return;
    (*g_vars)[offset] = VarRec{offset, size, shared_var_name(what)};
}

void san_access(const void *addr, size_t size, bool write, bool atomic, const void *pc) {
    int t = tool();
    if (!t) return;
    WorkerSan &w = ws();
    uintptr_t a = (uintptr_t)addr;
    if (size == 0) size = 1;
    t_n_access++;
    t_n_shared += in_shared(w, a);
    switch (t) {
    case SAN_MEMCHECK: memcheck_access(w, a, size, write, pc); break;
    case SAN_INITCHECK: initcheck_access(w, a, size, write, atomic, pc); break;
    case SAN_RACECHECK:
        resolve_pending(w);
        if (!atomic) racecheck_access(w, a, size, write, pc);   /* atomics are not hazards */
        break;
    default: break;
    }
}

void san_block_barrier() {
    if (tool() != SAN_RACECHECK || !t_ws) return;
    resolve_pending(*t_ws);
    t_ws->epoch++;
    g_n_barriers++;
}

void san_warp_sync(unsigned warp, unsigned mask) {
    if (tool() != SAN_RACECHECK || !t_ws) return;
    WorkerSan &w = ws();
    resolve_pending(w);
    unsigned first = warp * 32;
    if ((size_t)(first + 32) * 32 > w.vc.size()) return;
    /* every lane in mask learns what each of them knew; then each ticks its own clock */
    uint32_t m[32] = {0};
    for (unsigned l = 0; l < 32; l++)
        if ((mask >> l) & 1)
            for (unsigned k = 0; k < 32; k++) m[k] = m[k] > vclock(w, first + l, k) ? m[k] : vclock(w, first + l, k);
    for (unsigned l = 0; l < 32; l++)
        if ((mask >> l) & 1) {
            for (unsigned k = 0; k < 32; k++) vclock(w, first + l, k) = m[k];
            vclock(w, first + l, l)++;
        }
}

bool san_sync_error(const char *what, const void *pc) {
    if (tool() != SAN_SYNCCHECK) return false;
    std::string s = what ? what : "";
    /* the Manual's synccheck reports: "Divergent thread(s) in block" (a
       block barrier), "Divergent thread(s) in warp" (a warp-level one),
       "Invalid arguments" (a mask that does not name the calling thread) */
    const char *kind = "block";
    if (s.find("mask") != std::string::npos && (s.find("does not name") != std::string::npos || s.find("width") != std::string::npos))
        kind = "invalid";
    else if (s.find("__syncthreads") == std::string::npos &&
             (s.find("warp") != std::string::npos || s.find("lane") != std::string::npos || s.find("_sync") != std::string::npos))
        kind = "warp";
    if (!site_allows(site(kind, pc))) return true;
    Rec r("synccheck");
    r.kv("what", kind).kv("detail", s);
    where(r, pc).emit();
    return true;
}

void san_bad_access(const void *addr, size_t size, bool write, int bad, const void *pc) {
    if (tool() != SAN_MEMCHECK) return;
    WorkerSan &w = ws();
    uintptr_t a = (uintptr_t)addr;
    /* the fault of an access already reported by san_access */
    if (bad == SAN_BAD_FAULT && w.last_bad && a >= w.last_bad && a < w.last_bad + (w.last_bad_size ? w.last_bad_size : 1)) return;
    memcheck_fail();
    w.last_bad = a;
    w.last_bad_size = size;
    bool shared = in_shared(w, a);
    if (!site_allows(site("mb", pc))) return;
    Rec r("memcheck");
    r.kv("what", bad == SAN_BAD_ALIGN ? "misaligned" : "oob").kv("space", shared ? "shared" : "global");
    r.kv("rw", write ? "write" : "read").num("size", size);
    /* a faulting instruction's own address, where the others are return addresses (pc_text steps back one) */
    if (bad == SAN_BAD_FAULT && pc) pc = (const char *)pc + 1;
    if (shared) r.hex("addr", a - (uintptr_t)w.smem);   /* a shared address is an offset in the block's window */
    else r.hex("addr", a);
    if (!shared && bad != SAN_BAD_ALIGN) {
        AllocRec *rec = nullptr;
        int how = lookup(w, a, size ? size : 1, &rec);
        if (how > 0 && rec) r.hex("abase", rec->base).num("asize", rec->size);
        if (how == 2) r.kv("freed", "1");
    }
    where(r, pc).emit();
}

namespace {

/* --leak-check full: the device allocations still live (of one device, or
   of all when dev < 0), as the Manual's "Leak Checking" lists them when
   the context is destroyed. */
void report_leaks(int dev) {
    if (!g_leak_check) return;
    std::shared_lock<std::shared_mutex> lk(g_alloc_mu);
    if (!g_live) return;
    for (auto &kv : *g_live) {
        if (dev >= 0 && kv.second->device != dev) continue;
        /* a device with a sticky error cannot free anything (every call
           fails): its context is lost, not leaked */
        if (sticky_error(kv.second->device) != cudaSuccess) continue;
        Rec r("leak");
        r.hex("addr", kv.second->base).num("size", kv.second->size).num("device", (unsigned)kv.second->device);
        std::string bt;
        for (void *f : kv.second->bt) {
            if (!bt.empty()) bt += ';';
            bt += pc_text(f);
        }
        r.kv("bt", bt).emit();
    }
}

void at_exit() {
    if (tool() == SAN_RACECHECK) flush_races();
    report_leaks(-1);
    unsigned long long more;
    {
        std::lock_guard<std::mutex> lk(g_site_mu);
        more = g_suppressed;
    }
    Rec("end").num("suppressed", more).num("blocks", g_n_blocks).num("accesses", g_n_access).num("shared", g_n_shared)
        .num("barriers", g_n_barriers).emit();
}

} /* namespace */

void san_device_reset(int device) {
    if (tool() == SAN_MEMCHECK) report_leaks(device);
}

} /* namespace cuemu */
