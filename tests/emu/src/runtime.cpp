/* runtime.cpp - the emulated CUDA runtime: devices and their profiles,
   errors, device memory, streams and events, copies, launches, counters.

   Semantics follow the CUDA Runtime API reference and its "API
   synchronization behavior" page:
   - device work (kernels, copies, memsets, library calls, event records, host
     functions) is queued and runs in issue order, but only when the program
     waits: a *Synchronize, a copy to host memory, a copy from pageable host
     memory, ... Host code that reads results without waiting sees stale
     data, as it may on a GPU;
   - device memory is mapped PROT_NONE except while device work runs, so the
     host cannot touch it, as on a GPU; a page after each allocation is never
     mapped, and freed memory stays unmapped for a while, so a kernel that
     runs past the end of an allocation or uses freed memory faults;
   - errors: every failing call records its error as the calling thread's
     last error (cudaGetLastError returns and clears it); a fault in device
     work (illegal address, assert, ...) is sticky: every later call that
     needs the device returns it, until the process ends.
   Device profiles come from GPUDL_EMU_DEVICE: "9.0:80G" (the default, an
   H100 SXM), "8.6:12G", "7.0:16G", a comma-separated list for several
   devices, or "none". GPUDL_EMU_DRIVER=none emulates a machine without
   the driver. */
#include "state.h"
#include "access.h"
#include "sanitizer.h"
#include <cuemu.h>
#include <chrono>
#include <link.h>
#include <algorithm>
#include <memory>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

namespace cuemu {

#include "errors.inc"

namespace {

thread_local cudaError_t t_last = cudaSuccess;
thread_local int t_device = 0;
thread_local bool t_in_exec = false;      /* this thread runs queued work: no runtime calls allowed */
thread_local bool t_library_work = false; /* ... and that work is a library call's (enqueue) */
std::atomic<int> g_exec_device{-1};
bool g_host_guard = true;
bool g_trace = false;   /* CUEMU_TRACE=1: each launch and library call to stderr */
std::vector<std::pair<uintptr_t, uintptr_t>> g_static_ranges;

const size_t kQuarantineEntries = 512;
const size_t kLargeAlloc = 256ull << 20;   /* above this an allocation is reserved, not filled */
const size_t kLargeFill = 1ull << 20;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
size_t page() {
    static size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

/* >>profiles: what each compute capability's reference card reports. */
struct ProfileRow {
    int major, minor, sms, threads_sm, blocks_sm;
    size_t optin, smem_sm;
    int clock_khz, mem_clock_khz, bus, l2;
    size_t mem;
    const char *name;
};
const ProfileRow kProfiles[] = {
    {7, 0, 80, 2048, 32, 98304, 98304, 1530000, 877000, 4096, 6291456, 16ull << 30, "Tesla V100-SXM2-16GB"},
    {7, 5, 40, 1024, 16, 65536, 65536, 1590000, 5001000, 256, 4194304, 16ull << 30, "Tesla T4"},
    {8, 0, 108, 2048, 32, 166912, 167936, 1410000, 1593000, 5120, 41943040, 80ull << 30, "NVIDIA A100-SXM4-80GB"},
    {8, 6, 80, 1536, 16, 101376, 102400, 1665000, 9501000, 384, 6291456, 12ull << 30, "NVIDIA GeForce RTX 3080 Ti"},
    {8, 9, 128, 1536, 24, 101376, 102400, 2520000, 10501000, 384, 75497472, 24ull << 30, "NVIDIA GeForce RTX 4090"},
    {9, 0, 132, 2048, 32, 232448, 233472, 1980000, 2619000, 5120, 52428800, 80ull << 30, "NVIDIA H100 80GB HBM3"},
    {10, 0, 148, 2048, 32, 232448, 233472, 1965000, 3996000, 8192, 132120576, 180ull << 30, "NVIDIA B200"},
    {12, 0, 170, 1536, 24, 101376, 102400, 2407000, 14001000, 512, 100663296, 32ull << 30, "NVIDIA GeForce RTX 5090"},
};

bool parse_mem(const char *s, size_t *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return false;
    double mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1024.0; end++; break;
    case 'M': case 'm': mul = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mul = 1024.0 * 1024 * 1024; end++; break;
    case 'T': case 't': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return false;
    *out = (size_t)(v * mul);
    return true;
}

/* "major.minor[:memory]" -> a profile; the nearest known row of the same
   major supplies what the spec does not say. */
bool parse_profile(const std::string &spec, Profile *p) {
    int major = 0, minor = 0;
    char tail[64] = "";
    if (sscanf(spec.c_str(), "%d.%d%63s", &major, &minor, tail) < 2 || major < 1) return false;
    const ProfileRow *best = &kProfiles[0];
    for (const ProfileRow &r : kProfiles)
        if (r.major < major || (r.major == major && r.minor <= minor)) best = &r;
    p->major = major;
    p->minor = minor;
    p->total_mem = best->mem;
    if (tail[0]) {
        if (tail[0] != ':' || !parse_mem(tail + 1, &p->total_mem)) return false;
    }
    p->sms = best->sms;
    p->max_threads_per_block = 1024;
    p->max_threads_per_sm = best->threads_sm;
    p->max_blocks_per_sm = best->blocks_sm;
    p->smem_per_block = 49152;
    p->smem_per_block_optin = best->optin;
    p->smem_per_sm = best->smem_sm;
    p->regs_per_block = 65536;
    p->regs_per_sm = 65536;
    p->clock_khz = best->clock_khz;
    p->mem_clock_khz = best->mem_clock_khz;
    p->bus_width_bits = best->bus;
    p->l2_bytes = best->l2;
    p->name = best->name;
    return true;
}

int collect_static(struct dl_phdr_info *info, size_t, void *) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W))
            g_static_ranges.push_back({info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
    }
    return 0;
}

/* >>memory mappings */
void protect(const Alloc &a, bool open) {
    if (!a.map || a.kind != MEM_DEVICE) return;
    size_t data_pages = a.map_len - page();   /* the last page is the guard */
    mprotect(a.map, data_pages, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

void set_open(State &S, bool open) {
    if (!g_host_guard || S.mem_open == open) return;
    for (auto &kv : S.allocs) protect(kv.second, open);
    S.mem_open = open;
}

/* A device allocation: whole pages, the data placed so that it ends where
   the guard page starts (256-byte aligned, as cudaMalloc promises). */
bool map_device(size_t size, Alloc *a) {
    size_t data = round_up(size ? size : 1, 256);
    size_t len = round_up(data, page()) + page();
    void *m = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return false;
    a->map = (char *)m;
    a->map_len = len;
    a->base = a->map + (len - page() - data);
    a->size = size;
    return true;
}

void unmap(Alloc &a) {
    if (a.map) munmap(a.map, a.map_len);
    a.map = nullptr;
}

const Alloc *find_alloc(State &S, const void *p) {
    auto it = S.allocs.upper_bound((uintptr_t)p);
    if (it == S.allocs.begin()) return nullptr;
    --it;
    const Alloc &a = it->second;
    uintptr_t u = (uintptr_t)p, b = (uintptr_t)a.base;
    size_t extent = a.kind == MEM_DEVICE ? (size_t)(a.map + a.map_len - a.base) : a.size;   /* include the padding */
    return u >= b && u < b + (extent ? extent : 1) ? &a : nullptr;
}

const Alloc *find_freed(State &S, const void *p) {
    for (const Alloc &a : S.quarantine)
        if ((uintptr_t)p >= (uintptr_t)a.map && (uintptr_t)p < (uintptr_t)a.map + a.map_len) return &a;
    return nullptr;
}

} /* namespace */

/* >>state */
State &state() {
    static State *s = new State();   /* never destroyed: device work may run during exit */
    return *s;
}

int64_t now_ns() {
    return (int64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void ensure_init() {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (S.initialised) return;
    S.initialised = true;
    const char *drv = getenv("GPUDL_EMU_DRIVER");
    if (drv && (!strcmp(drv, "none") || !strcmp(drv, "0"))) {
        S.no_driver = true;
        S.driver_version = 0;
    } else if (drv) {
        S.driver_version = atoi(drv);
    }
    const char *env = getenv("GPUDL_EMU_DEVICE");
    S.spec = env && *env ? env : "9.0:80G";
    if (S.spec != "none") {
        size_t start = 0;
        while (start <= S.spec.size()) {
            size_t comma = S.spec.find(',', start);
            std::string one = S.spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            Profile p;
            if (!parse_profile(one, &p)) {
                fprintf(stderr, "cuemu: GPUDL_EMU_DEVICE=%s: cannot read \"%s\" (want major.minor[:memory], e.g. 9.0:80G, "
                                "or none); emulating no device\n",
                        S.spec.c_str(), one.c_str());
                S.devs.clear();
                break;
            }
            if ((int)S.devs.size() == kMaxDevices) {
                fprintf(stderr, "cuemu: GPUDL_EMU_DEVICE=%s: at most %d devices; the rest are ignored\n", S.spec.c_str(),
                        kMaxDevices);
                break;
            }
            S.devs.emplace_back();
            S.devs.back().prof = p;
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        for (size_t i = 0; i < S.devs.size(); i++) {
            S.devs[i].legacy.device = (int)i;
            S.devs[i].pool.device = (int)i;
            S.devs[i].peer.assign(S.devs.size(), false);
            S.devs[i].pool.access.assign(S.devs.size(), cudaMemAccessFlagsProtNone);
            S.devs[i].pool.access[i] = cudaMemAccessFlagsProtReadWrite;
        }
    }
    const char *tr = getenv("CUEMU_TRACE");
    g_trace = tr && tr[0] == '1';
    const char *guard = getenv("CUEMU_HOST_GUARD");
    g_host_guard = !(guard && !strcmp(guard, "0"));
    bounds_init();   /* CUEMU_BOUNDS */
    dl_iterate_phdr(collect_static, nullptr);
    install_signal_handlers();
}

cudaError_t set_error(cudaError_t e) {
    if (e != cudaSuccess) t_last = e;
    return e;
}

void raise_sticky(int dev, cudaError_t e) {
    State &S = state();
    if (dev < 0 || dev >= (int)S.devs.size()) return;
    int expected = 0;
    S.devs[dev].sticky.compare_exchange_strong(expected, (int)e);
}

int executing_device() { return g_exec_device.load(); }

/* The emulator learns a kernel's static shared memory when it first runs
   (there is no compiled image to read it from): later launches, and
   cudaFuncGetAttributes, count it. */
void note_static_shared(const void *func, size_t bytes) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    S.funcs[func].seen_smem += bytes;
}

bool static_data(const void *p) {
    uintptr_t u = (uintptr_t)p;
    for (auto &r : g_static_ranges)
        if (u >= r.first && u < r.second) return true;
    return false;
}

/* >>devices (internal.h) */
int device_count() {
    ensure_init();
    State &S = state();
    return S.no_driver ? 0 : (int)S.devs.size();
}
int current_device() { return t_device; }
const Profile &profile(int dev) { return state().devs[dev].prof; }

cudaError_t sticky_error(int dev) {
    State &S = state();
    if (dev < 0) dev = t_device;
    if (dev >= (int)S.devs.size()) return cudaSuccess;
    return (cudaError_t)S.devs[dev].sticky.load();
}

void fault(cudaError_t err, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int dev = g_exec_device.load();
    fprintf(stderr, "cuemu: %s -> %s\n", msg, cudaGetErrorName(err));
    fflush(stderr);
    raise_sticky(dev < 0 ? t_device : dev, err);
}

namespace {

/* The checks every call that needs a device starts with. */
cudaError_t need_device() {
    ensure_init();
    State &S = state();
    if (t_in_exec) return cudaErrorNotPermitted;   /* a host function queued on a stream may not call CUDA */
    if (S.no_driver) return cudaErrorInsufficientDriver;
    if (S.driver_version && S.driver_version < CUDART_VERSION) return cudaErrorInsufficientDriver;
    if (S.devs.empty()) return cudaErrorNoDevice;
    cudaError_t st = sticky_error(t_device);
    return st;
}

#define CUEMU_NEED_DEVICE()                          \
    do {                                             \
        cudaError_t e_ = need_device();              \
        if (e_ != cudaSuccess) return set_error(e_); \
    } while (0)

Device &dev_of(int d) { return state().devs[d]; }

} /* namespace */

/* >>memory queries (internal.h) */
MemKind classify(const void *p, Region *out) {
    ensure_init();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    const Alloc *a = find_alloc(S, p);
    if (a) {
        if (out) *out = Region{a->kind, a->device, a->base, a->size};
        return a->kind;
    }
    a = find_freed(S, p);
    if (a) {
        if (out) *out = Region{MEM_FREED, a->device, a->base, a->size};
        return MEM_FREED;
    }
    if (out) *out = Region{MEM_UNKNOWN, -1, nullptr, 0};
    return MEM_UNKNOWN;
}

MemKind classify_in_signal(const void *p) {
    State &S = state();
    if (!S.mu.try_lock()) return MEM_UNKNOWN;
    MemKind k = MEM_UNKNOWN;
    const Alloc *a = find_alloc(S, p);
    if (a) k = a->kind;
    else if (find_freed(S, p)) k = MEM_FREED;
    S.mu.unlock();
    return k;
}

bool device_range(int dev, const void *p, size_t bytes, std::string *why) {
    if (bytes == 0) return true;
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    char buf[256];
    const Alloc *a = find_alloc(S, p);
    if (!a) {
        const Alloc *f = find_freed(S, p);
        if (why) {
            if (f) snprintf(buf, sizeof buf, "0x%lx is inside a %zu-byte allocation that was already freed", (unsigned long)(uintptr_t)p, f->size);
            else if ((uintptr_t)p < 65536) snprintf(buf, sizeof buf, "0x%lx is a null or near-null pointer", (unsigned long)(uintptr_t)p);
            else snprintf(buf, sizeof buf, "0x%lx is host memory or was never allocated (not from cudaMalloc, cudaMallocHost or cudaMallocManaged)", (unsigned long)(uintptr_t)p);
            *why = buf;
        }
        return false;
    }
    /* Programming Guide, Stream Ordered Memory Allocator, "Device
       Accessibility for Multi-GPU Support": a pool's allocations do not
       follow cudaDeviceEnablePeerAccess; cudaMemPoolSetAccess decides. */
    /* only device memory of another device is asked (host and managed memory have no device: a->device < 0) */
    auto reachable = [&] {
        return dev >= 0 && dev < (int)S.devs.size() && a->device >= 0 && a->device < (int)S.devs.size() &&
               (a->pool ? a->pool->access[dev] != cudaMemAccessFlagsProtNone : (bool)S.devs[dev].peer[a->device]);
    };
    if (a->kind == MEM_DEVICE && a->device != dev && !reachable()) {
        if (why) {
            snprintf(buf, sizeof buf, "0x%lx is memory of device %d, and device %d has no %s to it", (unsigned long)(uintptr_t)p, a->device, dev, a->pool ? "pool access (cudaMemPoolSetAccess)" : "peer access");
            *why = buf;
        }
        return false;
    }
    uintptr_t end = (uintptr_t)a->base + a->size, u = (uintptr_t)p;
    if (u + bytes > end) {
        if (why) {
            if (u >= end)
                snprintf(buf, sizeof buf, "0x%lx is %zu bytes past the end of a %zu-byte allocation at 0x%lx", (unsigned long)u,
                         (size_t)(u - end), a->size, (unsigned long)(uintptr_t)a->base);
            else
                snprintf(buf, sizeof buf, "[0x%lx, +%zu) runs %zu bytes past the end of a %zu-byte allocation at 0x%lx",
                         (unsigned long)u, bytes, (size_t)(u + bytes - end), a->size, (unsigned long)(uintptr_t)a->base);
            *why = buf;
        }
        return false;
    }
    /* The library emulations do not tell reads from writes: every range
       they may touch counts as written, so initcheck checks kernels' reads
       only. */
    if (t_library_work) san_written(p, bytes);
    return true;
}

namespace {

cudaError_t alloc_device(int dev, size_t size, bool internal, void **out) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    Device &D = dev_of(dev);
    size_t charge = round_up(size ? size : 1, 512);
    if (charge > D.prof.total_mem - D.used) return cudaErrorMemoryAllocation;
    Alloc a{};
    if (!map_device(size, &a)) return cudaErrorMemoryAllocation;
    a.kind = MEM_DEVICE;
    a.device = dev;
    a.internal = internal;
    a.accounted = charge;
    /* Fresh device memory holds garbage: all one bits (NaN as floats). A
       large allocation is only reserved (MAP_NORESERVE, pages committed when
       touched, as a GPU's 20 GB cudaMalloc does not take 20 GB of host RAM):
       its first and last kLargeFill bytes get the garbage, the rest reads as
       zero bytes, which is one of the values garbage may have. */
    mprotect(a.map, a.map_len - page(), PROT_READ | PROT_WRITE);
    size_t fill = round_up(size ? size : 1, 256);
    if (fill <= kLargeAlloc) {
        memset(a.base, 0xff, fill);
    } else {
        memset(a.base, 0xff, kLargeFill);
        memset(a.base + fill - kLargeFill, 0xff, kLargeFill);
    }
    protect(a, S.mem_open || !g_host_guard);
    D.used += charge;
    S.allocs[(uintptr_t)a.base] = a;
    *out = a.base;
    return cudaSuccess;
}

void quarantine(State &S, Alloc a) {
    if (a.map) {
        mprotect(a.map, a.map_len, PROT_NONE);
        madvise(a.map, a.map_len, MADV_DONTNEED);
    }
    a.kind = MEM_FREED;
    S.quarantine.push_back(a);
    while (S.quarantine.size() > kQuarantineEntries) {
        unmap(S.quarantine.front());
        S.quarantine.pop_front();
    }
}

} /* namespace */

void device_fill(void *p, const void *init, size_t bytes) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.allocs.find((uintptr_t)p);
    if (it == S.allocs.end()) return;
    const Alloc &a = it->second;
    if (!S.mem_open && g_host_guard) mprotect(a.map, a.map_len - page(), PROT_READ | PROT_WRITE);
    memcpy(p, init, bytes);
    protect(a, S.mem_open || !g_host_guard);
}

void *device_copy_of(int dev, const void *init, size_t bytes) {
    void *p = nullptr;
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (alloc_device(dev, bytes, true, &p) != cudaSuccess) {
        fprintf(stderr, "cuemu: no device memory for a __device__ variable's copy (%zu bytes)\n", bytes);
        abort();
    }
    device_fill(p, init, bytes);
    return p;
}

void *internal_alloc(int dev, size_t bytes) {
    void *p = nullptr;
    return alloc_device(dev, bytes, true, &p) == cudaSuccess ? p : nullptr;
}

void internal_free(void *p) {
    if (!p) return;
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.allocs.find((uintptr_t)p);
    if (it == S.allocs.end()) return;
    Alloc a = it->second;
    S.allocs.erase(it);
    S.devs[a.device].used -= a.accounted;
    quarantine(S, a);
}

/* >>queue */
bool op_done(uint64_t seq) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    return seq == 0 || !S.pending.count(seq);
}

namespace {
bool is_legacy(State &S, const Stream *s) { return s == &S.devs[s->device].legacy; }
}
bool is_legacy_stream(const Stream *s) { return is_legacy(state(), s); }

/* A stream's order, plus the legacy default stream's rule: work on it waits
   for all earlier work on the device's blocking streams, and work on a
   blocking stream waits for earlier work on the legacy stream. Streams
   created with cudaStreamNonBlocking take part in neither. */
uint64_t push_op(int device, Stream *s, const char *name, std::function<void()> fn, uint64_t extra_dep, bool always) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    uint64_t seq = S.next_seq++;
    Op op{seq, device, name, std::move(fn), {}, always};
    auto dep = [&](uint64_t d) {
        if (d && S.pending.count(d)) op.deps.push_back(d);
    };
    dep(extra_dep);
    if (s) {
        dep(s->last_seq);
        if (is_legacy(S, s)) {
            for (Stream *o : S.streams)
                if (o->device == device && !(o->flags & cudaStreamNonBlocking)) dep(o->last_seq);
        } else if (!(s->flags & cudaStreamNonBlocking)) {
            dep(S.devs[device].legacy.last_seq);
        }
        s->last_seq = seq;
    }
    S.pending.emplace(seq, std::move(op));
    return seq;
}

