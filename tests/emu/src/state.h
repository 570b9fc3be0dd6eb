/* state.h - the emulated runtime's own state, shared by runtime.cpp (the
   API, memory, streams, events), exec.cpp (kernels on fibers) and pool.cpp
   (worker threads). Private to tests/emu/src. */
#ifndef CUEMU_STATE_H
#define CUEMU_STATE_H

#include "internal.h"
#include <cuemu/kernel.h>
#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cuemu {

struct Capture;
struct GNode;

/* >>streams and events */
struct Stream {
    int device;
    unsigned flags;
    int priority;
    uint64_t last_seq;     /* the last unit of work queued on it */
    Capture *cap = nullptr;          /* the stream capture it takes part in (graph.cpp) */
    std::vector<GNode *> cap_tail;   /* while capturing: what its next work depends on */
    cudaAccessPolicyWindow apw{};    /* cudaStreamSetAttribute: accepted, no effect on results */
    int sync_policy = 0;
};

struct Event {
    int device;
    unsigned flags;
    bool recorded;         /* cudaEventRecord was called at least once */
    uint64_t rec_seq;      /* the unit of work that completes it */
    bool complete;
    int64_t t_ns;          /* when its record ran (steady clock) */
    unsigned long long cap_id = 0;   /* last recorded in this stream capture (graph.cpp; 0: none) */
    std::vector<GNode *> cap_nodes;  /* ... after these nodes */
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
    bool free_queued;    /* cudaFreeAsync queued its release */
    struct MemPool *pool = nullptr;   /* cudaMallocAsync / cudaMallocFromPoolAsync: the pool it came from */
};

/* A stream-ordered memory pool (Runtime API, "Stream Ordered Memory
   Allocator"): its attributes and what it holds. Only each device's default
   pool exists (cudaMemPoolCreate is not emulated). */
struct MemPool {
    int device;
    uint64_t release_threshold = 0;
    int reuse_follow_events = 1, reuse_opportunistic = 1, reuse_internal = 1;
    uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
    std::vector<int> access;   /* cudaMemAccessFlags per device (cudaMemPoolSetAccess); its own device read-write */
};

struct Device {
    Profile prof;
    std::atomic<int> sticky{0};   /* cudaError_t, 0 = none */
    size_t used = 0;
    Stream legacy{};
    unsigned flags = 0;
    std::vector<bool> peer;       /* peer access enabled to device i */
    size_t limits[16] = {};
    MemPool pool{};               /* the default memory pool (its device is set at start-up) */
    MemPool *cur_pool = nullptr;  /* cudaDeviceSetMemPool (null: the default) */
};

struct Counters {
    std::atomic<uint64_t> kernel_launches{0}, library_calls{0}, library_api_calls{0}, host_waits{0}, mallocs{0}, frees{0},
        host_allocs{0}, host_frees{0}, memcpy_calls{0}, memset_calls{0}, h2d_bytes{0}, d2h_bytes{0}, d2d_bytes{0},
        graph_launches{0}, graph_kernels{0}, runtime_api_calls{0}, graph_library_calls{0},
        graph_memsets{0}, graph_memcpys{0};
};

/* Per-kernel attributes, keyed by the kernel's address: what nvcc-emu
   registered from the source (the compiled image's attributes) and what
   cudaFuncSetAttribute set. */
struct FuncAttr {
    int max_dynamic_smem = -1;    /* -1: the default limit */
    int carveout = -1;
    size_t seen_smem = 0;         /* static __shared__ bytes seen in its runs so far */
    bool registered = false;      /* known from the source (kernel_register) */
    const char *name = nullptr;
    int max_threads = 0;          /* __launch_bounds__ (0: none) */
    size_t reg_smem = 0;          /* static __shared__ bytes from the source */
    bool nonportable_cluster = false;   /* cudaFuncAttributeNonPortableClusterSizeAllowed */
    cudaError_t (*launcher)(const void *, dim3, dim3, void **, size_t, cudaStream_t, int) = nullptr;
    /* static shared memory: the source's count, or what runs showed where the rewrite could not size it */
    size_t static_smem() const { return reg_smem > seen_smem ? reg_smem : seen_smem; }
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
    bool mem_open = false;                       /* device memory readable by the host (work is running) */
    Counters counters;
    std::mutex exec_mu;                          /* one executor at a time */
};
State &state();

