/* registry.cpp - what nvcc-emu's rewrite registers from the source
   (cuemu/registry.h): kernels (their compiled image's attributes: launch
   bounds, static shared memory, a launcher for cudaLaunchKernel's void **)
   and __device__ / __constant__ variables (symbols).

   On a GPU a __device__ variable lives in device memory, one copy per
   device, initialised from the module image when the module loads; host
   code that names it touches a host-side shadow, and only the symbol API
   (cudaMemcpyToSymbol, cudaGetSymbolAddress, ...) reaches the device copy
   (CUDA C++ Programming Guide, "Variable Memory Space Specifiers": __device__
   "resides in global memory space ... accessible from the host through the
   runtime library (cudaGetSymbolAddress() / cudaGetSymbolSize() /
   cudaMemcpyToSymbol() / cudaMemcpyFromSymbol())"). Here: the shadow is the
   variable the program defines; each device's copy is device memory made
   from the shadow's bytes as they were at registration (the static
   initialiser), created before the first kernel of that device runs. */
#include "state.h"
#include <cuemu/registry.h>
#include <string.h>

namespace cuemu {

/* the device whose code this host thread runs now (-1: host code) */
thread_local int t_code_device = -1;

namespace {

struct Symbol {
    SymbolInfo info;
    std::vector<char> init;                   /* the bytes at registration */
    std::atomic<char *> copy[kMaxDevices];    /* each device's copy, once made */
};

/* Registration happens during static initialisation, before any thread
   that runs device code exists, so lookups take no lock; later
   registrations (a dlopen'ed library) take g_reg_mu and are published
   before the library's code can run. */
std::mutex &reg_mu() {
    static std::mutex *m = new std::mutex();
    return *m;
}
std::unordered_map<const void *, Symbol *> &symbols() {
    static auto *m = new std::unordered_map<const void *, Symbol *>();
    return *m;
}
std::atomic<size_t> g_nsymbols{0};

Symbol *find(const void *shadow) {
    auto &m = symbols();
    auto it = m.find(shadow);
    return it == m.end() ? nullptr : it->second;
}

char *make_copy(Symbol *s, int dev) {
    std::lock_guard<std::mutex> lk(reg_mu());
    char *c = s->copy[dev].load(std::memory_order_acquire);
    if (c) return c;
    c = (char *)device_copy_of(dev, s->init.data(), s->init.size());
    s->copy[dev].store(c, std::memory_order_release);
    return c;
}

} /* namespace */

/* >>kernels */
int kernel_register(const void *func, const KernelInfo &info) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    FuncAttr &f = S.funcs[func];
    f.registered = true;
    if (info.name) f.name = info.name;
    if (info.max_threads > 0) f.max_threads = info.max_threads;
    if (info.static_smem > f.reg_smem) f.reg_smem = info.static_smem;
    if (info.launch) f.launcher = info.launch;
    return 0;
}

/* >>symbols */
int symbol_register(void *shadow, size_t size, const char *name, int is_constant) {
    std::lock_guard<std::mutex> lk(reg_mu());
    if (find(shadow)) return 0;
    Symbol *s = new Symbol();   /* lives as long as the program */
    s->info = SymbolInfo{shadow, size, name, is_constant != 0};
    s->init.assign((const char *)shadow, (const char *)shadow + size);
    for (auto &c : s->copy) c.store(nullptr);
    symbols()[shadow] = s;
    g_nsymbols++;
    return 0;
}

void *symbol_resolve(void *shadow) {
    int dev = t_code_device;
    if (dev < 0) return shadow;   /* host code: the shadow */
    thread_local void *last_shadow = nullptr, *last_copy = nullptr;
    thread_local int last_dev = -1;
    if (shadow == last_shadow && dev == last_dev) return last_copy;
    Symbol *s = find(shadow);
    if (!s) return shadow;
    char *c = s->copy[dev].load(std::memory_order_acquire);
    if (!c) c = make_copy(s, dev);
    last_shadow = shadow;
    last_dev = dev;
    last_copy = c;
    return c;
}

size_t symbol_count() { return g_nsymbols.load(); }

const SymbolInfo *symbol_find(const void *shadow) {
    if (!g_nsymbols.load()) return nullptr;
    Symbol *s = find(shadow);
    return s ? &s->info : nullptr;
}

void *symbol_copy_on(const SymbolInfo *info, int dev) {
    Symbol *s = find(info->shadow);
    if (!s || dev < 0 || dev >= kMaxDevices) return nullptr;
    char *c = s->copy[dev].load(std::memory_order_acquire);
    return c ? c : make_copy(s, dev);
}

void symbols_ready(int dev) {
    if (dev < 0 || dev >= kMaxDevices || !g_nsymbols.load()) return;
    static std::atomic<size_t> made[kMaxDevices];
    size_t n = g_nsymbols.load();
    if (made[dev].load() == n) return;
    std::vector<Symbol *> all;
    {
        std::lock_guard<std::mutex> lk(reg_mu());
        for (auto &kv : symbols()) all.push_back(kv.second);
    }
    for (Symbol *s : all)
        if (!s->copy[dev].load(std::memory_order_acquire)) make_copy(s, dev);
    made[dev].store(n);
}

void symbols_reset(int dev) {
    if (dev < 0 || dev >= kMaxDevices || !g_nsymbols.load()) return;
    std::lock_guard<std::mutex> lk(reg_mu());
    for (auto &kv : symbols()) {
        Symbol *s = kv.second;
        if (char *c = s->copy[dev].load(std::memory_order_acquire)) device_fill(c, s->init.data(), s->init.size());
    }
}

} /* namespace cuemu */