namespace {
/* seq and the queued work it depends on, in issue order (which every
   dependency respects). */
std::vector<uint64_t> closure(State &S, uint64_t seq) {
    std::vector<uint64_t> out, stack{seq};
    std::unordered_set<uint64_t> seen;
    while (!stack.empty()) {
        uint64_t x = stack.back();
        stack.pop_back();
        auto it = S.pending.find(x);
        if (it == S.pending.end() || !seen.insert(x).second) continue;
        out.push_back(x);
        for (uint64_t d : it->second.deps) stack.push_back(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}
} /* namespace */

void run_until(uint64_t seq) {
    State &S = state();
    std::lock_guard<std::mutex> ex(S.exec_mu);
    std::vector<uint64_t> todo;
    {
        std::lock_guard<std::recursive_mutex> lk(S.mu);
        if (seq == ~0ull)
            for (auto &kv : S.pending) todo.push_back(kv.first);
        else
            todo = closure(S, seq);
    }
    for (uint64_t x : todo) {
        Op op;
        {
            std::lock_guard<std::recursive_mutex> lk(S.mu);
            auto it = S.pending.find(x);
            if (it == S.pending.end()) continue;
            op = std::move(it->second);
            set_open(S, true);
        }
        if (op.always || !sticky_error(op.device)) {
            g_exec_device = op.device;
            t_in_exec = true;
            DeviceFpScope fp(false);   /* device work sees the device's FP state, not this host thread's */
            op.fn();
            t_in_exec = false;
            g_exec_device = -1;
        }
        op.fn = nullptr;   /* releases what the work held (kernel arguments) before the next unit runs */
        std::lock_guard<std::recursive_mutex> lk(S.mu);
        S.pending.erase(x);
    }
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    set_open(S, false);
    for (auto it = S.stream_graveyard.begin(); it != S.stream_graveyard.end();) {
        if (!S.pending.count((*it)->last_seq)) {
            delete *it;
            it = S.stream_graveyard.erase(it);
        } else {
            ++it;
        }
    }
}

namespace {
/* Programming Guide, "Per-thread Default Stream": cudaStreamPerThread is
   one stream per host thread and device; it synchronises with the legacy
   default stream as a blocking stream does and with no other stream. */
Stream *per_thread_stream(State &S) {
    thread_local Stream *mine[kMaxDevices] = {};
    Stream *&s = mine[t_device];
    if (!s) {
        s = new Stream{t_device, 0, 0, 0, nullptr, {}};   /* lives as long as the program: work may be queued on it at exit */
        S.streams.insert(s);
    }
    return s;
}
} /* namespace */

Stream *resolve_stream(cudaStream_t s, int *dev, cudaError_t *err) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    *err = cudaSuccess;
    if (s == cudaStreamPerThread) {
        *dev = t_device;
        return per_thread_stream(S);
    }
    if (s == nullptr || s == cudaStreamLegacy) {
        *dev = t_device;
        return &S.devs[t_device].legacy;
    }
    Stream *st = (Stream *)s;
    if (!S.streams.count(st)) {
        *err = cudaErrorInvalidResourceHandle;
        return nullptr;
    }
    *dev = st->device;
    return st;
}

cudaError_t stream_device(cudaStream_t s, int *dev) {
    cudaError_t e;
    resolve_stream(s, dev, &e);
    return e;
}

cudaError_t submit(int device, Stream *st, const char *name, cudaGraphNodeType type, std::function<void()> fn, uint64_t *seq,
                   GNode **node, uint64_t extra_dep, bool always) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (seq) *seq = 0;
    if (node) *node = nullptr;
    cudaError_t e = capture_guard(st);
    if (e) return e;
    if (st->cap) {
        GNode *n = capture_add(st, type, name, std::move(fn));
        if (node) *node = n;
        return cudaSuccess;
    }
    uint64_t q = push_op(device, st, name, std::move(fn), extra_dep, always);
    if (seq) *seq = q;
    return cudaSuccess;
}

cudaError_t enqueue(cudaStream_t s, const char *name, std::function<void()> fn) {
    cudaError_t e = need_device();
    if (e) return e;
    int dev;
    Stream *st = resolve_stream(s, &dev, &e);
    if (!st) return e;
    if ((e = sticky_error(dev))) return e;
    GNode *node = nullptr;
    e = submit(dev, st, name, cudaGraphNodeTypeKernel, [fn = std::move(fn)] {
        t_library_work = true;
        fn();
        t_library_work = false;
    }, nullptr, &node);
    if (e) return e;
    if (node) return cudaSuccess;   /* captured: part of a graph launch's work, not a call of its own */
    state().counters.library_calls++;
    if (g_trace) fprintf(stderr, "cuemu trace: library %s\n", name);
    return cudaSuccess;
}

void count_library_api_call() { state().counters.library_api_calls++; }

namespace { thread_local int t_api_depth = 0; }
ApiCall::ApiCall() {
    if (t_api_depth++ == 0 && !t_library_work) state().counters.runtime_api_calls++;
}
ApiCall::~ApiCall() { t_api_depth--; }

/* >>launch (cuemu/kernel.h) */
namespace {

bool arch_matches(const char *archs_flags, const Profile &p, std::string *list) {
    if (!archs_flags || !*archs_flags) return true;
    /* "sm_80,compute_90|ftz|...": the targets, then nvcc-emu's code-generation flags */
    std::string targets(archs_flags, strcspn(archs_flags, "|"));
    if (targets.empty()) return true;
    *list = targets;
    int cc = p.major * 10 + p.minor;
    const char *s = targets.c_str();
    while (*s) {
        const char *e = strchr(s, ',');
        std::string one(s, e ? (size_t)(e - s) : strlen(s));
        s = e ? e + 1 : s + strlen(s);
        bool ptx = one.rfind("compute_", 0) == 0, cubin = one.rfind("sm_", 0) == 0;
        if (!ptx && !cubin) continue;
        std::string num = one.substr(ptx ? 8 : 3);
        char variant = !num.empty() && (num.back() == 'a' || num.back() == 'f') ? num.back() : 0;
        if (variant) num.pop_back();
        int v = atoi(num.c_str());
        int major = v / 10, minor = v % 10;
        if (v >= 100) { major = v / 10; minor = v % 10; }
        if (variant == 'a') {
            if (major == p.major && minor == p.minor) return true;   /* arch-specific: that one device only */
        } else if (variant == 'f') {
            if (major == p.major && minor <= p.minor) return true;   /* family: same major */
        } else if (ptx) {
            if (v <= cc) return true;                                /* PTX is JIT-compiled forward */
        } else if (major == p.major && minor <= p.minor) {
            return true;                                             /* a cubin: same major, minor up */
        }
    }
    return false;
}

} /* namespace */

/* A kernel node being made (cudaGraphAddKernelNode, ...SetParams): the
   launch the registered launcher makes becomes this grid instead of work. */
thread_local std::shared_ptr<GridOp> *t_node_sink = nullptr;

/* Device code: symbols resolve to the device's copies while it runs
   (registry.cpp). Every fiber of this host thread runs the same grid. */
struct DeviceCall {
    void (*run)(void *);
    void *args;
    void (*destroy)(void *);
    int device;
};
void device_call_run(void *p) {
    DeviceCall *c = (DeviceCall *)p;
    t_code_device = c->device;
    c->run(c->args);
}
void device_call_destroy(void *p) {
    DeviceCall *c = (DeviceCall *)p;
    if (c->destroy) c->destroy(c->args);
    delete c;
}

void run_device_grid(GridOp &op) {
    run_grid(op.g);
    t_code_device = -1;   /* this host thread took part; it runs host code again */
}

/* >>residency: how many blocks of a kernel one multiprocessor holds at
   once (CUDA C++ Programming Guide, "Hardware Multithreading": "the number
   of blocks and warps that can reside and be processed together on the
   multiprocessor ... depends on the amount of registers and shared memory
   used by the kernel and the amount of registers and shared memory
   available on the multiprocessor", and the maximum number of resident
   blocks and threads per multiprocessor of the compute capability's table).
   Threads count in whole warps; registers at 32 a thread (what
   cudaFuncGetAttributes reports as numRegs); shared memory is the kernel's
   static __shared__ bytes plus the launch's dynamic bytes plus the
   reservedSharedMemPerBlock the device reports (1 KiB). */