/* >>symbols (registry.cpp) */
const int kMaxDevices = 16;                      /* devices GPUDL_EMU_DEVICE may list */
struct SymbolInfo {
    void *shadow;                                /* the host's variable, the symbol's handle */
    size_t size;
    const char *name;
    bool is_constant;
};
extern thread_local int t_code_device;           /* the device whose kernel this host thread runs, -1: host code */
size_t symbol_count();
const SymbolInfo *symbol_find(const void *shadow);   /* null: not a registered variable */
void *symbol_copy_on(const SymbolInfo *s, int dev);  /* device dev's copy (made on first use) */
void symbols_ready(int dev);                     /* every variable has its copy on dev */
void symbols_reset(int dev);                     /* dev's copies hold their initialisers again (cudaDeviceReset) */

/* runtime.cpp */
void ensure_init();
/* Device memory of dev that holds bytes of init (a symbol's copy: a
   library-style internal allocation, not the program's). */
void *device_copy_of(int dev, const void *init, size_t bytes);
void device_fill(void *p, const void *init, size_t bytes);   /* writes device memory from the host side */
bool is_legacy_stream(const Stream *s);
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
struct Grid;
void run_grid(Grid &g);                          /* inside an Op: runs every block */
/* A grid queued or captured; the kernel's arguments live as long as it. */
struct GridOp;
/* Runs a grid as device code of its device (symbols resolve to that device's copies). */
void run_device_grid(GridOp &op);

/* >>graphs and stream capture (graph.cpp) */
/* The thread's stream-capture rules for an API call that is "potentially
   unsafe" during capture (cudaMalloc, synchronous copies, ...):
   cudaErrorStreamCaptureUnsupported (and the offending captures
   invalidated) where cudaThreadExchangeStreamCaptureMode's rules prohibit it. */
cudaError_t capture_unsafe_call();
/* Work about to be queued on st: cudaErrorStreamCaptureImplicit for the
   legacy stream while a blocking stream of its device captures,
   cudaErrorStreamCaptureInvalidated for a stream in an invalidated capture. */
cudaError_t capture_guard(Stream *st);
/* st is capturing: the work becomes a node after st's current dependencies. */
GNode *capture_add(Stream *st, cudaGraphNodeType type, const char *name, std::function<void()> body);
/* A synchronisation or query of st (or of the whole device when st is
   null) that capture forbids: cudaErrorStreamCaptureUnsupported, or
   cudaErrorStreamCaptureImplicit for the legacy stream; the captures
   concerned are invalidated. cudaSuccess when allowed. */
cudaError_t capture_sync_check(Stream *st, int device);
void capture_event_record(Stream *st, Event *ev);
cudaError_t capture_event_wait(Stream *st, Event *ev);
cudaError_t capture_event_check(Event *ev);   /* cudaErrorCapturedEvent for an event recorded in a capture */
/* Graph memory nodes (graph.cpp): a captured cudaMallocAsync adds an
   allocation node after st's work and returns its address; a captured
   cudaFreeAsync of such an address adds a free node. graph_alloc
   (runtime.cpp): the node's device memory. */
cudaError_t capture_mem_alloc(Stream *st, int dev, size_t size, void **out);
cudaError_t capture_mem_free(Stream *st, void *p);
cudaError_t graph_alloc(int dev, size_t size, void **out);
/* runtime.cpp: a kernel node's grid from its parameters (through the kernel's registered launcher) */
cudaError_t make_kernel_grid(const cudaKernelNodeParams *kp, std::shared_ptr<GridOp> *out);
void set_kernel_node(GNode *n, std::shared_ptr<GridOp> op, const void *func, dim3 grid, dim3 block, size_t smem);

/* Queues work on st (push_op), or, while st captures, adds it to the
   capture as a node of the given type. *seq: the unit queued, 0 when
   captured; *node: the node, null when queued. */
cudaError_t submit(int device, Stream *st, const char *name, cudaGraphNodeType type, std::function<void()> fn,
                   uint64_t *seq = nullptr, GNode **node = nullptr, uint64_t extra_dep = 0, bool always = false);

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
    int cooperative = 0;   /* cudaLaunchCooperativeKernel: every block resident at once (grid_group::sync) */
};
struct GridOp {
    Grid g;
    ~GridOp() {
        if (g.destroy) g.destroy(g.args);
    }
};
void install_signal_handlers();
size_t fiber_stack_bytes();

/* pool.cpp */
/* Runs job(participant) on min(n, workers) threads including the caller. */
void pool_run(int n, const std::function<void(int)> &job);
int pool_size();

} /* namespace cuemu */

#endif
