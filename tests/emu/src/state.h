/* state.h - the emulated runtime's own state, shared by runtime.cpp (the
   API, memory, streams, events), exec.cpp (kernels on fibers) and pool.cpp
   (worker threads). Private to tests/emu/src. */
#ifndef CUEMU_STATE_H
#define CUEMU_STATE_H

#include "internal.h"
#include <cuemu/kernel.h>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cuemu {

/* >>streams and events */
struct Stream {
    int device;
    unsigned flags;
    int priority;
    uint64_t last_seq;     /* the last unit of work queued on it */
};

struct Event {
    int device;
    unsigned flags;
    bool recorded;         /* cudaEventRecord was called at least once */
    uint64_t rec_seq;      /* the unit of work that completes it */
    bool complete;
    int64_t t_ns;          /* when its record ran (steady clock) */
};

/* One unit of device work: a kernel grid, a copy, a library call, an event
   record, a host function. It runs after the work it depends on (the
   previous work of its stream, the legacy default stream's implicit
   synchronisation, an event a stream waits for) and not necessarily before
   anything else: a program that reads without waiting for the right stream
   sees stale data, as on a GPU. */
struct Op {
    uint64_t seq;
    int device;
    const char *name;
    std::function<void()> fn;
    std::vector<uint64_t> deps;
    bool always = false;   /* runs even after a sticky error (stream callbacks report it) */
};

/* >>memory */
struct Alloc {
    char *map;           /* the whole mapping (data plus guard page), or null for registered host memory */
    size_t map_len;
    char *base;          /* what the program got */
    size_t size;         /* what it asked for */
    size_t accounted;    /* bytes charged to the device */
    MemKind kind;
    int device;
    bool internal;       /* a library's own workspace */
    unsigned flags;      /* cudaHostAlloc / cudaHostRegister flags */
};

struct Device {
    Profile prof;
    std::atomic<int> sticky{0};   /* cudaError_t, 0 = none */
    size_t used = 0;
    Stream legacy{};
    unsigned flags = 0;
    std::vector<bool> peer;       /* peer access enabled to device i */
    size_t limits[16] = {};
};

struct Counters {
    std::atomic<uint64_t> kernel_launches{0}, library_calls{0}, library_api_calls{0}, host_waits{0}, mallocs{0}, frees{0},
        host_allocs{0}, host_frees{0}, memcpy_calls{0}, memset_calls{0}, h2d_bytes{0}, d2h_bytes{0}, d2d_bytes{0};
};

/* Per-kernel attributes (cudaFuncSetAttribute), keyed by the kernel's address. */
struct FuncAttr {
    int max_dynamic_smem = -1;    /* -1: the default limit */
    int carveout = -1;
    size_t static_smem = 0;       /* static __shared__ bytes seen in its runs so far */
};

struct State {
    std::recursive_mutex mu;      /* everything below */
    bool initialised = false;
    std::string spec;             /* GPUDL_EMU_DEVICE as used */
    bool no_driver = false;
    int driver_version = 13000;
    std::deque<Device> devs;
    std::map<uint64_t, Op> pending;              /* work queued and not run yet, by issue number */
    uint64_t next_seq = 1;
    std::map<uintptr_t, Alloc> allocs;           /* by base address */
    std::deque<Alloc> quarantine;                /* freed mappings, PROT_NONE, reused last */
    std::unordered_set<Stream *> streams;
    std::unordered_set<Event *> events;
    std::vector<Stream *> stream_graveyard;
    std::unordered_map<const void *, FuncAttr> funcs;
    std::unordered_map<const void *, cudaError_t (*)(const void *, dim3, dim3, void **, size_t, cudaStream_t, int)> launchers;
    bool mem_open = false;                       /* device memory readable by the host (work is running) */
    Counters counters;
    std::mutex exec_mu;                          /* one executor at a time */
};
State &state();

/* runtime.cpp */
void ensure_init();
/* Runs unit seq and everything it depends on (~0ull: all queued work). */
void run_until(uint64_t seq);
bool op_done(uint64_t seq);
/* Queues work on stream s (its dependencies follow from s); extra_dep: one
   more unit it must wait for (0: none). */
uint64_t push_op(int device, Stream *s, const char *name, std::function<void()> fn, uint64_t extra_dep = 0,
                 bool always = false);
Stream *resolve_stream(cudaStream_t s, int *dev, cudaError_t *err);
cudaError_t set_error(cudaError_t e);            /* records e as the thread's last error; returns e */
void raise_sticky(int dev, cudaError_t e);
bool static_data(const void *p);
MemKind classify_in_signal(const void *p);         /* classify() that never blocks (MEM_UNKNOWN when busy) */                 /* inside the program's writable data (a __device__ variable) */
int executing_device();
void note_static_shared(const void *func, size_t bytes);   /* a kernel's static __shared__ variable, seen at run time */
int64_t now_ns();

/* exec.cpp */
struct Grid {
    LaunchSite site;
    const void *func;
    dim3 grid, block;
    size_t smem;
    int device;
    void (*run)(void *);
    void *args;
    void (*destroy)(void *);
    std::vector<PtrArg> ptrs;
};
void run_grid(Grid &g);                          /* inside an Op: runs every block */
void install_signal_handlers();
size_t fiber_stack_bytes();

/* pool.cpp */
/* Runs job(participant) on min(n, workers) threads including the caller. */
void pool_run(int n, const std::function<void(int)> &job);
int pool_size();

} /* namespace cuemu */

#endif