int blocks_per_sm(const Profile &p, const FuncAttr *fa, uint64_t threads, size_t dyn_smem) {
    if (!threads || threads > (uint64_t)p.max_threads_per_block) return 0;
    uint64_t warps = (threads + 31) / 32;
    uint64_t n = (uint64_t)p.max_blocks_per_sm;
    uint64_t by_threads = (uint64_t)p.max_threads_per_sm / (warps * 32);
    uint64_t by_regs = (uint64_t)p.regs_per_sm / (warps * 32 * 32);
    size_t per_block = (fa ? fa->static_smem() : 0) + dyn_smem + 1024;
    uint64_t by_smem = p.smem_per_sm / per_block;
    if (by_threads < n) n = by_threads;
    if (by_regs < n) n = by_regs;
    if (by_smem < n) n = by_smem;
    return (int)n;
}

cudaError_t launch_checked(const LaunchSite &site, const void *func, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                           void (*run)(void *), void *args, void (*destroy)(void *), const PtrArg *ptrs, int nptrs,
                           int cooperative) {
    auto drop = [&](cudaError_t e) {
        destroy(args);
        return set_error(e);
    };
    cudaError_t e = need_device();
    if (e) return drop(e);
    int dev;
    Stream *st = t_node_sink ? &state().devs[t_device].legacy : resolve_stream(stream, &dev, &e);
    if (!st) return drop(e);
    if (t_node_sink) dev = t_device;
    if (dev != t_device) return drop(cudaErrorInvalidResourceHandle);   /* a stream of another device */
    State &S = state();
    const Profile &p = S.devs[dev].prof;
    uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (!block.x || !block.y || !block.z || !grid.x || !grid.y || !grid.z || block.x > 1024 || block.y > 1024 ||
        block.z > 64 || threads > (uint64_t)p.max_threads_per_block || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > 65535)
        return drop(cudaErrorInvalidConfiguration);
    {
        std::lock_guard<std::recursive_mutex> lk(S.mu);
        auto it = S.funcs.find(func);
        const FuncAttr *fa = it != S.funcs.end() ? &it->second : nullptr;
        /* Programming Guide, "Launch Bounds": maxThreadsPerBlock is the most
           threads per block the kernel is ever launched with; the compiled
           kernel cannot run more, and the launch fails for lack of
           resources ("too many resources requested for launch"). */
        if (fa && fa->max_threads > 0 && threads > (uint64_t)fa->max_threads) {
            static std::atomic<int> said{0};
            if (said++ < 3)
                fprintf(stderr, "cuemu: kernel %s: %llu threads per block, above its __launch_bounds__ of %d\n",
                        fa->name ? fa->name : site.kernel ? site.kernel : "?", (unsigned long long)threads, fa->max_threads);
            return drop(cudaErrorLaunchOutOfResources);
        }
        /* Programming Guide, "Shared Memory" (compute capability tables):
           dynamic shared memory up to the kernel's opt-in
           (cudaFuncAttributeMaxDynamicSharedMemorySize), 48 KiB in all
           without one; static plus dynamic up to the device's opt-in limit
           with one. The static size is the compiled image's, known before
           the first launch. */
        bool optin = fa && fa->max_dynamic_smem >= 0;
        size_t sts = fa ? fa->static_smem() : 0;
        size_t limit = optin ? (size_t)fa->max_dynamic_smem : p.smem_per_block - (sts < p.smem_per_block ? sts : p.smem_per_block);
        if (smem > limit || sts + smem > (optin ? p.smem_per_block_optin : p.smem_per_block)) return drop(cudaErrorInvalidValue);
    }
    std::string list;
    if (!arch_matches(site.archs, p, &list)) {
        static std::atomic<int> said{0};
        if (said++ < 3)
            fprintf(stderr, "cuemu: kernel %s was built for %s; device %d has compute capability %d.%d: no kernel image\n",
                    site.kernel ? site.kernel : "?", list.c_str(), dev, p.major, p.minor);
        return drop(cudaErrorNoKernelImageForDevice);
    }
    if (cooperative) {
        /* Runtime API, cudaLaunchCooperativeKernel: "The total number of
           blocks launched cannot exceed the maximum number of blocks per
           multiprocessor as returned by
           cudaOccupancyMaxActiveBlocksPerMultiprocessor (or
           cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) times the
           number of multiprocessors", else cudaErrorCooperativeLaunchTooLarge:
           every block must be resident at once (static and dynamic shared
           memory, threads and registers all count). */
        int per_sm;
        {
            std::lock_guard<std::recursive_mutex> lk(S.mu);
            auto it = S.funcs.find(func);
            per_sm = blocks_per_sm(p, it != S.funcs.end() ? &it->second : nullptr, threads, smem);
        }
        if ((uint64_t)grid.x * grid.y * grid.z > (uint64_t)p.sms * (uint64_t)per_sm)
            return drop(cudaErrorCooperativeLaunchTooLarge);
    }
    symbols_ready(dev);
    auto op = std::make_shared<GridOp>();
    DeviceCall *call = new DeviceCall{run, args, destroy, dev};
    op->g = Grid{site, func, grid, block, smem, dev, &device_call_run, call, &device_call_destroy,
                 std::vector<PtrArg>(ptrs, ptrs + nptrs)};
    op->g.cooperative = cooperative;
    if (t_node_sink) {
        *t_node_sink = op;
        return cudaSuccess;
    }
    GNode *node = nullptr;
    e = submit(dev, st, "kernel", cudaGraphNodeTypeKernel, [op] { run_device_grid(*op); }, nullptr, &node);
    if (e) return set_error(e);
    if (node) {
        set_kernel_node(node, op, func, grid, block, smem);
        return cudaSuccess;
    }
    S.counters.kernel_launches++;
    if (g_trace) fprintf(stderr, "cuemu trace: kernel %s <<<(%u,%u,%u), (%u,%u,%u), %zu>>>\n", site.kernel ? site.kernel : "?",
                         grid.x, grid.y, grid.z, block.x, block.y, block.z, smem);
    return cudaSuccess;
}

/* A kernel node's grid from cudaKernelNodeParams: the registered launcher
   copies the arguments, as the graph API does ("kernelParams ... copied"). */
cudaError_t make_kernel_grid(const cudaKernelNodeParams *kp, std::shared_ptr<GridOp> *out) {
    if (!kp || !kp->func) return cudaErrorInvalidDeviceFunction;
    if (kp->extra) return cudaErrorInvalidValue;   /* the "extra" form is not emulated */
    cudaError_t (*launcher)(const void *, dim3, dim3, void **, size_t, cudaStream_t, int) = nullptr;
    {
        State &S = state();
        std::lock_guard<std::recursive_mutex> lk(S.mu);
        auto it = S.funcs.find(kp->func);
        if (it != S.funcs.end()) launcher = it->second.launcher;
    }
    if (!launcher) return cudaErrorInvalidDeviceFunction;
    std::shared_ptr<GridOp> op;
    std::shared_ptr<GridOp> *saved = t_node_sink;
    t_node_sink = &op;
    cudaError_t e = launcher(kp->func, kp->gridDim, kp->blockDim, kp->kernelParams, kp->sharedMemBytes, nullptr, 0);
    t_node_sink = saved;
    if (e) return e;
    if (!op) return cudaErrorInvalidValue;
    *out = op;
    return cudaSuccess;
}

cudaError_t launch(const LaunchSite &site, const void *func, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   void (*run)(void *), void *args, void (*destroy)(void *), const PtrArg *ptrs, int nptrs, int cooperative) {
    CUEMU_API_CALL();   /* k<<<...>>>(...) is a cudaLaunchKernel call */
    return launch_checked(site, func, grid, block, smem, stream, run, args, destroy, ptrs, nptrs, cooperative);
}

} /* namespace cuemu */

using namespace cuemu;

/* >>errors */
extern "C" cudaError_t cudaGetLastError(void) { CUEMU_API_CALL();
    ensure_init();
    cudaError_t e = t_last;
    t_last = cudaSuccess;
    if (e == cudaSuccess && !state().devs.empty()) e = sticky_error(t_device);   /* sticky: cannot be cleared */
    return e;
}

extern "C" cudaError_t cudaPeekAtLastError(void) { CUEMU_API_CALL();
    ensure_init();
    cudaError_t e = t_last;
    if (e == cudaSuccess && !state().devs.empty()) e = sticky_error(t_device);
    return e;
}

extern "C" const char *cudaGetErrorName(cudaError_t error) { CUEMU_API_CALL();
    for (auto &e : kErrors)
        if (e.code == (int)error) return e.name;
    return "unrecognized error code";
}

extern "C" const char *cudaGetErrorString(cudaError_t error) { CUEMU_API_CALL();
    for (auto &e : kErrors)
        if (e.code == (int)error) return e.desc ? e.desc : e.name;
    return "unrecognized error code";
}

/* >>version */
extern "C" cudaError_t cudaDriverGetVersion(int *v) { CUEMU_API_CALL();
    ensure_init();
    if (!v) return set_error(cudaErrorInvalidValue);
    *v = state().driver_version;
    return cudaSuccess;
}

extern "C" cudaError_t cudaRuntimeGetVersion(int *v) { CUEMU_API_CALL();
    if (!v) return set_error(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

/* >>device */
extern "C" cudaError_t cudaGetDeviceCount(int *count) { CUEMU_API_CALL();
    ensure_init();
    if (!count) return set_error(cudaErrorInvalidValue);
    *count = 0;
    State &S = state();
    if (S.no_driver || (S.driver_version && S.driver_version < CUDART_VERSION)) return set_error(cudaErrorInsufficientDriver);
    if (S.devs.empty()) return set_error(cudaErrorNoDevice);
    *count = (int)S.devs.size();
    return cudaSuccess;
}

namespace {
cudaError_t check_ordinal(int device) {
    ensure_init();
    State &S = state();
    if (S.no_driver) return cudaErrorInsufficientDriver;
    if (S.devs.empty()) return cudaErrorNoDevice;
    if (device < 0 || device >= (int)S.devs.size()) return cudaErrorInvalidDevice;
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(device);
    if (e) return set_error(e);
    if (!prop) return set_error(cudaErrorInvalidValue);
    const Profile &p = state().devs[device].prof;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "%s (emulated by tests/emu)", p.name);
    for (int i = 0; i < 16; i++) prop->uuid.bytes[i] = (char)(0x40 + device * 16 + i);
    prop->totalGlobalMem = p.total_mem;
    prop->sharedMemPerBlock = p.smem_per_block;
    prop->regsPerBlock = p.regs_per_block;
    prop->warpSize = 32;
    prop->memPitch = 2147483647;
    prop->maxThreadsPerBlock = p.max_threads_per_block;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 65536;
    prop->major = p.major;
    prop->minor = p.minor;
    prop->textureAlignment = 512;
    prop->texturePitchAlignment = 32;
    /* the layered / cubemap / surface limits, as cudaDeviceGetAttribute gives them */
    prop->maxTexture1DLayered[0] = prop->maxTexture2DLayered[0] = prop->maxTexture2DLayered[1] = 32768;
    prop->maxTexture1DLayered[1] = prop->maxTexture2DLayered[2] = 2048;
    prop->maxTextureCubemap = prop->maxTextureCubemapLayered[0] = 32768;
    prop->maxTextureCubemapLayered[1] = 2046;
    prop->maxSurface1D = prop->maxSurface1DLayered[0] = prop->maxSurface2DLayered[0] = prop->maxSurface2DLayered[1] = 32768;
    prop->maxSurface1DLayered[1] = prop->maxSurface2DLayered[2] = 2048;
    prop->maxSurface2D[0] = 131072;
    prop->maxSurface2D[1] = 65536;
    prop->maxSurface3D[0] = prop->maxSurface3D[1] = prop->maxSurface3D[2] = 16384;
    prop->maxSurfaceCubemap = prop->maxSurfaceCubemapLayered[0] = 32768;
    prop->maxSurfaceCubemapLayered[1] = 2046;
    prop->surfaceAlignment = 512;
    prop->multiProcessorCount = p.sms;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->ECCEnabled = 1;
    prop->pciBusID = 0x18 + device;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->memoryBusWidth = p.bus_width_bits;
    prop->l2CacheSize = p.l2_bytes;
    prop->persistingL2CacheMaxSize = p.l2_bytes / 2;
    prop->maxThreadsPerMultiProcessor = p.max_threads_per_sm;
    prop->streamPrioritiesSupported = 1;
    prop->globalL1CacheSupported = 1;
    prop->localL1CacheSupported = 1;
    prop->sharedMemPerMultiprocessor = p.smem_per_sm;
    prop->regsPerMultiprocessor = p.regs_per_sm;
    prop->managedMemory = 1;
    prop->concurrentManagedAccess = 1;
    prop->computePreemptionSupported = 1;
    prop->cooperativeLaunch = 1;
    prop->sharedMemPerBlockOptin = p.smem_per_block_optin;
    prop->maxBlocksPerMultiProcessor = p.max_blocks_per_sm;
    prop->reservedSharedMemPerBlock = 1024;
    prop->hostRegisterSupported = 1;
    prop->memoryPoolsSupported = 1;
    prop->clusterLaunch = p.major >= 9;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(device);
    if (e) return set_error(e);
    if (!value) return set_error(cudaErrorInvalidValue);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, device);
    const Profile &pr = state().devs[device].prof;
    int v;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: v = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: v = 32; break;
    case cudaDevAttrMaxPitch: v = (int)p.memPitch; break;
    case cudaDevAttrMaxRegistersPerBlock: v = p.regsPerBlock; break;
    case cudaDevAttrClockRate: v = pr.clock_khz; break;
    case cudaDevAttrTextureAlignment: v = (int)p.textureAlignment; break;
    case cudaDevAttrGpuOverlap: v = 1; break;
    case cudaDevAttrMultiProcessorCount: v = p.multiProcessorCount; break;
    case cudaDevAttrKernelExecTimeout: v = 0; break;
    case cudaDevAttrIntegrated: v = 0; break;
    case cudaDevAttrCanMapHostMemory: v = 1; break;
    case cudaDevAttrComputeMode: v = 0; break;
    case cudaDevAttrConcurrentKernels: v = 1; break;
    case cudaDevAttrEccEnabled: v = 1; break;
    case cudaDevAttrPciBusId: v = p.pciBusID; break;
    case cudaDevAttrPciDeviceId: v = 0; break;
    case cudaDevAttrTccDriver: v = 0; break;
    case cudaDevAttrMemoryClockRate: v = pr.mem_clock_khz; break;
    case cudaDevAttrGlobalMemoryBusWidth: v = pr.bus_width_bits; break;
    case cudaDevAttrL2CacheSize: v = pr.l2_bytes; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: v = pr.max_threads_per_sm; break;
    case cudaDevAttrAsyncEngineCount: v = 2; break;
    case cudaDevAttrUnifiedAddressing: v = 1; break;
    case cudaDevAttrComputeCapabilityMajor: v = pr.major; break;
    case cudaDevAttrComputeCapabilityMinor: v = pr.minor; break;
    case cudaDevAttrStreamPrioritiesSupported: v = 1; break;
    case cudaDevAttrGlobalL1CacheSupported: v = 1; break;
    case cudaDevAttrLocalL1CacheSupported: v = 1; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = (int)pr.smem_per_sm; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: v = pr.regs_per_sm; break;
    case cudaDevAttrManagedMemory: v = 1; break;
    case cudaDevAttrIsMultiGpuBoard: v = 0; break;
    case cudaDevAttrPageableMemoryAccess: v = 0; break;
    case cudaDevAttrConcurrentManagedAccess: v = 1; break;
    case cudaDevAttrComputePreemptionSupported: v = 1; break;
    case cudaDevAttrCooperativeLaunch: v = 1; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = (int)pr.smem_per_block_optin; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: v = pr.max_blocks_per_sm; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: v = 1024; break;
    case cudaDevAttrHostRegisterSupported: v = 1; break;
    case cudaDevAttrMemoryPoolsSupported: v = 1; break;
    case cudaDevAttrClusterLaunch: v = pr.major >= 9; break;
    case cudaDevAttrMaxPersistingL2CacheSize: v = pr.l2_bytes / 2; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: v = 134213632; break;
    case cudaDevAttrMaxTexture1DWidth: v = 131072; break;
    case cudaDevAttrMaxTexture2DWidth: case cudaDevAttrMaxTexture2DHeight: v = 131072; break;
    case cudaDevAttrMaxTexture3DWidth: case cudaDevAttrMaxTexture3DHeight: case cudaDevAttrMaxTexture3DDepth: v = 16384; break;
    /* layered, cubemap and surface limits of compute capability 5.0 and up
       (Programming Guide, "Features and Technical Specifications"; the
       arrays in texture.cpp hold to the texture ones) */
    case cudaDevAttrMaxTexture1DLayeredWidth: case cudaDevAttrMaxTexture2DLayeredWidth:
    case cudaDevAttrMaxTexture2DLayeredHeight: case cudaDevAttrMaxTextureCubemapWidth:
    case cudaDevAttrMaxTextureCubemapLayeredWidth: case cudaDevAttrMaxSurface1DWidth: case cudaDevAttrMaxSurface1DLayeredWidth:
    case cudaDevAttrMaxSurface2DLayeredWidth: case cudaDevAttrMaxSurface2DLayeredHeight: case cudaDevAttrMaxSurfaceCubemapWidth:
    case cudaDevAttrMaxSurfaceCubemapLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxTexture1DLayeredLayers: case cudaDevAttrMaxTexture2DLayeredLayers:
    case cudaDevAttrMaxSurface1DLayeredLayers: case cudaDevAttrMaxSurface2DLayeredLayers: v = 2048; break;
    case cudaDevAttrMaxTextureCubemapLayeredLayers: case cudaDevAttrMaxSurfaceCubemapLayeredLayers: v = 2046; break;
    case cudaDevAttrMaxSurface2DWidth: v = 131072; break;
    case cudaDevAttrMaxSurface2DHeight: v = 65536; break;
    case cudaDevAttrMaxSurface3DWidth: case cudaDevAttrMaxSurface3DHeight: case cudaDevAttrMaxSurface3DDepth: v = 16384; break;
    case cudaDevAttrSurfaceAlignment: v = 512; break;
    case cudaDevAttrTexturePitchAlignment: v = 32; break;
    case cudaDevAttrPciDomainId: v = 0; break;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: v = pr.major == 8 && pr.minor > 0 ? 64 : 2; break;
    default: {
        /* an attribute the emulator does not model: 0 (absent / not supported), if CUDA 13 has it */
        static const int known[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 106, 108, 109, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 138, 139, 140, 141, 142, 143, 144, 145, 147, 148};
        for (int k : known)
            if (k == (int)attr) { *value = 0; return cudaSuccess; }
        return set_error(cudaErrorInvalidValue);
    }
    }
    *value = v;
    return cudaSuccess;
}

extern "C" cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(device);
    return e ? set_error(e) : cudaSuccess;
}

extern "C" cudaError_t cudaSetDevice(int device) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(device);
    if (e) return set_error(e);
    t_device = device;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGetDevice(int *device) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(0);
    if (e) return set_error(e);
    if (!device) return set_error(cudaErrorInvalidValue);
    *device = t_device;
    return cudaSuccess;
}

extern "C" cudaError_t cudaSetDeviceFlags(unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (flags & ~(unsigned)cudaDeviceMask) return set_error(cudaErrorInvalidValue);
    dev_of(t_device).flags = flags;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGetDeviceFlags(unsigned int *flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!flags) return set_error(cudaErrorInvalidValue);
    *flags = dev_of(t_device).flags | cudaDeviceMapHost;
    return cudaSuccess;
}

namespace {
/* Runtime API, cudaMemPoolAttrReleaseThreshold: "When more than the release
   threshold bytes of memory are held by the memory pool, the allocator will
   try to release memory back to the OS on the next call to stream, event or
   context synchronize." */
void pools_release() {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    for (Device &d : S.devs) {
        MemPool &p = d.pool;
        if (p.reserved > p.release_threshold) p.reserved = p.release_threshold > p.used ? p.release_threshold : p.used;
    }
}
} /* namespace */

extern "C" cudaError_t cudaDeviceSynchronize(void) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    cudaError_t e = capture_sync_check(nullptr, t_device);
    if (e) return set_error(e);
    State &S = state();
    S.counters.host_waits++;
    run_until(~0ull);
    pools_release();
    return set_error(sticky_error(t_device));
}

extern "C" cudaError_t cudaDeviceReset(void) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(t_device);
    if (e) return set_error(e);
    State &S = state();
    if (!sticky_error(t_device)) run_until(~0ull);
    symbols_reset(t_device);   /* the module's variables start again from their initialisers */
    san_device_reset(t_device);   /* memcheck's leak check: what is still allocated when the context goes */
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    for (auto it = S.allocs.begin(); it != S.allocs.end();) {
        /* the program's allocations go; the emulator's own (symbol copies, library workspaces) stay */
        if ((it->second.kind == MEM_DEVICE || it->second.kind == MEM_MANAGED) && it->second.device == t_device &&
            !it->second.internal) {
            if (it->second.kind == MEM_DEVICE) S.devs[t_device].used -= it->second.accounted;
            san_free(it->second.base);
            bounds_remove(it->second.base, it->second.size);
            quarantine(S, it->second);
            it = S.allocs.erase(it);
        } else {
            ++it;
        }
    }
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if ((int)limit < 0 || (int)limit >= 16) return set_error(cudaErrorUnsupportedLimit);
    dev_of(t_device).limits[limit] = value;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!pValue) return set_error(cudaErrorInvalidValue);
    if ((int)limit < 0 || (int)limit >= 16) return set_error(cudaErrorUnsupportedLimit);
    size_t v = dev_of(t_device).limits[limit];
    if (!v) v = limit == cudaLimitStackSize ? 1024 : limit == cudaLimitPrintfFifoSize ? 1048576 : limit == cudaLimitMallocHeapSize ? 8388608 : 0;
    *pValue = v;
    return cudaSuccess;
}

// CUDA Runtime API, Device Management: cudaCtxResetPersistingL2Cache "resets
// all persisting lines in cache to normal status; takes effect on function
// return" (Programming Guide, L2 Cache Set-Aside: "Reset all persisting L2
// cache lines to normal"). The emulated device models no cache, so there is
// nothing to reset beyond needing a device.
extern "C" cudaError_t cudaCtxResetPersistingL2Cache(void) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *c) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!c) return set_error(cudaErrorInvalidValue);
    *c = cudaFuncCachePreferNone;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(device);
    if (e) return set_error(e);
    if (!id || len <= 0) return set_error(cudaErrorInvalidValue);
    snprintf(id, (size_t)len, "0000:%02x:00.0", 0x18 + device);
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) { CUEMU_API_CALL();
    cudaError_t e = check_ordinal(device);
    if (!e) e = check_ordinal(peer);
    if (e) return set_error(e);
    if (!can) return set_error(cudaErrorInvalidValue);
    *can = device != peer;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (flags) return set_error(cudaErrorInvalidValue);
    if (check_ordinal(peer) || peer == t_device) return set_error(cudaErrorInvalidDevice);
    std::vector<bool> &pe = dev_of(t_device).peer;
    if (pe[peer]) return set_error(cudaErrorPeerAccessAlreadyEnabled);
    pe[peer] = true;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceDisablePeerAccess(int peer) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (check_ordinal(peer)) return set_error(cudaErrorInvalidDevice);
    std::vector<bool> &pe = dev_of(t_device).peer;
    if (!pe[peer]) return set_error(cudaErrorPeerAccessNotEnabled);
    pe[peer] = false;
    return cudaSuccess;
}

/* >>memory */
extern "C" cudaError_t cudaMalloc(void **devPtr, size_t size) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (cudaError_t ce = capture_unsafe_call()) return set_error(ce);
    if (!devPtr) return set_error(cudaErrorInvalidValue);
    state().counters.mallocs++;
    if (size == 0) {
        *devPtr = nullptr;
        return cudaSuccess;
    }
    cudaError_t e = alloc_device(t_device, size, false, devPtr);
    if (e) {
        *devPtr = nullptr;
    } else {
        san_alloc(*devPtr, size, t_device);
        bounds_add(*devPtr, size);
    }
    return set_error(e);
}

extern "C" cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!devPtr || !pitch) return set_error(cudaErrorInvalidValue);
    *pitch = round_up(width ? width : 1, 512);
    return cudaMalloc(devPtr, *pitch * height);
}

namespace {
cudaError_t alloc_host(void **ptr, size_t size, MemKind kind, unsigned flags) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    size_t len = round_up(size ? size : 1, page());
    void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
    Alloc a{};
    a.map = (char *)m;
    a.map_len = len;
    a.base = (char *)m;
    a.size = size;
    a.kind = kind;
    a.device = kind == MEM_MANAGED ? t_device : -1;
    a.flags = flags;
    S.allocs[(uintptr_t)a.base] = a;
    *ptr = a.base;
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaMallocHost(void **ptr, size_t size) { CUEMU_API_CALL(); return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

extern "C" cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (cudaError_t ce = capture_unsafe_call()) return set_error(ce);
    if (!pHost || (flags & ~0x7u)) return set_error(cudaErrorInvalidValue);
    state().counters.host_allocs++;
    cudaError_t e = alloc_host(pHost, size, MEM_PINNED, flags);
    if (e) *pHost = nullptr;
    return set_error(e);
}

extern "C" cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (cudaError_t ce = capture_unsafe_call()) return set_error(ce);
    if (!devPtr || size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)) return set_error(cudaErrorInvalidValue);
    state().counters.mallocs++;
    cudaError_t e = alloc_host(devPtr, size, MEM_MANAGED, flags);
    if (e) {
        *devPtr = nullptr;
    } else {
        san_alloc(*devPtr, size, t_device);
        bounds_add(*devPtr, size);
    }
    return set_error(e);
}

extern "C" cudaError_t cudaFree(void *devPtr) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!devPtr) return cudaSuccess;
    if (cudaError_t ce = capture_unsafe_call()) return set_error(ce);
    State &S = state();
    run_until(~0ull);   /* cudaFree waits for the device to be idle */
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.allocs.find((uintptr_t)devPtr);
    if (it == S.allocs.end() || it->second.internal || it->second.free_queued ||
        (it->second.kind != MEM_DEVICE && it->second.kind != MEM_MANAGED))
        return set_error(cudaErrorInvalidValue);
    Alloc a = it->second;
    S.allocs.erase(it);
    if (a.kind == MEM_DEVICE) S.devs[a.device].used -= a.accounted;
    if (a.pool) a.pool->used -= a.size;
    S.counters.frees++;
    san_free(a.base);
    bounds_remove(a.base, a.size);
    quarantine(S, a);
    return cudaSuccess;
}

extern "C" cudaError_t cudaFreeHost(void *ptr) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!ptr) return cudaSuccess;
    if (cudaError_t ce = capture_unsafe_call()) return set_error(ce);
    State &S = state();
    run_until(~0ull);
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.allocs.find((uintptr_t)ptr);
    if (it == S.allocs.end() || it->second.kind != MEM_PINNED || !it->second.map) return set_error(cudaErrorInvalidValue);
    Alloc a = it->second;
    S.allocs.erase(it);
    S.counters.host_frees++;
    unmap(a);
    return cudaSuccess;
}

extern "C" cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!ptr || !size || (flags & ~0xfu)) return set_error(cudaErrorInvalidValue);
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    for (size_t off = 0; off < size; off += page())
        if (find_alloc(S, (char *)ptr + off)) return set_error(cudaErrorHostMemoryAlreadyRegistered);
    if (find_alloc(S, (char *)ptr + size - 1)) return set_error(cudaErrorHostMemoryAlreadyRegistered);
    Alloc a{};
    a.base = (char *)ptr;
    a.size = size;
    a.kind = MEM_PINNED;
    a.device = -1;
    a.flags = flags;
    S.allocs[(uintptr_t)ptr] = a;
    return cudaSuccess;
}

extern "C" cudaError_t cudaHostUnregister(void *ptr) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.allocs.find((uintptr_t)ptr);
    if (it == S.allocs.end() || it->second.kind != MEM_PINNED || it->second.map) return set_error(cudaErrorHostMemoryNotRegistered);
    S.allocs.erase(it);
    return cudaSuccess;
}

extern "C" cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    Region r;
    if (!pDevice || flags || classify(pHost, &r) != MEM_PINNED) return set_error(cudaErrorInvalidValue);
    *pDevice = pHost;   /* unified addressing: the same address */
    return cudaSuccess;
}

extern "C" cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    const Alloc *a = find_alloc(S, pHost);
    if (!pFlags || !a || a->kind != MEM_PINNED) return set_error(cudaErrorInvalidValue);
    *pFlags = a->flags;
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemGetInfo(size_t *freeb, size_t *total) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    const Device &D = S.devs[t_device];
    if (freeb) *freeb = D.prof.total_mem - D.used;
    if (total) *total = D.prof.total_mem;
    return cudaSuccess;
}

extern "C" cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!attr) return set_error(cudaErrorInvalidValue);
    Region r;
    MemKind k = classify(ptr, &r);
    memset(attr, 0, sizeof *attr);
    attr->device = -2;
    switch (k) {
    case MEM_DEVICE:
        attr->type = cudaMemoryTypeDevice;
        attr->device = r.device;
        attr->devicePointer = (void *)ptr;
        break;
    case MEM_PINNED:
        attr->type = cudaMemoryTypeHost;
        attr->device = t_device;
        attr->devicePointer = (void *)ptr;
        attr->hostPointer = (void *)ptr;
        break;
    case MEM_MANAGED:
        attr->type = cudaMemoryTypeManaged;
        attr->device = r.device;
        attr->devicePointer = (void *)ptr;
        attr->hostPointer = (void *)ptr;
        break;
    case MEM_FREED:
        return set_error(cudaErrorInvalidValue);
    default:
        attr->type = cudaMemoryTypeUnregistered;
        attr->hostPointer = (void *)ptr;
        break;
    }
    return cudaSuccess;
}

/* >>copies */
namespace {

/* (a __device__ variable's address, from cudaGetSymbolAddress, is device
   memory: its device copy) */
enum Side { SIDE_HOST, SIDE_PINNED, SIDE_DEVICE };

/* Where p lives, and whether [p, p + n) is a valid range of it. */
cudaError_t side_of(const void *p, size_t n, Side *side, int *dev) {
    Region r;
    MemKind k = classify(p, &r);
    *dev = -1;
    switch (k) {
    case MEM_DEVICE:
        *side = SIDE_DEVICE;
        *dev = r.device;
        if ((uintptr_t)p + n > (uintptr_t)r.base + r.size) return cudaErrorInvalidValue;
        return cudaSuccess;
    case MEM_PINNED:
    case MEM_MANAGED:
        *side = SIDE_PINNED;
        *dev = r.device;
        if (r.size && (uintptr_t)p + n > (uintptr_t)r.base + r.size) return cudaErrorInvalidValue;
        return cudaSuccess;
    case MEM_FREED: return cudaErrorInvalidValue;
    default:
        *side = SIDE_HOST;
        return p ? cudaSuccess : cudaErrorInvalidValue;
    }
}

bool is_dev(Side s) { return s == SIDE_DEVICE; }

/* One copy, n bytes, rows of `width` bytes `height` times (2-D) with
   pitches; kind as given; async or not. */
cudaError_t copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async) {
    CUEMU_NEED_DEVICE();
    State &S = state();
    if ((int)kind < 0 || (int)kind > cudaMemcpyDefault) return set_error(cudaErrorInvalidMemcpyDirection);
    if (height > 1 && (dpitch < width || spitch < width)) return set_error(cudaErrorInvalidPitchValue);
    S.counters.memcpy_calls++;
    if (width == 0 || height == 0) return cudaSuccess;
    size_t dext = dpitch * (height - 1) + width, sext = spitch * (height - 1) + width;
    Side ds, ss;
    int ddev, sdev;
    cudaError_t e = side_of(dst, dext, &ds, &ddev);
    if (!e) e = side_of(src, sext, &ss, &sdev);
    if (e) return set_error(e);
    /* The kind must agree with the memory: a device side is device memory
       (or pinned / managed, which the device can reach); a host side is not
       device memory. */
    bool want_dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool want_src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind != cudaMemcpyDefault) {
        if ((want_dst_dev && ds == SIDE_HOST) || (!want_dst_dev && ds == SIDE_DEVICE)) return set_error(cudaErrorInvalidValue);
        if ((want_src_dev && ss == SIDE_HOST) || (!want_src_dev && ss == SIDE_DEVICE)) return set_error(cudaErrorInvalidValue);
    }
    bool to_host = !is_dev(ds), from_host = !is_dev(ss);
    if (!async && (e = capture_unsafe_call())) return set_error(e);
    int dev;
    Stream *st = resolve_stream(stream, &dev, &e);
    if (!st) return set_error(e);
    if ((e = capture_guard(st))) return set_error(e);
    bool capturing = st->cap != nullptr;
    size_t bytes = width * height;
    if (from_host && !to_host) S.counters.h2d_bytes += bytes;
    else if (!from_host && to_host) S.counters.d2h_bytes += bytes;
    else if (!from_host && !to_host) S.counters.d2d_bytes += bytes;
    const char *srcp = (const char *)src;
    std::shared_ptr<std::vector<char>> staged;
    bool waited = false;
    if (ss == SIDE_HOST && !to_host && !capturing) {
        /* From pageable memory: a synchronous copy first waits for the stream
           (the docs: "a stream sync is performed before the copy is
           initiated"); either form stages the data now, so the caller may
           reuse its buffer when the call returns. */
        if (!async) {
            S.counters.host_waits++;   /* one wait: for the stream, then for the copy (below) */
            waited = true;
            run_until(st->last_seq);
            if ((e = sticky_error(dev))) return set_error(e);
        }
        staged = std::make_shared<std::vector<char>>(sext);
        memcpy(staged->data(), src, sext);
        srcp = staged->data();
    }
    /* A captured copy reads its source when the graph runs. */
    char *d = (char *)dst;
    bool dev_dst = !to_host;
    uint64_t seq = 0;
    e = submit(dev, st, "memcpy", cudaGraphNodeTypeMemcpy, [=] {
        (void)staged;
        for (size_t r = 0; r < height; r++) {
            memcpy(d + r * dpitch, srcp + r * spitch, width);
            if (dev_dst) san_written(d + r * dpitch, width);
        }
    }, &seq);
    if (e) return set_error(e);
    /* The host waits for copies into host memory (always, if synchronous;
       for pageable memory even when asynchronous), and for synchronous
       copies from host memory, pinned or pageable, or between host
       buffers. (Runtime API, "API synchronization behavior", Memcpy: for a
       synchronous copy from pageable memory "a stream sync is performed
       before the copy is initiated" and the call returns once the buffer is
       staged; the DMA "may not have completed", but nothing can observe
       that: programs that read the destination from another stream right
       after the call, as NVIDIA's StreamPriorities sample does, see the data
       on GPUs. So the copy is complete, for every stream, when it returns.) */
    bool wait = (to_host && (!async || ds == SIDE_HOST)) || (!async && from_host) || (from_host && to_host);
    if (wait && seq) {
        if (!waited) S.counters.host_waits++;
        run_until(seq);
        if ((e = sticky_error(dev))) return set_error(e);
    }
    return cudaSuccess;
}

cudaError_t fill(void *p, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream, bool async) {
    CUEMU_NEED_DEVICE();
    State &S = state();
    S.counters.memset_calls++;
    if (width == 0 || height == 0) return cudaSuccess;
    if (height > 1 && pitch < width) return set_error(cudaErrorInvalidValue);
    size_t ext = pitch * (height - 1) + width;
    Side side;
    int d;
    cudaError_t e = side_of(p, ext, &side, &d);
    if (e || side == SIDE_HOST) return set_error(cudaErrorInvalidValue);
    if (!async && (e = capture_unsafe_call())) return set_error(e);
    int dev;
    Stream *st = resolve_stream(stream, &dev, &e);
    if (!st) return set_error(e);
    if ((e = capture_guard(st))) return set_error(e);
    char *base = (char *)p;
    uint64_t seq = 0;
    e = submit(dev, st, "memset", cudaGraphNodeTypeMemset, [=] {
        for (size_t r = 0; r < height; r++) {
            memset(base + r * pitch, value, width);
            san_written(base + r * pitch, width);
        }
    }, &seq);
    if (e) return set_error(e);
    if (side == SIDE_PINNED && !async && seq) run_until(seq);   /* synchronous for pinned host memory */
    return cudaSuccess;
}

} /* namespace */

extern "C" cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return copy(dst, count, src, count, count, 1, kind, nullptr, false);
}
extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) { CUEMU_API_CALL();
    return copy(dst, count, src, count, count, 1, kind, stream, true);
}
extern "C" cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                                   enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return copy(dst, dpitch, src, spitch, width, height, kind, nullptr, false);
}
extern "C" cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                        size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) { CUEMU_API_CALL();
    return copy(dst, dpitch, src, spitch, width, height, kind, stream, true);
}
extern "C" cudaError_t cudaMemcpyPeer(void *dst, int, const void *src, int, size_t count) { CUEMU_API_CALL();
    return copy(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, nullptr, false);
}
extern "C" cudaError_t cudaMemcpyPeerAsync(void *dst, int, const void *src, int, size_t count, cudaStream_t stream) { CUEMU_API_CALL();
    return copy(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, stream, true);
}
extern "C" cudaError_t cudaMemset(void *devPtr, int value, size_t count) { CUEMU_API_CALL(); return fill(devPtr, count, value, count, 1, nullptr, false); }
extern "C" cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) { CUEMU_API_CALL();
    return fill(devPtr, count, value, count, 1, stream, true);
}
extern "C" cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height) { CUEMU_API_CALL();
    return fill(devPtr, pitch, value, width, height, nullptr, false);
}
extern "C" cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) { CUEMU_API_CALL();
    return fill(devPtr, pitch, value, width, height, stream, true);
}

/* >>symbols (Runtime API, "Memory Management": cudaMemcpyToSymbol, ...):
   a symbol is a registered __device__ / __constant__ variable (registry.cpp);
   any other address is cudaErrorInvalidSymbol; offset + count past the
   variable is cudaErrorInvalidValue. The copies reach the current device's
   copy of the variable, in stream order like other copies. */
namespace {
/* The symbol's device copy on the current device, at offset; errors as the API's. */
cudaError_t symbol_target(const void *symbol, size_t offset, size_t count, char **out) {
    const SymbolInfo *si = symbol_find(symbol);
    if (!si) return cudaErrorInvalidSymbol;
    if (offset > si->size || count > si->size - offset) return cudaErrorInvalidValue;
    *out = (char *)symbol_copy_on(si, t_device) + offset;
    return cudaSuccess;
}

cudaError_t symbol_copy(void *dst, const void *src, size_t count, size_t offset, bool to_symbol, cudaMemcpyKind kind,
                        cudaStream_t stream, bool async) {
    CUEMU_NEED_DEVICE();
    char *target;
    cudaError_t e = symbol_target(to_symbol ? dst : src, offset, count, &target);
    if (e) return set_error(e);
    if (to_symbol ? (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
                  : (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault))
        return set_error(cudaErrorInvalidMemcpyDirection);
    if (!count) return cudaSuccess;
    /* the other side: host memory (HostToDevice / DeviceToHost) or device memory (DeviceToDevice) */
    cudaMemcpyKind k = kind;
    if (k == cudaMemcpyDefault) {
        Region r;
        MemKind mk = classify(to_symbol ? src : dst, &r);
        k = mk == MEM_DEVICE ? cudaMemcpyDeviceToDevice : to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    }
    if (to_symbol) return copy(target, count, src, count, count, 1, k, stream, async);
    return copy(dst, count, target, count, count, 1, k, stream, async);
}
} /* namespace */

extern "C" cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return symbol_copy((void *)symbol, src, count, offset, true, kind, nullptr, false);
}
extern "C" cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return symbol_copy(dst, symbol, count, offset, false, kind, nullptr, false);
}
extern "C" cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                              enum cudaMemcpyKind kind, cudaStream_t stream) { CUEMU_API_CALL();
    return symbol_copy((void *)symbol, src, count, offset, true, kind, stream, true);
}
extern "C" cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind, cudaStream_t stream) { CUEMU_API_CALL();
    return symbol_copy(dst, symbol, count, offset, false, kind, stream, true);
}
extern "C" cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!devPtr) return set_error(cudaErrorInvalidValue);
    char *target;
    cudaError_t e = symbol_target(symbol, 0, 0, &target);
    if (e) return set_error(e);
    *devPtr = target;
    return cudaSuccess;
}
extern "C" cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!size) return set_error(cudaErrorInvalidValue);
    const SymbolInfo *si = symbol_find(symbol);
    if (!si) return set_error(cudaErrorInvalidSymbol);
    *size = si->size;
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, struct cudaMemLocation, unsigned int flags,
                                           cudaStream_t stream) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    Region r;
    if (flags || classify(devPtr, &r) != MEM_MANAGED || (uintptr_t)devPtr + count > (uintptr_t)r.base + r.size)
        return set_error(cudaErrorInvalidValue);
    int dev;
    cudaError_t e = stream_device(stream, &dev);
    return set_error(e);
}

/* Stream-ordered allocation (Runtime API, cudaMallocAsync / cudaFreeAsync;
   Programming Guide "Stream Ordered Memory Allocator"): the memory may be
   used by work after the allocation in its stream (other streams once an
   event or a synchronisation orders them after it), and is released when
   the free is reached in the stream: work that runs after that uses freed
   memory and faults. Work queued before the cudaMallocAsync call cannot
   hold the pointer, and queued work runs in issue order, so the allocation
   itself is made at the call. Allocation in a stream capture (graph memory
   nodes) is not emulated: cudaErrorStreamCaptureUnsupported. */
namespace {
/* The stream of a stream-ordered allocation or free; while it captures,
   the call adds a graph memory node instead (Programming Guide, "Graph
   Memory Nodes": stream capture of cudaMallocAsync / cudaFreeAsync). */
cudaError_t async_stream(cudaStream_t hStream, Stream **st, int *dev) {
    cudaError_t e;
    *st = resolve_stream(hStream, dev, &e);
    if (!*st) return e;
    if ((e = capture_guard(*st))) return e;
    return cudaSuccess;
}
} /* namespace */

/* Device memory for a graph memory allocation node (graph.cpp): the
   program's memory, made without cudaMalloc's stream-capture rules (a
   captured cudaMallocAsync adds such a node). */
cudaError_t cuemu::graph_alloc(int dev, size_t size, void **out) {
    cudaError_t e = alloc_device(dev, size, false, out);
    if (e) return e;
    state().counters.mallocs++;
    san_alloc(*out, size, dev);
    bounds_add(*out, size);
    return cudaSuccess;
}

namespace {
/* The pool a handle names (null: not a pool). */
MemPool *pool_of(cudaMemPool_t h) {
    State &S = state();
    for (Device &d : S.devs)
        if ((cudaMemPool_t)&d.pool == h) return &d.pool;
    return nullptr;
}
/* cudaMallocAsync and cudaMallocFromPoolAsync: memory from pool (null: the
   stream's device's current pool), usable in stream order. */
cudaError_t malloc_async(void **devPtr, size_t size, MemPool *pool, cudaStream_t hStream) {
    CUEMU_NEED_DEVICE();
    int dev;
    Stream *st;
    if (!devPtr) return set_error(cudaErrorInvalidValue);
    cudaError_t e = async_stream(hStream, &st, &dev);
    if (e) return set_error(e);
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (st->cap) {
        if (size == 0) return set_error(cudaErrorInvalidValue);
        if ((e = capture_mem_alloc(st, pool ? pool->device : dev, size, devPtr))) {
            *devPtr = nullptr;
            return set_error(e);
        }
        return cudaSuccess;
    }
    if (!pool) pool = S.devs[dev].cur_pool ? S.devs[dev].cur_pool : &S.devs[dev].pool;
    S.counters.mallocs++;
    if (size == 0) {
        *devPtr = nullptr;
        return cudaSuccess;
    }
    e = alloc_device(pool->device, size, false, devPtr);
    if (e) {
        *devPtr = nullptr;
        return set_error(e);
    }
    auto it = S.allocs.find((uintptr_t)*devPtr);
    if (it != S.allocs.end()) it->second.pool = pool;
    pool->used += size;
    if (pool->used > pool->used_high) pool->used_high = pool->used;
    if (pool->used > pool->reserved) pool->reserved = pool->used;
    if (pool->reserved > pool->reserved_high) pool->reserved_high = pool->reserved;
    san_alloc(*devPtr, size, pool->device);
    bounds_add(*devPtr, size);
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) { CUEMU_API_CALL();
    return malloc_async(devPtr, size, nullptr, hStream);
}

/* Runtime API, cudaMallocFromPoolAsync: "Allocates memory from a specified
   pool with stream ordered semantics". */
extern "C" cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    MemPool *pool;
    {
        std::lock_guard<std::recursive_mutex> lk(state().mu);
        pool = pool_of(memPool);
    }
    if (!pool) return set_error(cudaErrorInvalidValue);
    return malloc_async(ptr, size, pool, stream);
}

/* >>memory pools: Runtime API "Stream Ordered Memory Allocator" and
   cudaMemPoolSetAttribute / cudaMemPoolGetAttribute. What the pool holds is
   counted in bytes asked for (a GPU reserves in larger granules); freed
   memory stays reserved until cudaMemPoolTrimTo releases it. */
extern "C" cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!memPool) return set_error(cudaErrorInvalidValue);
    if (device < 0 || device >= device_count()) return set_error(cudaErrorInvalidDevice);
    *memPool = (cudaMemPool_t)&state().devs[device].pool;
    return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!memPool) return set_error(cudaErrorInvalidValue);
    if (device < 0 || device >= device_count()) return set_error(cudaErrorInvalidDevice);
    Device &d = state().devs[device];
    *memPool = (cudaMemPool_t)(d.cur_pool ? d.cur_pool : &d.pool);
    return cudaSuccess;
}
/* Runtime API cudaMemPoolSetAccess / cudaMemPoolGetAccess and the
   Programming Guide, Stream Ordered Memory Allocator, "Device Accessibility
   for Multi-GPU Support": allocations are accessible from the pool's own
   device, which "cannot be revoked"; other devices must be peer capable
   (cudaDeviceCanAccessPeer), else cudaErrorInvalidDevice. Locations are
   devices; the flags ProtNone, ProtRead or ProtReadWrite. The whole list
   is checked before any of it applies. (A read-only mapping is recorded
   but writes through it are not caught.) */
extern "C" cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList, size_t count) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    MemPool *p = pool_of(memPool);
    if (!p || (count && !descList)) return set_error(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        const cudaMemAccessDesc &d = descList[i];
        if (d.location.type != cudaMemLocationTypeDevice) return set_error(cudaErrorInvalidValue);
        if (d.flags != cudaMemAccessFlagsProtNone && d.flags != cudaMemAccessFlagsProtRead && d.flags != cudaMemAccessFlagsProtReadWrite)
            return set_error(cudaErrorInvalidValue);
        if (d.location.id < 0 || d.location.id >= device_count()) return set_error(cudaErrorInvalidDevice);
        if (d.location.id == p->device && d.flags != cudaMemAccessFlagsProtReadWrite) return set_error(cudaErrorInvalidValue);
        /* (every two distinct emulated devices are peer capable: cudaDeviceCanAccessPeer above) */
    }
    for (size_t i = 0; i < count; i++) p->access[(size_t)descList[i].location.id] = descList[i].flags;
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool, struct cudaMemLocation *location) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    MemPool *p = pool_of(memPool);
    if (!p || !flags || !location || location->type != cudaMemLocationTypeDevice) return set_error(cudaErrorInvalidValue);
    if (location->id < 0 || location->id >= device_count()) return set_error(cudaErrorInvalidDevice);
    *flags = (enum cudaMemAccessFlags)p->access[(size_t)location->id];
    return cudaSuccess;
}

/* "The pool must be local to the specified device" */
extern "C" cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (device < 0 || device >= device_count()) return set_error(cudaErrorInvalidDevice);
    MemPool *p = pool_of(memPool);
    if (!p || p->device != device) return set_error(cudaErrorInvalidValue);
    state().devs[device].cur_pool = p;
    return cudaSuccess;
}
/* "Releases memory back to the OS until the pool contains fewer than
   minBytesToKeep reserved bytes, or there is no more memory that the
   allocator can safely release" (memory in use stays). */
extern "C" cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    MemPool *p = pool_of(memPool);
    if (!p) return set_error(cudaErrorInvalidValue);
    if (p->reserved > minBytesToKeep) p->reserved = minBytesToKeep > p->used ? minBytesToKeep : p->used;
    return cudaSuccess;
}
/* The attributes' types: the reuse flags are int, the rest cuuint64_t; the
   current counts are read-only and the high-water marks may only be reset
   to 0 ("It is illegal to set this attribute to a non-zero value"). */
extern "C" cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    MemPool *p = pool_of(memPool);
    if (!p || !value) return set_error(cudaErrorInvalidValue);
    uint64_t v64 = 0;
    int vi = 0;
    if (attr >= cudaMemPoolAttrReleaseThreshold) memcpy(&v64, value, sizeof v64);
    else memcpy(&vi, value, sizeof vi);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: p->reuse_follow_events = vi != 0; return cudaSuccess;
    case cudaMemPoolReuseAllowOpportunistic: p->reuse_opportunistic = vi != 0; return cudaSuccess;
    case cudaMemPoolReuseAllowInternalDependencies: p->reuse_internal = vi != 0; return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold: p->release_threshold = v64; return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
        if (v64) return set_error(cudaErrorInvalidValue);
        p->reserved_high = p->reserved;
        return cudaSuccess;
    case cudaMemPoolAttrUsedMemHigh:
        if (v64) return set_error(cudaErrorInvalidValue);
        p->used_high = p->used;
        return cudaSuccess;
    default: return set_error(cudaErrorInvalidValue);
    }
}
extern "C" cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    MemPool *p = pool_of(memPool);
    if (!p || !value) return set_error(cudaErrorInvalidValue);
    int vi = 0;
    uint64_t v64 = 0;
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: vi = p->reuse_follow_events; break;
    case cudaMemPoolReuseAllowOpportunistic: vi = p->reuse_opportunistic; break;
    case cudaMemPoolReuseAllowInternalDependencies: vi = p->reuse_internal; break;
    case cudaMemPoolAttrReleaseThreshold: v64 = p->release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: v64 = p->reserved; break;
    case cudaMemPoolAttrReservedMemHigh: v64 = p->reserved_high; break;
    case cudaMemPoolAttrUsedMemCurrent: v64 = p->used; break;
    case cudaMemPoolAttrUsedMemHigh: v64 = p->used_high; break;
    default: return set_error(cudaErrorInvalidValue);
    }
    if (attr >= cudaMemPoolAttrReleaseThreshold) memcpy(value, &v64, sizeof v64);
    else memcpy(value, &vi, sizeof vi);
    return cudaSuccess;
}

extern "C" cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    Stream *st;
    cudaError_t e = async_stream(hStream, &st, &dev);
    if (e) return set_error(e);
    if (!devPtr) return cudaSuccess;
    if (st->cap) return (e = capture_mem_free(st, devPtr)) ? set_error(e) : cudaSuccess;
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.allocs.find((uintptr_t)devPtr);
    if (it == S.allocs.end() || it->second.kind != MEM_DEVICE || it->second.internal || it->second.free_queued)
        return set_error(cudaErrorInvalidValue);
    it->second.free_queued = true;   /* a second free is an error now, not when the first is reached */
    S.counters.frees++;
    push_op(dev, st, "free", [devPtr] {
        State &S2 = state();
        std::lock_guard<std::recursive_mutex> lk2(S2.mu);
        auto it2 = S2.allocs.find((uintptr_t)devPtr);
        if (it2 == S2.allocs.end()) return;
        Alloc a = it2->second;
        S2.allocs.erase(it2);
        S2.devs[a.device].used -= a.accounted;
        if (a.pool) a.pool->used -= a.size;   /* back in the pool: still reserved (cudaMemPoolTrimTo) */
        san_free(a.base);
        bounds_remove(a.base, a.size);
        quarantine(S2, a);
    });
    return cudaSuccess;
}

/* >>streams */
extern "C" cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!pStream || (flags & ~1u)) return set_error(cudaErrorInvalidValue);
    Stream *s = new Stream{t_device, flags, priority < -5 ? -5 : priority > 0 ? 0 : priority, 0, nullptr, {}};
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    S.streams.insert(s);
    *pStream = (cudaStream_t)s;
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) { CUEMU_API_CALL();
    return cudaStreamCreateWithPriority(pStream, flags, 0);
}
extern "C" cudaError_t cudaStreamCreate(cudaStream_t *pStream) { CUEMU_API_CALL(); return cudaStreamCreateWithPriority(pStream, 0, 0); }

extern "C" cudaError_t cudaStreamDestroy(cudaStream_t stream) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    Stream *s = (Stream *)stream;
    if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread || !S.streams.count(s))
        return set_error(cudaErrorInvalidResourceHandle);
    S.streams.erase(s);
    S.stream_graveyard.push_back(s);   /* its queued work still completes */
    return cudaSuccess;
}

/* >>3-D memory (Runtime API, cudaMalloc3D, cudaMemcpy3D, cudaMemset3D):
   linear memory described by cudaPitchedPtr, and CUDA arrays (srcArray /
   dstArray: 1-D, 2-D, layered and cubemap arrays, see texture.cpp). "The extent
   field defines the dimensions of the transferred area in elements ... If
   no CUDA array is participating in the copy then the extents are defined
   in elements of unsigned char"; positions likewise (x in bytes). Slice z
   of a pitched pointer starts at z * pitch * ysize. */
extern "C" cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!pitchedDevPtr) return set_error(cudaErrorInvalidValue);
    size_t pitch = 0;
    void *p = nullptr;
    cudaError_t e = cudaMallocPitch(&p, &pitch, extent.width, extent.height * extent.depth);
    if (e) return e;
    *pitchedDevPtr = cudaPitchedPtr{p, pitch, extent.width, extent.height};
    return cudaSuccess;
}

namespace {
cudaError_t copy3d(const cudaMemcpy3DParms *p, cudaStream_t stream, bool async) {
    CUEMU_NEED_DEVICE();
    if (!p) return set_error(cudaErrorInvalidValue);
    /* "Either srcArray or srcPtr can be specified ... Passing more than one
       non-zero source or destination will cause cudaMemcpy3D() to return an
       error." With a CUDA array "the extent is defined in terms of that
       array's elements", its position too; a pitched pointer's position
       stays in bytes. An array side becomes the pitched view of its layers
       (layers of height rows; height 1 for a 1-D array). */
    if ((p->srcArray && p->srcPtr.ptr) || (p->dstArray && p->dstPtr.ptr)) return set_error(cudaErrorInvalidValue);
    cudaMemcpy3DParms q = *p;
    if (p->srcArray || p->dstArray) {
        ArrayView sv{}, dv{};
        if ((p->srcArray && !array_view(p->srcArray, &sv)) || (p->dstArray && !array_view(p->dstArray, &dv)))
            return set_error(cudaErrorInvalidValue);
        if (p->srcArray && p->dstArray && sv.elem != dv.elem) return set_error(cudaErrorInvalidValue);
        size_t elem = p->srcArray ? sv.elem : dv.elem;
        const cudaExtent &e = p->extent;
        for (int side = 0; side < 2; side++) {
            const ArrayView &v = side ? dv : sv;
            if (!(side ? p->dstArray : p->srcArray)) continue;
            cudaPos &pos = side ? q.dstPos : q.srcPos;
            if (pos.x + e.width > v.width || pos.y + e.height > v.height || pos.z + e.depth > v.layers)
                return set_error(cudaErrorInvalidValue);
            (side ? q.dstPtr : q.srcPtr) = cudaPitchedPtr{v.data, v.pitch, v.width * v.elem, v.height};
            pos.x *= elem;
        }
        q.extent.width *= elem;
        q.srcArray = q.dstArray = nullptr;
        p = &q;
    }
    const cudaExtent &x = p->extent;
    if (!p->srcPtr.ptr || !p->dstPtr.ptr) return set_error(cudaErrorInvalidValue);
    if (x.width == 0 || x.height == 0 || x.depth == 0) return cudaSuccess;
    /* a slice's rows must fit in the slice, or slices would overlap */
    if (x.depth > 1 && (p->srcPos.y + x.height > p->srcPtr.ysize || p->dstPos.y + x.height > p->dstPtr.ysize))
        return set_error(cudaErrorInvalidValue);
    if (p->srcPos.x + x.width > p->srcPtr.pitch || p->dstPos.x + x.width > p->dstPtr.pitch)
        return set_error(cudaErrorInvalidPitchValue);
    size_t sslice = p->srcPtr.pitch * p->srcPtr.ysize, dslice = p->dstPtr.pitch * p->dstPtr.ysize;
    for (size_t z = 0; z < x.depth; z++) {
        const char *src = (const char *)p->srcPtr.ptr + (p->srcPos.z + z) * sslice + p->srcPos.y * p->srcPtr.pitch + p->srcPos.x;
        char *dst = (char *)p->dstPtr.ptr + (p->dstPos.z + z) * dslice + p->dstPos.y * p->dstPtr.pitch + p->dstPos.x;
        cudaError_t e = copy(dst, p->dstPtr.pitch, src, p->srcPtr.pitch, x.width, x.height, p->kind, stream, async);
        if (e) return e;
    }
    return cudaSuccess;
}
cudaError_t fill3d(cudaPitchedPtr ptr, int value, cudaExtent x, cudaStream_t stream, bool async) {
    CUEMU_NEED_DEVICE();
    if (x.width == 0 || x.height == 0 || x.depth == 0) return cudaSuccess;
    if (!ptr.ptr || x.width > ptr.pitch || (x.depth > 1 && x.height > ptr.ysize)) return set_error(cudaErrorInvalidValue);
    for (size_t z = 0; z < x.depth; z++) {
        cudaError_t e = fill((char *)ptr.ptr + z * ptr.pitch * ptr.ysize, ptr.pitch, value, x.width, x.height, stream, async);
        if (e) return e;
    }
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) { CUEMU_API_CALL();
    return copy3d(p, nullptr, false);
}
extern "C" cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) { CUEMU_API_CALL();
    return copy3d(p, stream, true);
}
extern "C" cudaError_t cudaMemset3D(struct cudaPitchedPtr ptr, int value, struct cudaExtent extent) { CUEMU_API_CALL();
    return fill3d(ptr, value, extent, nullptr, false);
}
extern "C" cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr ptr, int value, struct cudaExtent extent, cudaStream_t stream) { CUEMU_API_CALL();
    return fill3d(ptr, value, extent, stream, true);
}

/* >>stream attributes (Runtime API, cudaStreamSetAttribute /
   cudaStreamGetAttribute; the L2 access policy window: Programming Guide,
   "L2 Access Management"). Accepted and checked; the emulated device has no
   L2 to set aside, so results do not change: num_bytes at most
   cudaDevAttrMaxAccessPolicyWindowSize, hitRatio in [0, 1], missProp
   "must be either NORMAL or STREAMING". */
extern "C" cudaError_t cudaStreamSetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, const cudaStreamAttrValue *value) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(hStream, &dev, &e);
    if (!s) return set_error(e);
    if (!value) return set_error(cudaErrorInvalidValue);
    switch ((int)attr) {
    case cudaLaunchAttributeAccessPolicyWindow: {
        const cudaAccessPolicyWindow &w = value->accessPolicyWindow;
        int maxw = 0;
        cudaDeviceGetAttribute(&maxw, cudaDevAttrMaxAccessPolicyWindowSize, dev);
        if (w.num_bytes > (size_t)maxw || !(w.hitRatio >= 0.0f && w.hitRatio <= 1.0f) ||
            (unsigned)w.hitProp > cudaAccessPropertyPersisting || w.missProp == cudaAccessPropertyPersisting ||
            (unsigned)w.missProp > cudaAccessPropertyPersisting)
            return set_error(cudaErrorInvalidValue);
        s->apw = w;
        return cudaSuccess;
    }
    case cudaLaunchAttributeSynchronizationPolicy: {
        int v;
        memcpy(&v, value, sizeof v);
        if (v < 1 || v > 4) return set_error(cudaErrorInvalidValue);   /* cudaSyncPolicyAuto .. BlockingSync */
        s->sync_policy = v;
        return cudaSuccess;
    }
    default: return set_error(cudaErrorInvalidValue);
    }
}
extern "C" cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, cudaStreamAttrValue *value) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(hStream, &dev, &e);
    if (!s) return set_error(e);
    if (!value) return set_error(cudaErrorInvalidValue);
    memset(value, 0, sizeof *value);
    switch ((int)attr) {
    case cudaLaunchAttributeAccessPolicyWindow: value->accessPolicyWindow = s->apw; return cudaSuccess;
    case cudaLaunchAttributeSynchronizationPolicy: {
        int v = s->sync_policy ? s->sync_policy : 1;
        memcpy(value, &v, sizeof v);
        return cudaSuccess;
    }
    case cudaLaunchAttributePriority: value->priority = s->priority; return cudaSuccess;
    default: return set_error(cudaErrorInvalidValue);
    }
}

/* >>cudaStreamAttachMemAsync (Runtime API): devPtr is managed memory
   (cudaMallocManaged, __managed__); length 0 (the whole allocation) or its
   size; flags one of cudaMemAttachGlobal, cudaMemAttachHost,
   cudaMemAttachSingle, and "It is illegal to attach singly to the NULL
   stream". The emulated device's managed memory is always coherent, so the
   attachment changes what the host may touch on a GPU, not the results
   here. */
extern "C" cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
        return set_error(cudaErrorInvalidValue);
    if (flags == cudaMemAttachSingle && (stream == nullptr || stream == cudaStreamLegacy))
        return set_error(cudaErrorInvalidValue);
    Region r;
    if (!devPtr || classify(devPtr, &r) != MEM_MANAGED || r.base != (char *)devPtr || (length && length != r.size))
        return set_error(cudaErrorInvalidValue);
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(hStream, &dev, &e);
    if (!s) return set_error(e);
    if (!priority) return set_error(cudaErrorInvalidValue);
    *priority = s->priority;
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(hStream, &dev, &e);
    if (!s) return set_error(e);
    if (!flags) return set_error(cudaErrorInvalidValue);
    *flags = s->flags;
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!device) return set_error(cudaErrorInvalidValue);
    return set_error(stream_device(hStream, device));
}

extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t stream) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    if ((e = capture_sync_check(s, dev))) return set_error(e);
    state().counters.host_waits++;
    run_until(s->last_seq);
    pools_release();
    return set_error(sticky_error(dev));
}

/* Not done yet: cudaErrorNotReady (recorded as the last error, as the
   runtime does); the device then makes progress, so that a polling loop
   ends. */
extern "C" cudaError_t cudaStreamQuery(cudaStream_t stream) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    if ((e = capture_sync_check(s, dev))) return set_error(e);
    uint64_t last;
    {
        State &S = state();
        std::lock_guard<std::recursive_mutex> lk(S.mu);
        last = s->last_seq;
    }
    if (op_done(last)) return cudaSuccess;
    run_until(last);
    return set_error(cudaErrorNotReady);
}

extern "C" cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    Event *ev = (Event *)event;
    if (!event || !S.events.count(ev)) return set_error(cudaErrorInvalidResourceHandle);
    if (flags & ~1u) return set_error(cudaErrorInvalidValue);
    /* Runtime API, cudaStreamWaitEvent: cudaEventWaitExternal makes an
       event wait node in a capture and "is invalid outside of stream capture" */
    if (flags & cudaEventWaitExternal) {
        if (!s->cap) return set_error(cudaErrorInvalidValue);
        return set_error(submit(dev, s, "event wait", cudaGraphNodeTypeWaitEvent, nullptr));
    }
    if (ev->cap_id || s->cap) return set_error(capture_event_wait(s, ev));   /* a fork or join of a capture */
    if ((e = capture_guard(s))) return set_error(e);
    /* the stream's later work waits for the event's last record (none: no wait) */
    push_op(dev, s, "wait event", [] {}, ev->recorded ? ev->rec_seq : 0);
    return cudaSuccess;
}

extern "C" cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    if (!fn) return set_error(cudaErrorInvalidValue);
    return set_error(submit(dev, s, "host function", cudaGraphNodeTypeHost, [fn, userData] { fn(userData); }));
}

extern "C" cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                            unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    if (!callback || flags) return set_error(cudaErrorInvalidValue);
    /* Runtime API, cudaStreamAddCallback: not supported in stream capture (cudaLaunchHostFunc is) */
    if (s->cap) return set_error(cudaErrorStreamCaptureUnsupported);
    if ((e = capture_guard(s))) return set_error(e);
    /* called exactly once, also after a device error, which it is told */
    push_op(dev, s, "stream callback", [callback, stream, userData, dev] { callback(stream, sticky_error(dev), userData); }, 0,
            true);
    return cudaSuccess;
}

/* >>events */
namespace {
std::unordered_map<Event *, std::shared_ptr<Event>> &event_owners() {
    static auto *m = new std::unordered_map<Event *, std::shared_ptr<Event>>();
    return *m;
}

Event *find_event(cudaEvent_t ev) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    Event *e = (Event *)ev;
    return ev && S.events.count(e) ? e : nullptr;
}
} /* namespace */

extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!event || (flags & ~7u) || ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
        return set_error(cudaErrorInvalidValue);
    auto ev = std::make_shared<Event>(Event{t_device, flags, false, 0, false, 0, 0, {}});
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    S.events.insert(ev.get());
    event_owners()[ev.get()] = ev;
    *event = (cudaEvent_t)ev.get();
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventCreate(cudaEvent_t *event) { CUEMU_API_CALL(); return cudaEventCreateWithFlags(event, cudaEventDefault); }

extern "C" cudaError_t cudaEventDestroy(cudaEvent_t event) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    Event *e = (Event *)event;
    if (!event || !S.events.count(e)) return set_error(cudaErrorInvalidResourceHandle);
    S.events.erase(e);
    event_owners().erase(e);   /* a pending record keeps its own reference */
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    int dev;
    cudaError_t e;
    Stream *s = resolve_stream(stream, &dev, &e);
    if (!s) return set_error(e);
    if (flags & ~1u) return set_error(cudaErrorInvalidValue);
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    Event *ev = (Event *)event;
    if (!event || !S.events.count(ev) || ev->device != dev) return set_error(cudaErrorInvalidResourceHandle);
    if ((e = capture_guard(s))) return set_error(e);
    /* cudaEventRecordExternal: an event record node in a capture; invalid outside one */
    if (flags & cudaEventRecordExternal) {
        if (!s->cap) return set_error(cudaErrorInvalidValue);
        std::shared_ptr<Event> keep = event_owners()[ev];
        return set_error(submit(dev, s, "event record", cudaGraphNodeTypeEventRecord, [keep] { keep->t_ns = now_ns(); }));
    }
    if (s->cap) {   /* in a capture: the event stands for the stream's work so far (a fork / join point) */
        capture_event_record(s, ev);
        return cudaSuccess;
    }
    ev->cap_id = 0;
    ev->cap_nodes.clear();
    std::shared_ptr<Event> keep = event_owners()[ev];
    ev->recorded = true;
    ev->complete = false;
    uint64_t seq = push_op(dev, s, "event record", [keep] {
        keep->t_ns = now_ns();
    });
    ev->rec_seq = seq;
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { CUEMU_API_CALL(); return cudaEventRecordWithFlags(event, stream, 0); }

namespace {
/* Whether the event's last record has run. */
bool event_done(Event *ev) { return !ev->recorded || op_done(ev->rec_seq); }
} /* namespace */

extern "C" cudaError_t cudaEventQuery(cudaEvent_t event) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    Event *ev = find_event(event);
    if (!ev) return set_error(cudaErrorInvalidResourceHandle);
    cudaError_t ce = capture_event_check(ev);
    if (ce) return set_error(ce);
    if (event_done(ev)) return cudaSuccess;
    run_until(ev->rec_seq);   /* progress for the next query */
    return set_error(cudaErrorNotReady);
}

extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t event) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    Event *ev = find_event(event);
    if (!ev) return set_error(cudaErrorInvalidResourceHandle);
    cudaError_t ce = capture_event_check(ev);
    if (ce) return set_error(ce);
    state().counters.host_waits++;
    if (ev->recorded) run_until(ev->rec_seq);
    pools_release();
    return set_error(sticky_error(ev->device));
}

extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    Event *a = find_event(start), *b = find_event(end);
    if (!ms) return set_error(cudaErrorInvalidValue);
    if (!a || !b) return set_error(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return set_error(cudaErrorInvalidResourceHandle);
    if ((a->flags | b->flags) & cudaEventDisableTiming) return set_error(cudaErrorInvalidResourceHandle);
    if (!event_done(a) || !event_done(b)) return set_error(cudaErrorNotReady);
    *ms = (float)((double)(b->t_ns - a->t_ns) / 1e6);
    return cudaSuccess;
}

/* >>execution */
namespace {
using Launcher = cudaError_t (*)(const void *, dim3, dim3, void **, size_t, cudaStream_t, int);
/* The kernel at func as the compiled image knows it: its registered
   launcher (null: not a kernel nvcc-emu registered). */
Launcher launcher_of(const void *func) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.funcs.find(func);
    return it != S.funcs.end() ? it->second.launcher : nullptr;
}

/* Runtime API, cudaLaunchKernel: func is "device function symbol"; an
   address that is no kernel is cudaErrorInvalidDeviceFunction. */
cudaError_t launch_void(const void *func, dim3 g, dim3 b, void **args, size_t smem, cudaStream_t st, int coop) {
    CUEMU_NEED_DEVICE();
    Launcher l = func ? launcher_of(func) : nullptr;
    if (!l) return set_error(cudaErrorInvalidDeviceFunction);
    return set_error(l(func, g, b, args, smem, st, coop));
}
} /* namespace */

extern "C" cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t smem, cudaStream_t st) { CUEMU_API_CALL();
    return launch_void(func, g, b, args, smem, st, 0);
}

extern "C" cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st) { CUEMU_API_CALL();
    return launch_void(func, g, b, a, s, st, 1);
}

/* >>clusters: CUDA C++ Programming Guide, "Thread Block Clusters": "a
   maximum of 8 thread blocks in a cluster is supported as a portable
   cluster size" (more only where the kernel sets
   cudaFuncAttributeNonPortableClusterSizeAllowed: 16 on compute capability
   9.0 and 10.0, cudaOccupancyMaxPotentialClusterSize), and "the grid
   dimension must be a multiple of cluster size" (its cudaLaunchKernelEx
   example). A launch that breaks either is refused with
   cudaErrorInvalidClusterSize ("a kernel launch error has occurred due to
   cluster misconfiguration", driver_types.h); clusters exist from compute
   capability 9.0 (cudaDevAttrClusterLaunch). */
cudaError_t cuemu::launch_attrs_check(const cudaLaunchConfig_t *config, const void *func) {
    if (!config) return set_error(cudaErrorInvalidValue);
    if (config->numAttrs && !config->attrs) return set_error(cudaErrorInvalidValue);
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const cudaLaunchAttribute &a = config->attrs[i];
        if (a.id != cudaLaunchAttributeClusterDimension) continue;
        unsigned cx = a.val.clusterDim.x, cy = a.val.clusterDim.y, cz = a.val.clusterDim.z;
        if (!cx || !cy || !cz) return set_error(cudaErrorInvalidValue);
        if (cx == 1 && cy == 1 && cz == 1) continue;
        CUEMU_NEED_DEVICE();
        const Profile &p = dev_of(t_device).prof;
        if (p.major < 9) return set_error(cudaErrorInvalidClusterSize);
        bool nonportable = false;
        {
            State &S = state();
            std::lock_guard<std::recursive_mutex> lk(S.mu);
            auto it = S.funcs.find(func);
            nonportable = it != S.funcs.end() && it->second.nonportable_cluster;
        }
        uint64_t size = (uint64_t)cx * cy * cz;
        if (size > (nonportable && (p.major == 9 || p.major == 10) ? 16u : 8u)) return set_error(cudaErrorInvalidClusterSize);
        if (config->gridDim.x % cx || config->gridDim.y % cy || config->gridDim.z % cz)
            return set_error(cudaErrorInvalidClusterSize);
    }
    return cudaSuccess;
}

extern "C" cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args) { CUEMU_API_CALL();
    if (!config) return set_error(cudaErrorInvalidValue);
    if (cudaError_t ce = launch_attrs_check(config, func)) return ce;
    int coop = 0;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs && config->attrs[i].id == cudaLaunchAttributeCooperative) coop = config->attrs[i].val.cooperative;
    return launch_void(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, config->stream, coop);
}

/* Runtime API, cudaFuncGetAttributes: what the compiled image says
   (maxThreadsPerBlock from __launch_bounds__, 1024 without; the static
   shared size), known before the first launch for registered kernels. */
extern "C" cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!attr) return set_error(cudaErrorInvalidValue);
    if (!func) return set_error(cudaErrorInvalidDeviceFunction);
    const Profile &p = dev_of(t_device).prof;
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = p.max_threads_per_block;
    attr->numRegs = 32;
    attr->ptxVersion = p.major * 10 + p.minor;
    attr->binaryVersion = p.major * 10 + p.minor;
    attr->preferredShmemCarveout = -1;
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.funcs.find(func);
    const FuncAttr *fa = it != S.funcs.end() ? &it->second : nullptr;
    if (fa && fa->max_threads > 0 && fa->max_threads < attr->maxThreadsPerBlock) attr->maxThreadsPerBlock = fa->max_threads;
    size_t st = fa ? fa->static_smem() : 0;
    attr->sharedSizeBytes = st;
    attr->maxDynamicSharedSizeBytes = fa && fa->max_dynamic_smem >= 0
                                          ? fa->max_dynamic_smem
                                          : (int)(p.smem_per_block - (st < p.smem_per_block ? st : p.smem_per_block));
    return cudaSuccess;
}

extern "C" cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!func) return set_error(cudaErrorInvalidDeviceFunction);
    const Profile &p = dev_of(t_device).prof;
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
        /* Runtime API, cudaFuncSetAttribute: "the sum of this value and the
           function attribute sharedSizeBytes cannot exceed the device
           attribute cudaDevAttrMaxSharedMemoryPerBlockOptin" */
        if (value < 0 || (size_t)value + S.funcs[func].static_smem() > p.smem_per_block_optin)
            return set_error(cudaErrorInvalidValue);
        S.funcs[func].max_dynamic_smem = value;
        return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100) return set_error(cudaErrorInvalidValue);
        S.funcs[func].carveout = value;
        return cudaSuccess;
    case cudaFuncAttributeNonPortableClusterSizeAllowed:
        if (value != 0 && value != 1) return set_error(cudaErrorInvalidValue);
        S.funcs[func].nonportable_cluster = value != 0;
        return cudaSuccess;
    default: return set_error(cudaErrorInvalidValue);
    }
}

extern "C" cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    return func ? cudaSuccess : set_error(cudaErrorInvalidDeviceFunction);
}

extern "C" cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func, int blockSize,
                                                                             size_t smem, unsigned int) { CUEMU_API_CALL();
    CUEMU_NEED_DEVICE();
    if (!numBlocks || blockSize <= 0) return set_error(cudaErrorInvalidValue);
    if (!func) return set_error(cudaErrorInvalidDeviceFunction);
    const Profile &p = dev_of(t_device).prof;
    if (blockSize > p.max_threads_per_block) {
        *numBlocks = 0;
        return cudaSuccess;
    }
    /* the kernel's static __shared__ bytes count with the dynamic ones
       (blocks_per_sm; Runtime API: dynamicSMemSize is the "per-block
       dynamic shared memory usage intended, in bytes", on top of the
       function's own) */
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    auto it = S.funcs.find(func);
    *numBlocks = blocks_per_sm(p, it != S.funcs.end() ? &it->second : nullptr, (uint64_t)blockSize, smem);
    return cudaSuccess;
}

extern "C" cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                                    size_t smem) { CUEMU_API_CALL();
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, smem, 0);
}

extern "C" cudaError_t cudaProfilerStart(void) { CUEMU_API_CALL(); return cudaSuccess; }
extern "C" cudaError_t cudaProfilerStop(void) { CUEMU_API_CALL(); return cudaSuccess; }

/* >>counters (cuemu.h) */
extern "C" void cuemu_counters_get(cuemu_counters *out) {
    Counters &c = state().counters;
    out->kernel_launches = c.kernel_launches;
    out->library_calls = c.library_calls;
    out->library_api_calls = c.library_api_calls;
    out->host_waits = c.host_waits;
    out->mallocs = c.mallocs;
    out->frees = c.frees;
    out->host_allocs = c.host_allocs;
    out->host_frees = c.host_frees;
    out->memcpy_calls = c.memcpy_calls;
    out->memset_calls = c.memset_calls;
    out->h2d_bytes = c.h2d_bytes;
    out->d2h_bytes = c.d2h_bytes;
    out->d2d_bytes = c.d2d_bytes;
    out->graph_launches = c.graph_launches;
    out->graph_kernels = c.graph_kernels;
    out->runtime_api_calls = c.runtime_api_calls;
    out->graph_library_calls = c.graph_library_calls;
    out->graph_memsets = c.graph_memsets;
    out->graph_memcpys = c.graph_memcpys;
}

extern "C" void cuemu_counters_reset(void) {
    Counters &c = state().counters;
    c.kernel_launches = 0;
    c.library_calls = 0;
    c.library_api_calls = 0;
    c.host_waits = 0;
    c.mallocs = 0;
    c.frees = 0;
    c.host_allocs = 0;
    c.host_frees = 0;
    c.memcpy_calls = 0;
    c.memset_calls = 0;
    c.h2d_bytes = 0;
    c.d2h_bytes = 0;
    c.d2d_bytes = 0;
    c.graph_launches = 0;
    c.graph_kernels = 0;
    c.runtime_api_calls = 0;
    c.graph_library_calls = 0;
    c.graph_memsets = 0;
    c.graph_memcpys = 0;
}

extern "C" const char *cuemu_device_spec(void) {
    ensure_init();
    return state().spec.c_str();
}

/* >>per-thread default stream entry points. nvcc --default-stream
   per-thread defines CUDA_API_PER_THREAD_DEFAULT_STREAM, and the toolkit's
   headers then map the API to these entry points (Programming Guide,
   "Per-thread Default Stream"): the handle 0 means cudaStreamPerThread
   (_ptsz), and the synchronous calls use the per-thread stream instead of
   the legacy one (_ptds). cuda_runtime_api.h does the mapping. */
namespace {
cudaStream_t ptsz(cudaStream_t s) { return s ? s : cudaStreamPerThread; }
} /* namespace */

#define CUEMU_PTSZ(ret, name, params, args) extern "C" ret name##_ptsz params { return name args; }
CUEMU_PTSZ(cudaError_t, cudaMemcpyAsync, (void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st),
           (d, s, n, k, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemcpy2DAsync,
           (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st),
           (d, dp, s, sp, w, h, k, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemsetAsync, (void *p, int v, size_t n, cudaStream_t st), (p, v, n, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemset2DAsync, (void *p, size_t pitch, int v, size_t w, size_t h, cudaStream_t st),
           (p, pitch, v, w, h, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemcpyToSymbolAsync,
           (const void *sym, const void *s, size_t n, size_t off, enum cudaMemcpyKind k, cudaStream_t st),
           (sym, s, n, off, k, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemcpyFromSymbolAsync,
           (void *d, const void *sym, size_t n, size_t off, enum cudaMemcpyKind k, cudaStream_t st),
           (d, sym, n, off, k, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemPrefetchAsync, (const void *p, size_t n, struct cudaMemLocation l, unsigned int f, cudaStream_t st),
           (p, n, l, f, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMallocAsync, (void **p, size_t n, cudaStream_t st), (p, n, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaFreeAsync, (void *p, cudaStream_t st), (p, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMallocFromPoolAsync, (void **p, size_t n, cudaMemPool_t pool, cudaStream_t st), (p, n, pool, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemcpy3DAsync, (const struct cudaMemcpy3DParms *p, cudaStream_t st), (p, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaMemset3DAsync, (struct cudaPitchedPtr p, int v, struct cudaExtent x, cudaStream_t st), (p, v, x, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaStreamAttachMemAsync, (cudaStream_t st, void *p, size_t n, unsigned int f), (ptsz(st), p, n, f))
CUEMU_PTSZ(cudaError_t, cudaStreamGetAttribute, (cudaStream_t st, cudaStreamAttrID a, cudaStreamAttrValue *v), (ptsz(st), a, v))
CUEMU_PTSZ(cudaError_t, cudaStreamSetAttribute, (cudaStream_t st, cudaStreamAttrID a, const cudaStreamAttrValue *v), (ptsz(st), a, v))
CUEMU_PTSZ(cudaError_t, cudaStreamSynchronize, (cudaStream_t st), (ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaStreamQuery, (cudaStream_t st), (ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaStreamGetPriority, (cudaStream_t st, int *p), (ptsz(st), p))
CUEMU_PTSZ(cudaError_t, cudaStreamGetFlags, (cudaStream_t st, unsigned int *f), (ptsz(st), f))
CUEMU_PTSZ(cudaError_t, cudaStreamGetDevice, (cudaStream_t st, int *d), (ptsz(st), d))
CUEMU_PTSZ(cudaError_t, cudaStreamWaitEvent, (cudaStream_t st, cudaEvent_t ev, unsigned int f), (ptsz(st), ev, f))
CUEMU_PTSZ(cudaError_t, cudaStreamAddCallback, (cudaStream_t st, cudaStreamCallback_t cb, void *u, unsigned int f),
           (ptsz(st), cb, u, f))
CUEMU_PTSZ(cudaError_t, cudaLaunchHostFunc, (cudaStream_t st, cudaHostFn_t fn, void *u), (ptsz(st), fn, u))
CUEMU_PTSZ(cudaError_t, cudaEventRecord, (cudaEvent_t ev, cudaStream_t st), (ev, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaEventRecordWithFlags, (cudaEvent_t ev, cudaStream_t st, unsigned int f), (ev, ptsz(st), f))
CUEMU_PTSZ(cudaError_t, cudaLaunchKernel, (const void *f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st),
           (f, g, b, a, s, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaLaunchCooperativeKernel, (const void *f, dim3 g, dim3 b, void **a, size_t s, cudaStream_t st),
           (f, g, b, a, s, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaStreamBeginCapture, (cudaStream_t st, enum cudaStreamCaptureMode m), (ptsz(st), m))
CUEMU_PTSZ(cudaError_t, cudaStreamEndCapture, (cudaStream_t st, cudaGraph_t *g), (ptsz(st), g))
CUEMU_PTSZ(cudaError_t, cudaStreamIsCapturing, (cudaStream_t st, enum cudaStreamCaptureStatus *s), (ptsz(st), s))
CUEMU_PTSZ(cudaError_t, cudaStreamGetCaptureInfo,
           (cudaStream_t st, enum cudaStreamCaptureStatus *s, unsigned long long *id, cudaGraph_t *g, const cudaGraphNode_t **d,
            const cudaGraphEdgeData **e, size_t *n),
           (ptsz(st), s, id, g, d, e, n))
CUEMU_PTSZ(cudaError_t, cudaGraphLaunch, (cudaGraphExec_t x, cudaStream_t st), (x, ptsz(st)))
CUEMU_PTSZ(cudaError_t, cudaGraphUpload, (cudaGraphExec_t x, cudaStream_t st), (x, ptsz(st)))
#undef CUEMU_PTSZ

extern "C" cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args) { CUEMU_API_CALL();
    if (!config) return set_error(cudaErrorInvalidValue);
    cudaLaunchConfig_t c = *config;
    c.stream = ptsz(c.stream);
    return cudaLaunchKernelExC(&c, func, args);
}

/* the synchronous calls, on the per-thread stream */
extern "C" cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return copy(dst, count, src, count, count, 1, kind, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                                        enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return copy(dst, dpitch, src, spitch, width, height, kind, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemset_ptds(void *p, int value, size_t count) { CUEMU_API_CALL();
    return fill(p, count, value, count, 1, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemset2D_ptds(void *p, size_t pitch, int value, size_t width, size_t height) { CUEMU_API_CALL();
    return fill(p, pitch, value, width, height, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) { CUEMU_API_CALL();
    return copy3d(p, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr ptr, int value, struct cudaExtent extent) { CUEMU_API_CALL();
    return fill3d(ptr, value, extent, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                              enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return symbol_copy((void *)symbol, src, count, offset, true, kind, cudaStreamPerThread, false);
}
extern "C" cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    return symbol_copy(dst, symbol, count, offset, false, kind, cudaStreamPerThread, false);
}
