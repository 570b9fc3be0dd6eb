/* graph.cpp - stream capture and CUDA Graphs (CUDA Runtime API "Graph
   Management" and "Stream Management"; CUDA C++ Programming Guide "CUDA
   Graphs", its "Stream Capture", "Cross-stream Dependencies and Events",
   "Prohibited and Unhandled Operations" and "Invalidation" sections).

   The model: a graph is a set of nodes with dependencies; each node holds
   what it does when the graph runs (a kernel grid, a copy, a memset, a
   host function, a library call's work). Instantiating takes a snapshot in
   a dependency-respecting order; cudaGraphLaunch queues the whole graph on
   a stream as one unit of stream-ordered work that runs every node again.
   Work queued on a capturing stream becomes nodes instead of running
   (runtime.cpp's submit()); events recorded in a capture carry the nodes
   they stand for, so that cudaStreamWaitEvent forks other streams into the
   capture and joins them back. */
#include "state.h"
#include <cuemu.h>
#include <driver_functions.h>
#include <algorithm>
#include <stdio.h>
#include <string.h>

struct CUgraph_st {
    int device;
    std::vector<std::unique_ptr<cuemu::GNode>> nodes;
    cuemu::GNode *owner = nullptr;   /* a conditional node's body graph: that node */
};

namespace cuemu {

struct GNode {
    cudaGraph_t graph;
    cudaGraphNodeType type;
    const char *name;
    std::vector<GNode *> deps;
    std::function<void()> body;          /* what it does when the graph runs */
    /* kernel nodes */
    std::shared_ptr<GridOp> grid;        /* null for a library call's work */
    cudaKernelNodeParams kparams{};
    cudaMemsetParams mparams{};
    cudaHostNodeParams hparams{};
    cudaMemcpy3DParms cparams{};         /* memcpy nodes (a 1-D one as a 1-row, 1-slice copy) */
    cudaMemAllocNodeParams aparams{};    /* memory allocation nodes */
    void *fptr = nullptr;                /* memory free nodes */
    GNode *origin = nullptr;             /* in a clone: the node it was cloned from */
    /* conditional nodes: the parameters and the body graphs the node owns */
    cudaConditionalNodeParams cond{};
    std::vector<cudaGraph_t> bodies;
};

/* One capture sequence: the streams that take part, the graph being built. */
struct Capture {
    unsigned long long id;
    cudaGraph_t graph;
    cudaStreamCaptureMode mode;
    std::thread::id thread;
    Stream *origin;
    std::vector<Stream *> streams;
    bool invalidated = false;
    bool into_existing = false;   /* cudaStreamBeginCaptureToGraph: the graph is the caller's */
};

} /* namespace cuemu */

struct CUgraphExec_st {
    int device;
    std::vector<cuemu::GNode> nodes;                      /* copies, in an order that respects every dependency */
    std::unordered_map<const cuemu::GNode *, size_t> of;  /* the graph's node -> its copy here */
    std::vector<size_t> topo_key;                         /* per copy: its type and dependency indices, for updates */
    std::vector<unsigned long long> cond_handles;         /* conditional handles of the graph and its bodies */
};

namespace cuemu {

namespace {

/* The graph state, under state().mu; never destroyed (device work may run during exit). */
struct Graphs {
    unsigned long long capture_ids = 0;
    std::vector<Capture *> captures;                /* the active ones */
    std::unordered_set<cudaGraph_t> graphs;
    std::unordered_set<cudaGraphExec_t> execs;
};
Graphs &G() {
    static Graphs *g = new Graphs();
    return *g;
}
#define g_captures (G().captures)
#define g_graphs (G().graphs)
#define g_execs (G().execs)
thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;

void invalidate(Capture *c) { c->invalidated = true; }

/* An event's capture, while that capture is active (null otherwise). */
Capture *capture_of(const Event *ev) {
    if (!ev->cap_id) return nullptr;
    for (Capture *c : g_captures)
        if (c->id == ev->cap_id) return c;
    return nullptr;
}

/* The capture's streams leave capture mode; the capture is gone. */
void end_capture(Capture *c) {
    for (Stream *s : c->streams) {
        s->cap = nullptr;
        s->cap_tail.clear();
    }
    g_captures.erase(std::remove(g_captures.begin(), g_captures.end(), c), g_captures.end());
    delete c;
}

bool graph_ok(cudaGraph_t g) { return g && g_graphs.count(g); }
bool node_ok(cudaGraphNode_t n) {
    GNode *x = (GNode *)n;
    if (!n) return false;
    for (cudaGraph_t g : g_graphs)
        for (auto &u : g->nodes)
            if (u.get() == x) return true;
    return false;
}

GNode *add_node(cudaGraph_t g, cudaGraphNodeType type, const char *name, std::vector<GNode *> deps,
                std::function<void()> body) {
    auto n = std::make_unique<GNode>();
    n->graph = g;
    n->type = type;
    n->name = name;
    n->deps = std::move(deps);
    n->body = std::move(body);
    GNode *p = n.get();
    g->nodes.push_back(std::move(n));
    return p;
}

/* Dependencies given to a cudaGraphAdd*Node call: nodes of the same graph, no duplicates. */
cudaError_t take_deps(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n, std::vector<GNode *> *out) {
    if (n && !deps) return cudaErrorInvalidValue;
    for (size_t i = 0; i < n; i++) {
        GNode *d = (GNode *)deps[i];
        if (!node_ok(deps[i]) || d->graph != g) return cudaErrorInvalidValue;
        if (std::find(out->begin(), out->end(), d) != out->end()) return cudaErrorInvalidValue;
        out->push_back(d);
    }
    return cudaSuccess;
}

/* The nodes of g in an order where each comes after its dependencies; false on a cycle. */
bool topo_order(cudaGraph_t g, std::vector<GNode *> *out) {
    std::unordered_map<GNode *, int> state;   /* 1 visiting, 2 done */
    bool ok = true;
    std::function<void(GNode *)> visit = [&](GNode *n) {
        int &st = state[n];
        if (st == 2) return;
        if (st == 1) { ok = false; return; }
        st = 1;
        for (GNode *d : n->deps) visit(d);
        st = 2;
        out->push_back(n);
    };
    for (auto &n : g->nodes) visit(n.get());
    return ok;
}

/* Every node in from's ancestry (from included). */
void ancestry(const std::vector<GNode *> &from, std::unordered_set<GNode *> *out) {
    std::vector<GNode *> stack(from.begin(), from.end());
    while (!stack.empty()) {
        GNode *n = stack.back();
        stack.pop_back();
        if (!out->insert(n).second) continue;
        for (GNode *d : n->deps) stack.push_back(d);
    }
}

void fill_kernel_body(GNode *n) {
    std::shared_ptr<GridOp> op = n->grid;
    n->body = [op] { run_device_grid(*op); };
}

/* A graph and the body graphs its conditional nodes own. */
void destroy_graph(cudaGraph_t g) {
    for (auto &n : g->nodes)
        for (cudaGraph_t b : n->bodies) destroy_graph(b);
    g_graphs.erase(g);
    delete g;
}

/* >>conditional handles (Runtime API cudaGraphConditionalHandleCreate,
   cudaGraphSetConditional; Programming Guide "Conditional Handles"): a
   handle belongs to one graph and to at most one conditional node; its
   value is set by device code with cudaGraphSetConditional, and, with
   cudaGraphCondAssignDefault, to defaultLaunchValue when each launch of the
   graph begins (without it, the value at a launch's start is whatever it
   was). The values live with the handle: two instances of one graph running
   at the same time share them (not emulated apart). */
struct CondHandle {
    cudaGraph_t graph;
    unsigned default_value, flags;
    std::atomic<unsigned> value{0};
    bool used = false;   /* a conditional node uses it */
};
std::mutex &cond_mu() {
    static std::mutex *m = new std::mutex();
    return *m;
}
std::unordered_map<unsigned long long, CondHandle *> &cond_handles() {
    static auto *m = new std::unordered_map<unsigned long long, CondHandle *>();
    return *m;
}
CondHandle *cond_handle(unsigned long long h) {
    std::lock_guard<std::mutex> lk(cond_mu());
    auto it = cond_handles().find(h);
    return it == cond_handles().end() ? nullptr : it->second;
}

/* What running graph g's nodes does, in dependency order: each node's work;
   a conditional node's runs its body graphs by its handle's value. Node
   kinds a body may hold: kernel, empty, child graph, memset, memcpy,
   conditional (cudaConditionalNodeParams' constraints): others
   cudaErrorNotSupported. */
cudaError_t flatten(cudaGraph_t g, bool is_body, std::vector<std::function<void()>> *out,
                    std::vector<unsigned long long> *handles);
std::function<void()> conditional_body(const GNode &n, std::vector<unsigned long long> *handles, cudaError_t *err) {
    auto bodies = std::make_shared<std::vector<std::vector<std::function<void()>>>>();
    for (cudaGraph_t b : n.bodies) {
        bodies->emplace_back();
        if ((*err = flatten(b, true, &bodies->back(), handles))) return nullptr;
    }
    CondHandle *h = cond_handle(n.cond.handle);
    cudaGraphConditionalNodeType type = n.cond.type;
    int dev = n.graph->device;
    return [h, type, bodies, dev] {
        auto run = [&](size_t i) {
            for (auto &f : (*bodies)[i]) {
                if (sticky_error(dev)) return false;
                f();
            }
            return !sticky_error(dev);
        };
        unsigned v = h->value.load();
        switch (type) {
        case cudaGraphCondTypeIf:   /* body 0 when non-zero; body 1 (size 2) when zero */
            if (v) run(0);
            else if (bodies->size() == 2) run(1);
            break;
        case cudaGraphCondTypeWhile:   /* evaluated before each iteration */
            while (h->value.load() != 0)
                if (!run(0)) break;
            break;
        case cudaGraphCondTypeSwitch:   /* body v; none when v >= size */
            if (v < bodies->size()) run(v);
            break;
        }
    };
}
cudaError_t flatten(cudaGraph_t g, bool is_body, std::vector<std::function<void()>> *out,
                    std::vector<unsigned long long> *handles) {
    std::vector<GNode *> order;
    if (!topo_order(g, &order)) return cudaErrorInvalidValue;
    {
        std::lock_guard<std::mutex> lk(cond_mu());
        for (auto &kv : cond_handles())
            if (kv.second->graph == g) handles->push_back(kv.first);
    }
    for (GNode *n : order) {
        if (is_body && n->type != cudaGraphNodeTypeKernel && n->type != cudaGraphNodeTypeEmpty && n->type != cudaGraphNodeTypeGraph &&
            n->type != cudaGraphNodeTypeMemset && n->type != cudaGraphNodeTypeMemcpy && n->type != cudaGraphNodeTypeConditional) {
            fprintf(stderr, "cuemu: a %s node in a conditional node's body graph: not allowed there (cudaConditionalNodeParams)\n", n->name);
            return cudaErrorNotSupported;
        }
        if (n->type == cudaGraphNodeTypeConditional) {
            cudaError_t e = cudaSuccess;
            std::function<void()> f = conditional_body(*n, handles, &e);
            if (e) return e;
            out->push_back(std::move(f));
        } else if (n->body) {
            out->push_back(n->body);
        }
    }
    return cudaSuccess;
}

#define GRAPH_LOCK()        \
    ensure_init();          \
    State &S = state();     \
    std::lock_guard<std::recursive_mutex> lk(S.mu)

} /* namespace */

/* >>capture hooks used by runtime.cpp */
/* Programming Guide, "Prohibited and Unhandled Operations" and Runtime API,
   cudaThreadExchangeStreamCaptureMode: in mode Global a thread may not make
   potentially unsafe calls while it has a capture not begun in Relaxed mode
   or while another thread has a Global capture; in ThreadLocal only its own
   captures count; in Relaxed nothing does. */
cudaError_t capture_unsafe_call() {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (g_captures.empty() || t_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
    std::thread::id me = std::this_thread::get_id();
    bool prohibited = false;
    for (Capture *c : g_captures) {
        bool mine = c->thread == me && c->mode != cudaStreamCaptureModeRelaxed;
        bool others = t_mode == cudaStreamCaptureModeGlobal && c->thread != me && c->mode == cudaStreamCaptureModeGlobal;
        if (mine || others) {
            invalidate(c);
            prohibited = true;
        }
    }
    return prohibited ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

/* Programming Guide, "Prohibited and Unhandled Operations": while a
   blocking stream captures, using the legacy stream (which would depend on
   it) is invalid: cudaErrorStreamCaptureImplicit. "Invalidation": work
   given to a stream of an invalidated capture fails until the capture ends. */
cudaError_t capture_guard(Stream *st) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (g_captures.empty()) return cudaSuccess;
    if (st->cap) return st->cap->invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
    if (!is_legacy_stream(st)) return cudaSuccess;
    bool implicit = false;
    for (Capture *c : g_captures)
        for (Stream *s : c->streams)
            if (s->device == st->device && !(s->flags & cudaStreamNonBlocking)) {
                invalidate(c);
                implicit = true;
            }
    return implicit ? cudaErrorStreamCaptureImplicit : cudaSuccess;
}

GNode *capture_add(Stream *st, cudaGraphNodeType type, const char *name, std::function<void()> body) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    GNode *n = add_node(st->cap->graph, type, name, st->cap_tail, std::move(body));
    st->cap_tail.assign(1, n);
    return n;
}

void set_kernel_node(GNode *n, std::shared_ptr<GridOp> op, const void *func, dim3 grid, dim3 block, size_t smem) {
    n->grid = std::move(op);
    n->kparams = cudaKernelNodeParams{(void *)func, grid, block, (unsigned)smem, nullptr, nullptr};
}

/* Programming Guide, "Prohibited and Unhandled Operations": synchronising
   or querying a capturing stream, or the device while any of its streams
   captures, is invalid (cudaErrorStreamCaptureUnsupported) and invalidates
   the capture; the legacy stream while a blocking stream captures is
   cudaErrorStreamCaptureImplicit. */
cudaError_t capture_sync_check(Stream *st, int device) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (g_captures.empty()) return cudaSuccess;
    if (st && st->cap) {
        invalidate(st->cap);
        return cudaErrorStreamCaptureUnsupported;
    }
    if (st && !is_legacy_stream(st)) return cudaSuccess;
    if (st) return capture_guard(st);
    bool any = false;
    for (Capture *c : g_captures)
        for (Stream *s : c->streams)
            if (s->device == device) {
                invalidate(c);
                any = true;
            }
    return any ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

void capture_event_record(Stream *st, Event *ev) {
    ev->cap_id = st->cap->id;
    ev->cap_nodes = st->cap_tail;
}

/* Programming Guide, "Cross-stream Dependencies and Events": waiting on an
   event recorded in a capture forks the waiting stream into that capture
   (its next work depends on the event's nodes), or joins it back. */
cudaError_t capture_event_wait(Stream *st, Event *ev) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (st->cap && st->cap->invalidated) return cudaErrorStreamCaptureInvalidated;
    Capture *c = capture_of(ev);
    if (!c) {
        if (ev->cap_id) return cudaErrorStreamCaptureIsolation;   /* recorded in a capture that has ended */
        return cudaSuccess;   /* an event from outside the capture: no node depends on it here */
    }
    if (c->invalidated) return cudaErrorStreamCaptureInvalidated;
    if (st->cap && st->cap != c) {   /* two captures would merge: not emulated */
        invalidate(c);
        invalidate(st->cap);
        return cudaErrorStreamCaptureMerge;
    }
    if (!st->cap) {
        if (is_legacy_stream(st)) {
            invalidate(c);
            return cudaErrorStreamCaptureImplicit;
        }
        st->cap = c;
        st->cap_tail = ev->cap_nodes;
        c->streams.push_back(st);
        return cudaSuccess;
    }
    for (GNode *n : ev->cap_nodes)
        if (std::find(st->cap_tail.begin(), st->cap_tail.end(), n) == st->cap_tail.end()) st->cap_tail.push_back(n);
    return cudaSuccess;
}

/* Programming Guide: "It is invalid to synchronize or query the execution
   status of ... a captured event" (cudaErrorCapturedEvent); during the
   capture this invalidates it. */
cudaError_t capture_event_check(Event *ev) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (!ev->cap_id) return cudaSuccess;
    if (Capture *c = capture_of(ev)) invalidate(c);
    return cudaErrorCapturedEvent;
}

} /* namespace cuemu */

using namespace cuemu;

namespace {
cudaError_t stream_of(cudaStream_t s, Stream **out, int *dev) {
    cudaError_t e;
    *out = resolve_stream(s, dev, &e);
    return *out ? cudaSuccess : e;
}
/* records e as the thread's last error */
cudaError_t fail(cudaError_t e) { return set_error(e); }
} /* namespace */

/* >>stream capture (Runtime API, "Stream Management") */
extern "C" cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (sticky_error(-1)) return fail(sticky_error(-1));
    Stream *st;
    int dev;
    cudaError_t e = stream_of(stream, &st, &dev);
    if (e) return fail(e);
    if ((int)mode < 0 || (int)mode > 2) return fail(cudaErrorInvalidValue);
    /* "Capture may not be initiated if stream is cudaStreamLegacy" */
    if (is_legacy_stream(st)) return fail(cudaErrorStreamCaptureUnsupported);
    if (st->cap) return fail(cudaErrorIllegalState);
    Capture *c = new Capture();
    c->id = ++G().capture_ids;
    c->graph = new CUgraph_st{dev, {}};
    g_graphs.insert(c->graph);
    c->mode = mode;
    c->thread = std::this_thread::get_id();
    c->origin = st;
    c->streams.push_back(st);
    st->cap = c;
    st->cap_tail.clear();
    g_captures.push_back(c);
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) { CUEMU_API_CALL();
    GRAPH_LOCK();
    Stream *st;
    int dev;
    cudaError_t e = stream_of(stream, &st, &dev);
    if (e) return fail(e);
    Capture *c = st->cap;
    /* (a capture into an existing graph may pass pGraph null: NVIDIA's
       graphConditionalNodes sample does) */
    if (!pGraph && !(c && c->into_existing)) return fail(cudaErrorInvalidValue);
    if (!c) return fail(cudaErrorIllegalState);
    /* "cudaErrorStreamCaptureWrongThread: ... ended in a different thread"
       (modes Global and ThreadLocal; Relaxed captures may end anywhere) */
    if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
        return fail(cudaErrorStreamCaptureWrongThread);
    /* the capture must end in the stream where it began */
    if (st != c->origin) {
        invalidate(c);
        return fail(cudaErrorStreamCaptureUnmatched);
    }
    /* every stream forked into the capture must have been joined back */
    bool unjoined = false;
    if (!c->invalidated) {
        std::unordered_set<GNode *> joined;
        ancestry(st->cap_tail, &joined);
        for (Stream *s : c->streams)
            for (GNode *n : s->cap_tail)
                if (!joined.count(n)) unjoined = true;
    }
    cudaGraph_t graph = c->graph;
    bool invalidated = c->invalidated, owned = !c->into_existing;
    end_capture(c);
    if (pGraph) *pGraph = nullptr;
    if (invalidated || unjoined) {
        if (owned) {
            g_graphs.erase(graph);
            delete graph;
        }
        return fail(unjoined ? cudaErrorStreamCaptureUnjoined : cudaErrorStreamCaptureInvalidated);
    }
    if (pGraph) *pGraph = graph;
    return cudaSuccess;
}

/* Runtime API, cudaStreamBeginCaptureToGraph: as cudaStreamBeginCapture,
   but the work becomes nodes of an existing graph, after the given
   dependencies (edge data: only plain edges are emulated). */
extern "C" cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                                    const cudaGraphEdgeData *edges, size_t ndeps,
                                                    enum cudaStreamCaptureMode mode) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (sticky_error(-1)) return fail(sticky_error(-1));
    Stream *st;
    int dev;
    cudaError_t e = stream_of(stream, &st, &dev);
    if (e) return fail(e);
    if ((int)mode < 0 || (int)mode > 2 || !graph_ok(graph)) return fail(cudaErrorInvalidValue);
    if (is_legacy_stream(st)) return fail(cudaErrorStreamCaptureUnsupported);
    if (st->cap) return fail(cudaErrorIllegalState);
    for (Capture *c : g_captures)
        if (c->graph == graph) return fail(cudaErrorIllegalState);
    if (edges)
        for (size_t i = 0; i < ndeps; i++)
            if (edges[i].from_port || edges[i].to_port || edges[i].type) return fail(cudaErrorNotSupported);
    std::vector<GNode *> d;
    if ((e = take_deps(graph, deps, ndeps, &d))) return fail(e);
    Capture *c = new Capture();
    c->id = ++G().capture_ids;
    c->graph = graph;
    c->into_existing = true;
    c->mode = mode;
    c->thread = std::this_thread::get_id();
    c->origin = st;
    c->streams.push_back(st);
    st->cap = c;
    st->cap_tail = d;
    g_captures.push_back(c);
    return cudaSuccess;
}

/* Runtime API, cudaStreamUpdateCaptureDependencies: the nodes the stream's
   next captured work depends on: flags cudaStreamAddCaptureDependencies
   adds to them, cudaStreamSetCaptureDependencies replaces them; the nodes
   must be of the capture's graph; the stream must be capturing
   (cudaErrorIllegalState). */
extern "C" cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *deps,
                                                          const cudaGraphEdgeData *edges, size_t ndeps,
                                                          unsigned int flags) { CUEMU_API_CALL();
    GRAPH_LOCK();
    Stream *st;
    int dev;
    cudaError_t e = stream_of(stream, &st, &dev);
    if (e) return fail(e);
    if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies) return fail(cudaErrorInvalidValue);
    if (!st->cap) return fail(cudaErrorIllegalState);
    if (st->cap->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
    if (edges)
        for (size_t i = 0; i < ndeps; i++)
            if (edges[i].from_port || edges[i].to_port || edges[i].type) return fail(cudaErrorNotSupported);
    std::vector<GNode *> d;
    if ((e = take_deps(st->cap->graph, deps, ndeps, &d))) return fail(e);
    if (flags == cudaStreamSetCaptureDependencies) st->cap_tail = d;
    else
        for (GNode *n : d)
            if (std::find(st->cap_tail.begin(), st->cap_tail.end(), n) == st->cap_tail.end()) st->cap_tail.push_back(n);
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pStatus) { CUEMU_API_CALL();
    GRAPH_LOCK();
    Stream *st;
    int dev;
    cudaError_t e = stream_of(stream, &st, &dev);
    if (e) return fail(e);
    if (!pStatus) return fail(cudaErrorInvalidValue);
    if (is_legacy_stream(st)) {   /* the legacy stream while a blocking stream captures: implicit */
        if ((e = capture_guard(st))) return fail(e);
    }
    *pStatus = !st->cap ? cudaStreamCaptureStatusNone
               : st->cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                               unsigned long long *id, cudaGraph_t *graph,
                                               const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                               size_t *ndeps) { CUEMU_API_CALL();
    GRAPH_LOCK();
    Stream *st;
    int dev;
    cudaError_t e = stream_of(stream, &st, &dev);
    if (e) return fail(e);
    if (!status) return fail(cudaErrorInvalidValue);
    if (is_legacy_stream(st) && (e = capture_guard(st))) return fail(e);
    Capture *c = st->cap;
    *status = !c ? cudaStreamCaptureStatusNone : c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    bool active = c && !c->invalidated;
    if (id && active) *id = c->id;
    if (graph) *graph = active ? c->graph : nullptr;
    if (deps) *deps = active ? (const cudaGraphNode_t *)st->cap_tail.data() : nullptr;
    if (edges) *edges = nullptr;   /* all edges plain */
    if (ndeps) *ndeps = active ? st->cap_tail.size() : 0;
    return cudaSuccess;
}

extern "C" cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) { CUEMU_API_CALL();
    if (!mode || (int)*mode < 0 || (int)*mode > 2) return fail(cudaErrorInvalidValue);
    cudaStreamCaptureMode old = t_mode;
    t_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

/* >>graphs (Runtime API, "Graph Management") */
extern "C" cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pGraph || flags) return fail(cudaErrorInvalidValue);
    *pGraph = new CUgraph_st{current_device(), {}};
    g_graphs.insert(*pGraph);
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphDestroy(cudaGraph_t graph) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!graph_ok(graph)) return fail(cudaErrorInvalidValue);
    for (Capture *c : g_captures)
        if (c->graph == graph) return fail(cudaErrorIllegalState);   /* still being captured into */
    if (graph->owner) return fail(cudaErrorInvalidValue);   /* a conditional node's body: its node owns it */
    destroy_graph(graph);
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                                             const struct cudaKernelNodeParams *p) { CUEMU_API_CALL();
    std::shared_ptr<GridOp> op;
    {
        GRAPH_LOCK();
        if (!pNode || !graph_ok(graph) || !p) return fail(cudaErrorInvalidValue);
    }
    cudaError_t e = make_kernel_grid(p, &op);   /* outside the lock: the launcher takes it itself */
    if (e) return fail(e);
    GRAPH_LOCK();
    std::vector<GNode *> d;
    if ((e = take_deps(graph, deps, ndeps, &d))) return fail(e);
    GNode *n = add_node(graph, cudaGraphNodeTypeKernel, "kernel", d, nullptr);
    set_kernel_node(n, op, p->func, p->gridDim, p->blockDim, p->sharedMemBytes);
    n->kparams.kernelParams = p->kernelParams;
    fill_kernel_body(n);
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!p || !node_ok(node) || n->type != cudaGraphNodeTypeKernel) return fail(cudaErrorInvalidValue);
    *p = n->kparams;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const struct cudaKernelNodeParams *p) { CUEMU_API_CALL();
    {
        GRAPH_LOCK();
        GNode *n = (GNode *)node;
        if (!p || !node_ok(node) || n->type != cudaGraphNodeTypeKernel) return fail(cudaErrorInvalidValue);
    }
    std::shared_ptr<GridOp> op;
    cudaError_t e = make_kernel_grid(p, &op);
    if (e) return fail(e);
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    set_kernel_node(n, op, p->func, p->gridDim, p->blockDim, p->sharedMemBytes);
    n->kparams.kernelParams = p->kernelParams;
    fill_kernel_body(n);
    return cudaSuccess;
}

/* >>memcpy nodes (Runtime API, Graph Management: cudaGraphAddMemcpyNode,
   cudaGraphAddMemcpyNode1D, cudaGraphMemcpyNodeGetParams / SetParams /
   SetParams1D, cudaGraphExecMemcpyNodeSetParams / SetParams1D). A node
   holds a cudaMemcpy3DParms, read as cudaMemcpy3D reads it (linear memory
   through cudaPitchedPtr, extents and x positions in bytes, slice z at
   z * pitch * ysize); a 1-D node is the copy of one row of count bytes.
   CUDA arrays are not emulated (refused, as cudaMemcpy3D does here). The
   kind must agree with the memory, as for cudaMemcpy; device ranges are
   checked again when the graph runs. */
namespace {
bool memcpy_side_ok(const void *p, size_t extent, bool want_device, cudaMemcpyKind kind) {
    Region r;
    MemKind k = classify(p, &r);
    if (k == MEM_FREED) return false;
    if (k == MEM_DEVICE && (uintptr_t)p + extent > (uintptr_t)r.base + r.size) return false;
    if (kind == cudaMemcpyDefault) return true;
    if (want_device) return k != MEM_UNKNOWN;   /* device, pinned or managed memory */
    return k != MEM_DEVICE;
}

/* cudaErrorInvalidValue etc. for params a copy cannot take; cudaSuccess otherwise */
cudaError_t check_memcpy_params(const cudaMemcpy3DParms *p) {
    if (!p) return cudaErrorInvalidValue;
    if ((int)p->kind < 0 || (int)p->kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
    if (p->srcArray || p->dstArray) {
        static std::atomic<int> said{0};
        if (said++ < 1) fprintf(stderr, "cuemu: a graph memcpy node with a CUDA array (srcArray/dstArray) is not emulated\n");
        return cudaErrorNotSupported;
    }
    if (!p->srcPtr.ptr || !p->dstPtr.ptr) return cudaErrorInvalidValue;
    const cudaExtent &x = p->extent;
    if (x.width == 0 || x.height == 0 || x.depth == 0) return cudaSuccess;
    if (p->srcPos.x + x.width > p->srcPtr.pitch || p->dstPos.x + x.width > p->dstPtr.pitch) return cudaErrorInvalidPitchValue;
    if (x.depth > 1 && (p->srcPos.y + x.height > p->srcPtr.ysize || p->dstPos.y + x.height > p->dstPtr.ysize))
        return cudaErrorInvalidValue;
    bool dst_dev = p->kind == cudaMemcpyHostToDevice || p->kind == cudaMemcpyDeviceToDevice;
    bool src_dev = p->kind == cudaMemcpyDeviceToHost || p->kind == cudaMemcpyDeviceToDevice;
    size_t sslice = p->srcPtr.pitch * p->srcPtr.ysize, dslice = p->dstPtr.pitch * p->dstPtr.ysize;
    const char *s0 = (const char *)p->srcPtr.ptr + p->srcPos.z * sslice + p->srcPos.y * p->srcPtr.pitch + p->srcPos.x;
    const char *d0 = (const char *)p->dstPtr.ptr + p->dstPos.z * dslice + p->dstPos.y * p->dstPtr.pitch + p->dstPos.x;
    size_t sext = (x.depth - 1) * sslice + (x.height - 1) * p->srcPtr.pitch + x.width;
    size_t dext = (x.depth - 1) * dslice + (x.height - 1) * p->dstPtr.pitch + x.width;
    if (!memcpy_side_ok(s0, sext, src_dev, p->kind) || !memcpy_side_ok(d0, dext, dst_dev, p->kind)) return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* A memcpy node made by stream capture keeps no cudaMemcpy3DParms here:
   reading or changing its parameters is refused, not answered with zeros. */
cudaError_t captured_memcpy_params() {
    static std::atomic<int> said{0};
    if (said++ < 1) fprintf(stderr, "cuemu: the parameters of a memcpy node made by stream capture are not emulated (get/set params)\n");
    return cudaErrorNotSupported;
}

cudaMemcpy3DParms params_1d(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
    cudaMemcpy3DParms p{};
    p.srcPtr = make_cudaPitchedPtr((void *)src, count, count, 1);
    p.dstPtr = make_cudaPitchedPtr(dst, count, count, 1);
    p.extent = make_cudaExtent(count, 1, 1);
    p.kind = kind;
    return p;
}

bool is_1d(const cudaMemcpy3DParms &p) { return p.extent.height == 1 && p.extent.depth == 1; }

void fill_memcpy_body(GNode *n, int dev, const cudaMemcpy3DParms &p) {
    n->cparams = p;
    n->body = [p, dev] {
        const cudaExtent &x = p.extent;
        size_t sslice = p.srcPtr.pitch * p.srcPtr.ysize, dslice = p.dstPtr.pitch * p.dstPtr.ysize;
        for (size_t z = 0; z < x.depth; z++)
            for (size_t y = 0; y < x.height; y++) {
                const char *from = (const char *)p.srcPtr.ptr + (p.srcPos.z + z) * sslice + (p.srcPos.y + y) * p.srcPtr.pitch + p.srcPos.x;
                char *to = (char *)p.dstPtr.ptr + (p.dstPos.z + z) * dslice + (p.dstPos.y + y) * p.dstPtr.pitch + p.dstPos.x;
                std::string why;
                Region r;
                bool to_dev = classify(to, &r) == MEM_DEVICE;
                if ((classify(from, &r) == MEM_DEVICE && !device_range(dev, from, x.width, &why)) ||
                    (to_dev && !device_range(dev, to, x.width, &why))) {
                    fault(cudaErrorIllegalAddress, "graph memcpy node: %s", why.c_str());
                    return;
                }
                memmove(to, from, x.width);
                if (to_dev) san_written(to, x.width);
            }
    };
}

cudaError_t add_memcpy_node(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                            const cudaMemcpy3DParms *p) {
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph)) return fail(cudaErrorInvalidValue);
    cudaError_t e = check_memcpy_params(p);
    if (e) return fail(e);
    std::vector<GNode *> d;
    if ((e = take_deps(graph, deps, ndeps, &d))) return fail(e);
    GNode *n = add_node(graph, cudaGraphNodeTypeMemcpy, "memcpy", d, nullptr);
    fill_memcpy_body(n, graph->device, *p);
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

cudaError_t set_memcpy_node(cudaGraphNode_t node, const cudaMemcpy3DParms *p) {
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!node_ok(node) || n->type != cudaGraphNodeTypeMemcpy) return fail(cudaErrorInvalidValue);
    cudaError_t e = check_memcpy_params(p);
    if (e) return fail(e);
    fill_memcpy_body(n, n->graph->device, *p);
    return cudaSuccess;
}

/* cudaGraphExecMemcpyNodeSetParams: "Both the instantiation-time memory
   operands and the memory operands in pNodeParams must be 1-dimensional.
   Zero-length operations are not supported"; the operands' memory may not
   move to another device or kind of memory (cudaErrorInvalidValue). */
bool same_mapping(const void *a, const void *b) {
    Region ra, rb;
    MemKind ka = classify(a, &ra), kb = classify(b, &rb);
    return ka == kb && (ka != MEM_DEVICE || ra.device == rb.device);
}
cudaError_t exec_set_memcpy_node(cudaGraphExec_t exec, cudaGraphNode_t node, const cudaMemcpy3DParms *p) {
    GRAPH_LOCK();
    if (!exec || !g_execs.count(exec)) return fail(cudaErrorInvalidValue);
    auto it = exec->of.find((GNode *)node);
    if (it == exec->of.end() || exec->nodes[it->second].type != cudaGraphNodeTypeMemcpy) return fail(cudaErrorInvalidValue);
    GNode &n = exec->nodes[it->second];
    if (!n.cparams.srcPtr.ptr) return fail(captured_memcpy_params());
    cudaError_t e = check_memcpy_params(p);
    if (e) return fail(e);
    const cudaMemcpy3DParms &old = n.cparams;
    if (!is_1d(old) || !is_1d(*p) || !p->extent.width || !same_mapping(old.srcPtr.ptr, p->srcPtr.ptr) ||
        !same_mapping(old.dstPtr.ptr, p->dstPtr.ptr))
        return fail(cudaErrorInvalidValue);
    fill_memcpy_body(&n, exec->device, *p);
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                                             const struct cudaMemcpy3DParms *p) { CUEMU_API_CALL();
    return add_memcpy_node(pNode, graph, deps, ndeps, p);
}

extern "C" cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                               size_t ndeps, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    cudaMemcpy3DParms p = params_1d(dst, src, count, kind);
    return add_memcpy_node(pNode, graph, deps, ndeps, &p);
}

extern "C" cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, struct cudaMemcpy3DParms *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!p || !node_ok(node) || n->type != cudaGraphNodeTypeMemcpy) return fail(cudaErrorInvalidValue);
    if (!n->cparams.srcPtr.ptr) return fail(captured_memcpy_params());
    *p = n->cparams;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const struct cudaMemcpy3DParms *p) { CUEMU_API_CALL();
    return set_memcpy_node(node, p);
}

extern "C" cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void *dst, const void *src, size_t count,
                                                     enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    cudaMemcpy3DParms p = params_1d(dst, src, count, kind);
    return set_memcpy_node(node, &p);
}

extern "C" cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                       const struct cudaMemcpy3DParms *p) { CUEMU_API_CALL();
    return exec_set_memcpy_node(exec, node, p);
}

extern "C" cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node, void *dst, const void *src,
                                                         size_t count, enum cudaMemcpyKind kind) { CUEMU_API_CALL();
    cudaMemcpy3DParms p = params_1d(dst, src, count, kind);
    return exec_set_memcpy_node(exec, node, &p);
}

extern "C" cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                                             const struct cudaMemsetParams *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph) || !p || !p->dst || !p->width || !p->height) return fail(cudaErrorInvalidValue);
    /* elementSize "must be 1, 2, or 4" */
    if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return fail(cudaErrorInvalidValue);
    size_t row = p->width * p->elementSize;
    if (p->height > 1 && p->pitch < row) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    int dev = graph->device;
    cudaMemsetParams m = *p;
    GNode *n = add_node(graph, cudaGraphNodeTypeMemset, "memset", d, [m, row, dev] {
        for (size_t r = 0; r < m.height; r++) {
            char *base = (char *)m.dst + r * (m.height > 1 ? m.pitch : 0);
            std::string why;
            if (!device_range(dev, base, row, &why)) {
                fault(cudaErrorIllegalAddress, "graph memset node: %s", why.c_str());
                return;
            }
            for (size_t i = 0; i < m.width; i++) memcpy(base + i * m.elementSize, &m.value, m.elementSize);
            san_written(base, row);
        }
    });
    n->mparams = m;
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!p || !node_ok(node) || n->type != cudaGraphNodeTypeMemset) return fail(cudaErrorInvalidValue);
    *p = n->mparams;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                                           const struct cudaHostNodeParams *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph) || !p || !p->fn) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    cudaHostFn_t fn = p->fn;
    void *user = p->userData;
    GNode *n = add_node(graph, cudaGraphNodeTypeHost, "host function", d, [fn, user] { fn(user); });
    n->hparams = *p;
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, struct cudaHostNodeParams *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!p || !node_ok(node) || n->type != cudaGraphNodeTypeHost) return fail(cudaErrorInvalidValue);
    *p = n->hparams;
    return cudaSuccess;
}

/* >>memory nodes (CUDA C++ Programming Guide, "Graph Memory Nodes";
   Runtime API cudaGraphAddMemAllocNode / cudaGraphAddMemFreeNode): the
   allocation's address is fixed when the node is added ("dptr: out"); the
   pool properties must say pinned device memory of a valid device with no
   export handle types ("IPC is not supported"); each time the graph runs
   the allocation node hands out memory with undefined contents (all one
   bits, as fresh device memory here). A free node takes an address a
   memory allocation node returned. The memory is the emulator's device
   memory from the node's creation on (a GPU maps it while the graph runs),
   so an access after the free node is not caught here. */
namespace {
struct GraphMem {
    std::unordered_set<void *> live;   /* addresses from memory allocation nodes */
    uint64_t used = 0, used_high = 0;
};
GraphMem &GM() {
    static GraphMem *g = new GraphMem();
    return *g;
}
/* An allocation node's work: counts the memory as the graphs' (once, at the
   node's creation) and, each time the graph runs, gives it undefined
   contents (all one bits). */
std::function<void()> mem_alloc_body(void *mem, size_t n, int dev) {
    GM().live.insert(mem);
    GM().used += n;
    if (GM().used > GM().used_high) GM().used_high = GM().used;
    return [mem, n, dev] {
        /* freed outside the graph (cudaFree / cudaFreeAsync) and the graph runs again: a GPU maps the same
           address again; the emulator cannot, and says so */
        if (!device_range(dev, mem, n)) {
            fault(cudaErrorNotSupported, "graph memory allocation node: its memory (%p) was freed outside the graph and the "
                  "graph runs again: re-allocating a graph allocation at its address is not emulated", mem);
            return;
        }
        memset(mem, 0xff, n);   /* device memory: accessible while device work runs */
    };
}
} /* namespace */

extern "C" cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                               size_t ndeps, struct cudaMemAllocNodeParams *p) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph) || !p || !p->bytesize) return fail(cudaErrorInvalidValue);
    const cudaMemPoolProps &pp = p->poolProps;
    if (pp.allocType != cudaMemAllocationTypePinned || pp.handleTypes != cudaMemHandleTypeNone ||
        pp.location.type != cudaMemLocationTypeDevice || pp.location.id < 0 || pp.location.id >= device_count())
        return fail(cudaErrorInvalidValue);
    if (p->accessDescCount && !p->accessDescs) return fail(cudaErrorInvalidValue);
    for (size_t i = 0; i < p->accessDescCount; i++) {
        const cudaMemAccessDesc &a = p->accessDescs[i];
        if (a.location.type != cudaMemLocationTypeDevice || a.location.id < 0 || a.location.id >= device_count() ||
            (a.flags != cudaMemAccessFlagsProtNone && a.flags != cudaMemAccessFlagsProtRead &&
             a.flags != cudaMemAccessFlagsProtReadWrite))
            return fail(cudaErrorInvalidValue);
    }
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    void *mem = nullptr;
    if ((e = graph_alloc(pp.location.id, p->bytesize, &mem))) return fail(e);
    GNode *node = add_node(graph, cudaGraphNodeTypeMemAlloc, "memory allocation", d,
                           mem_alloc_body(mem, p->bytesize, pp.location.id));
    p->dptr = mem;
    node->aparams = *p;
    node->aparams.accessDescs = nullptr;   /* the caller's array need not outlive the call */
    node->aparams.accessDescCount = 0;
    *pNode = (cudaGraphNode_t)node;
    return cudaSuccess;
}

/* the captured forms (state.h) */
cudaError_t cuemu::capture_mem_alloc(Stream *st, int dev, size_t size, void **out) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    void *mem = nullptr;
    cudaError_t e = graph_alloc(dev, size, &mem);
    if (e) return e;
    GNode *node = capture_add(st, cudaGraphNodeTypeMemAlloc, "memory allocation", mem_alloc_body(mem, size, dev));
    node->aparams.poolProps.allocType = cudaMemAllocationTypePinned;
    node->aparams.poolProps.location.type = cudaMemLocationTypeDevice;
    node->aparams.poolProps.location.id = dev;
    node->aparams.bytesize = size;
    node->aparams.dptr = mem;
    *out = mem;
    return cudaSuccess;
}
cudaError_t cuemu::capture_mem_free(Stream *st, void *p) {
    State &S = state();
    std::lock_guard<std::recursive_mutex> lk(S.mu);
    if (!GM().live.count(p)) return cudaErrorInvalidValue;   /* not a graph allocation */
    GNode *node = capture_add(st, cudaGraphNodeTypeMemFree, "memory free", nullptr);
    node->fptr = p;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, struct cudaMemAllocNodeParams *out) { CUEMU_API_CALL();
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!out || !node_ok(node) || n->type != cudaGraphNodeTypeMemAlloc) return fail(cudaErrorInvalidValue);
    *out = n->aparams;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                              size_t ndeps, void *dptr) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph) || !dptr || !GM().live.count(dptr)) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    GNode *node = add_node(graph, cudaGraphNodeTypeMemFree, "memory free", d, nullptr);
    node->fptr = dptr;
    *pNode = (cudaGraphNode_t)node;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out) { CUEMU_API_CALL();
    GRAPH_LOCK();
    GNode *n = (GNode *)node;
    if (!dptr_out || !node_ok(node) || n->type != cudaGraphNodeTypeMemFree) return fail(cudaErrorInvalidValue);
    memcpy(dptr_out, &n->fptr, sizeof(void *));
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGraphMemTrim(int device) { CUEMU_API_CALL();
    ensure_init();
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    return cudaSuccess;
}

/* cuuint64_t values; the high-water marks may only be reset to 0 */
extern "C" cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    if (!value) return fail(cudaErrorInvalidValue);
    uint64_t v;
    switch (attr) {
    case cudaGraphMemAttrUsedMemCurrent: case cudaGraphMemAttrReservedMemCurrent: v = GM().used; break;
    case cudaGraphMemAttrUsedMemHigh: case cudaGraphMemAttrReservedMemHigh: v = GM().used_high; break;
    default: return fail(cudaErrorInvalidValue);
    }
    memcpy(value, &v, sizeof v);
    return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    if (!value) return fail(cudaErrorInvalidValue);
    uint64_t v;
    memcpy(&v, value, sizeof v);
    if ((attr != cudaGraphMemAttrUsedMemHigh && attr != cudaGraphMemAttrReservedMemHigh) || v) return fail(cudaErrorInvalidValue);
    GM().used_high = GM().used;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph)) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    *pNode = (cudaGraphNode_t)add_node(graph, cudaGraphNodeTypeEmpty, "empty", d, nullptr);
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                                  size_t ndeps, cudaEvent_t event) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph) || !event || !S.events.count((Event *)event)) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    Event *ev = (Event *)event;
    *pNode = (cudaGraphNode_t)add_node(graph, cudaGraphNodeTypeEventRecord, "event record", d, [ev] { ev->t_ns = now_ns(); });
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                                size_t ndeps, cudaEvent_t event) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pNode || !graph_ok(graph) || !event || !S.events.count((Event *)event)) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    /* the graph runs as one unit after the stream's earlier work: the wait is already met in issue order */
    *pNode = (cudaGraphNode_t)add_node(graph, cudaGraphNodeTypeWaitEvent, "event wait", d, nullptr);
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                               const cudaGraphEdgeData *edgeData, size_t n) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!graph_ok(graph) || (n && (!from || !to))) return fail(cudaErrorInvalidValue);
    for (size_t i = 0; i < n; i++) {
        GNode *a = (GNode *)from[i], *b = (GNode *)to[i];
        if (!node_ok(from[i]) || !node_ok(to[i]) || a->graph != graph || b->graph != graph || a == b)
            return fail(cudaErrorInvalidValue);
        if (edgeData && (edgeData[i].from_port || edgeData[i].to_port || edgeData[i].type)) return fail(cudaErrorNotSupported);
        if (std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end()) return fail(cudaErrorInvalidValue);   /* a duplicate edge */
    }
    for (size_t i = 0; i < n; i++) ((GNode *)to[i])->deps.push_back((GNode *)from[i]);
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pType || !node_ok(node)) return fail(cudaErrorInvalidValue);
    *pType = ((GNode *)node)->type;
    return cudaSuccess;
}

/* nodes null: *num is the count; otherwise up to *num are written and *num is how many */
extern "C" cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *num) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!graph_ok(graph) || !num) return fail(cudaErrorInvalidValue);
    if (!nodes) {
        *num = graph->nodes.size();
        return cudaSuccess;
    }
    size_t k = std::min(*num, graph->nodes.size());
    for (size_t i = 0; i < k; i++) nodes[i] = (cudaGraphNode_t)graph->nodes[i].get();
    for (size_t i = k; i < *num; i++) nodes[i] = nullptr;
    *num = k;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *roots, size_t *num) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!graph_ok(graph) || !num) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> r;
    for (auto &n : graph->nodes)
        if (n->deps.empty()) r.push_back(n.get());
    if (!roots) {
        *num = r.size();
        return cudaSuccess;
    }
    size_t k = std::min(*num, r.size());
    for (size_t i = 0; i < k; i++) roots[i] = (cudaGraphNode_t)r[i];
    for (size_t i = k; i < *num; i++) roots[i] = nullptr;
    *num = k;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *deps, cudaGraphEdgeData *edges,
                                                   size_t *num) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!node_ok(node) || !num) return fail(cudaErrorInvalidValue);
    GNode *n = (GNode *)node;
    if (!deps) {
        *num = n->deps.size();
        return cudaSuccess;
    }
    size_t k = std::min(*num, n->deps.size());
    for (size_t i = 0; i < k; i++) {
        deps[i] = (cudaGraphNode_t)n->deps[i];
        if (edges) memset(&edges[i], 0, sizeof edges[i]);
    }
    *num = k;
    return cudaSuccess;
}

extern "C" cudaError_t cudaGraphClone(cudaGraph_t *pClone, cudaGraph_t original) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pClone || !graph_ok(original)) return fail(cudaErrorInvalidValue);
    for (auto &n : original->nodes)
        if (n->type == cudaGraphNodeTypeConditional) {
            fprintf(stderr, "cuemu: cudaGraphClone of a graph with conditional nodes is not emulated\n");
            return fail(cudaErrorNotSupported);
        }
    cudaGraph_t g = new CUgraph_st{original->device, {}};
    std::unordered_map<GNode *, GNode *> map;
    for (auto &n : original->nodes) {
        auto c = std::make_unique<GNode>(*n);
        c->graph = g;
        c->origin = n.get();
        map[n.get()] = c.get();
        g->nodes.push_back(std::move(c));
    }
    for (auto &c : g->nodes)
        for (GNode *&d : c->deps) d = map[d];
    g_graphs.insert(g);
    *pClone = g;
    return cudaSuccess;
}

/* Runtime API, cudaGraphConditionalHandleCreate: a handle of graph;
   flags 0 or cudaGraphCondAssignDefault. */
extern "C" cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle, cudaGraph_t graph,
                                                       unsigned int defaultLaunchValue, unsigned int flags) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!pHandle || !graph_ok(graph) || (flags & ~(unsigned)cudaGraphCondAssignDefault)) return fail(cudaErrorInvalidValue);
    static unsigned long long next = 0x1000;
    auto *h = new CondHandle();
    h->graph = graph;
    h->default_value = defaultLaunchValue;
    h->flags = flags;
    h->value.store(defaultLaunchValue);
    std::lock_guard<std::mutex> hl(cond_mu());
    *pHandle = ++next;
    cond_handles()[*pHandle] = h;
    return cudaSuccess;
}

/* CUDA Runtime API, cudaGraphSetConditional (device code): sets the
   handle's value; a handle that no graph made is an error the kernel
   reports (cudaErrorInvalidValue, as a trap would end it on a GPU). */
extern "C" void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value) {
    CondHandle *h = cond_handle(handle);
    if (!h) {
        fault(cudaErrorLaunchFailure, "cudaGraphSetConditional: 0x%llx is not a conditional handle", handle);
        return;
    }
    h->value.store(value);
}

/* Runtime API, cudaGraphAddNode: a node of nodeParams->type with its
   parameters (emulated: kernel, empty, host, conditional; others
   cudaErrorNotSupported with a message). A conditional node
   (Programming Guide "Conditional Graph Nodes"): its handle made for this
   graph and used by no other node; size 1 for WHILE, 1 or 2 for IF, > 0
   for SWITCH; the node creates that many empty body graphs and returns them
   in phGraph_out (valid while the node lives). Edge data: plain edges. */
extern "C" cudaError_t cudaGraphAddNode(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                       const cudaGraphEdgeData *edges, size_t ndeps, struct cudaGraphNodeParams *p) { CUEMU_API_CALL();
    {
        GRAPH_LOCK();
        if (!pNode || !graph_ok(graph) || !p) return fail(cudaErrorInvalidValue);
        if (p->reserved0[0] || p->reserved0[1] || p->reserved0[2] || p->reserved2) return fail(cudaErrorInvalidValue);
        if (edges)
            for (size_t i = 0; i < ndeps; i++)
                if (edges[i].from_port || edges[i].to_port || edges[i].type) return fail(cudaErrorNotSupported);
    }
    switch (p->type) {
    case cudaGraphNodeTypeKernel: {
        cudaKernelNodeParams k = {p->kernel.func, p->kernel.gridDim, p->kernel.blockDim, p->kernel.sharedMemBytes,
                                  p->kernel.kernelParams, p->kernel.extra};
        return cudaGraphAddKernelNode(pNode, graph, deps, ndeps, &k);
    }
    case cudaGraphNodeTypeEmpty: return cudaGraphAddEmptyNode(pNode, graph, deps, ndeps);
    case cudaGraphNodeTypeHost: {
        cudaHostNodeParams hp = {p->host.fn, p->host.userData};
        return cudaGraphAddHostNode(pNode, graph, deps, ndeps, &hp);
    }
    case cudaGraphNodeTypeConditional: break;
    default:
        fprintf(stderr, "cuemu: cudaGraphAddNode of node type %d is not emulated (kernel, empty, host, conditional are)\n", (int)p->type);
        return fail(cudaErrorNotSupported);
    }
    GRAPH_LOCK();
    cudaConditionalNodeParams &c = p->conditional;
    CondHandle *h = cond_handle(c.handle);
    if (!h || h->graph != graph || h->used) return fail(cudaErrorInvalidValue);
    bool size_ok = c.type == cudaGraphCondTypeWhile ? c.size == 1
                   : c.type == cudaGraphCondTypeIf  ? c.size == 1 || c.size == 2
                   : c.type == cudaGraphCondTypeSwitch ? c.size > 0
                   : false;
    if (!size_ok) return fail(cudaErrorInvalidValue);
    std::vector<GNode *> d;
    cudaError_t e = take_deps(graph, deps, ndeps, &d);
    if (e) return fail(e);
    GNode *n = add_node(graph, cudaGraphNodeTypeConditional, "conditional", d, nullptr);
    n->cond = c;
    for (unsigned i = 0; i < c.size; i++) {
        cudaGraph_t b = new CUgraph_st{graph->device, {}};
        b->owner = n;
        g_graphs.insert(b);
        n->bodies.push_back(b);
    }
    n->cond.phGraph_out = n->bodies.data();
    c.phGraph_out = n->bodies.data();
    h->used = true;
    *pNode = (cudaGraphNode_t)n;
    return cudaSuccess;
}

namespace {
/* What a graph's topology is, for cudaGraphExecUpdate: per node in
   insertion order, its type and its dependencies' positions. */
std::vector<size_t> topology(cudaGraph_t g) {
    std::unordered_map<const GNode *, size_t> pos;
    for (size_t i = 0; i < g->nodes.size(); i++) pos[g->nodes[i].get()] = i;
    std::vector<size_t> key;
    for (auto &n : g->nodes) {
        key.push_back(n->type);
        key.push_back(n->deps.size());
        std::vector<size_t> d;
        for (GNode *x : n->deps) d.push_back(pos[x]);
        std::sort(d.begin(), d.end());
        key.insert(key.end(), d.begin(), d.end());
    }
    return key;
}

cudaError_t instantiate(cudaGraphExec_t *pExec, cudaGraph_t graph, unsigned long long flags) {
    GRAPH_LOCK();
    if (!pExec || !graph_ok(graph)) return fail(cudaErrorInvalidValue);
    if (flags & ~(unsigned long long)(cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
                                      cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority))
        return fail(cudaErrorInvalidValue);
    for (Capture *c : g_captures)
        if (c->graph == graph) return fail(cudaErrorIllegalState);
    std::vector<GNode *> order;
    if (!topo_order(graph, &order)) return fail(cudaErrorInvalidValue);   /* a cycle */
    auto *x = new CUgraphExec_st();
    x->device = graph->device;
    {
        std::lock_guard<std::mutex> hl(cond_mu());
        for (auto &kv : cond_handles())
            if (kv.second->graph == graph) x->cond_handles.push_back(kv.first);
    }
    for (GNode *n : order) {
        x->of[n] = x->nodes.size();
        x->nodes.push_back(*n);
        if (n->type == cudaGraphNodeTypeConditional) {   /* its bodies as they are now */
            cudaError_t e = cudaSuccess;
            x->nodes.back().body = conditional_body(*n, &x->cond_handles, &e);
            if (e) {
                delete x;
                return fail(e);
            }
        }
    }
    x->topo_key = topology(graph);
    /* the copies' dependencies are not used again: the order holds them */
    for (GNode &n : x->nodes) n.deps.clear();
    g_execs.insert(x);
    *pExec = x;
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pExec, cudaGraph_t graph, unsigned long long flags) { CUEMU_API_CALL();
    return instantiate(pExec, graph, flags);
}
extern "C" cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pExec, cudaGraph_t graph, unsigned long long flags) { CUEMU_API_CALL();
    return instantiate(pExec, graph, flags);
}

extern "C" cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!exec || !g_execs.count(exec)) return fail(cudaErrorInvalidValue);
    g_execs.erase(exec);
    delete exec;   /* a launch already queued holds its own snapshot */
    return cudaSuccess;
}

/* Runtime API, cudaGraphExecKernelNodeSetParams: node is a node of the
   graph exec was made from; the function may not change; later launches
   use the new parameters. */
extern "C" cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const struct cudaKernelNodeParams *p) { CUEMU_API_CALL();
    size_t at;
    {
        GRAPH_LOCK();
        if (!exec || !g_execs.count(exec) || !p) return fail(cudaErrorInvalidValue);
        auto it = exec->of.find((GNode *)node);
        if (it == exec->of.end() || exec->nodes[it->second].type != cudaGraphNodeTypeKernel) return fail(cudaErrorInvalidValue);
        at = it->second;
        if (exec->nodes[at].kparams.func != p->func) return fail(cudaErrorInvalidValue);
    }
    std::shared_ptr<GridOp> op;
    cudaError_t e = make_kernel_grid(p, &op);
    if (e) return fail(e);
    GRAPH_LOCK();
    if (!g_execs.count(exec)) return fail(cudaErrorInvalidValue);
    GNode &n = exec->nodes[at];
    set_kernel_node(&n, op, p->func, p->gridDim, p->blockDim, p->sharedMemBytes);
    n.kparams.kernelParams = p->kernelParams;
    fill_kernel_body(&n);
    return cudaSuccess;
}

/* Runtime API, cudaGraphExecUpdate (CUDA 12+): a graph of the same
   topology (same nodes in the same order, same types, same edges) updates
   exec's node parameters; otherwise cudaErrorGraphExecUpdateFailure with
   the reason in resultInfo. A kernel node's function may not change. */
extern "C" cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo *info) { CUEMU_API_CALL();
    GRAPH_LOCK();
    if (!exec || !g_execs.count(exec) || !graph_ok(graph) || !info) return fail(cudaErrorInvalidValue);
    info->result = cudaGraphExecUpdateSuccess;
    info->errorNode = nullptr;
    info->errorFromNode = nullptr;
    if (topology(graph) != exec->topo_key || graph->nodes.size() != exec->nodes.size()) {
        info->result = cudaGraphExecUpdateErrorTopologyChanged;
        return fail(cudaErrorGraphExecUpdateFailure);
    }
    /* the copies are in dependency order; map the new graph's nodes the same way */
    std::vector<GNode *> order;
    if (!topo_order(graph, &order) || order.size() != exec->nodes.size()) {
        info->result = cudaGraphExecUpdateErrorTopologyChanged;
        return fail(cudaErrorGraphExecUpdateFailure);
    }
    for (size_t i = 0; i < order.size(); i++) {
        GNode &cur = exec->nodes[i];
        GNode *nw = order[i];
        if (cur.type != nw->type) {
            info->result = cudaGraphExecUpdateErrorNodeTypeChanged;
            info->errorNode = (cudaGraphNode_t)nw;
            return fail(cudaErrorGraphExecUpdateFailure);
        }
        if (cur.type == cudaGraphNodeTypeKernel && cur.kparams.func != nw->kparams.func) {
            info->result = cudaGraphExecUpdateErrorFunctionChanged;
            info->errorNode = (cudaGraphNode_t)nw;
            return fail(cudaErrorGraphExecUpdateFailure);
        }
        /* memset and memcpy nodes: the operands' devices and memory types
           may not change (cudaGraphExecUpdate's limitations) */
        if (cur.type == cudaGraphNodeTypeMemcpy &&
            (!same_mapping(cur.cparams.srcPtr.ptr, nw->cparams.srcPtr.ptr) || !same_mapping(cur.cparams.dstPtr.ptr, nw->cparams.dstPtr.ptr))) {
            info->result = cudaGraphExecUpdateErrorParametersChanged;
            info->errorNode = (cudaGraphNode_t)nw;
            return fail(cudaErrorGraphExecUpdateFailure);
        }
    }
    std::vector<GNode> copies;
    std::vector<unsigned long long> handles;
    {
        std::lock_guard<std::mutex> hl(cond_mu());
        for (auto &kv : cond_handles())
            if (kv.second->graph == graph) handles.push_back(kv.first);
    }
    for (size_t i = 0; i < order.size(); i++) {
        copies.push_back(*order[i]);
        copies.back().deps.clear();
        if (order[i]->type == cudaGraphNodeTypeConditional) {
            cudaError_t e = cudaSuccess;
            copies.back().body = conditional_body(*order[i], &handles, &e);
            if (e) {
                info->result = cudaGraphExecUpdateErrorNotSupported;
                info->errorNode = (cudaGraphNode_t)order[i];
                return fail(cudaErrorGraphExecUpdateFailure);
            }
        }
    }
    exec->of.clear();
    for (size_t i = 0; i < order.size(); i++) {
        exec->nodes[i] = copies[i];
        exec->of[order[i]] = i;
    }
    exec->cond_handles = handles;
    return cudaSuccess;
}

namespace {
/* The graph as one unit of work on st: a snapshot of the nodes' work, so
   that later parameter changes leave this launch alone. */
cudaError_t launch_exec(cudaGraphExec_t exec, cudaStream_t stream, bool count) {
    ensure_init();
    cudaError_t e = sticky_error(-1);
    if (e) return fail(e);
    Stream *st;
    int dev;
    std::shared_ptr<std::vector<std::function<void()>>> work;
    uint64_t kernels = 0, library = 0, memsets = 0, memcpys = 0;
    {
        State &S = state();
        std::lock_guard<std::recursive_mutex> lk(S.mu);
        if (!exec || !g_execs.count(exec)) return fail(cudaErrorInvalidValue);
        if ((e = stream_of(stream, &st, &dev))) return fail(e);
        if (dev != exec->device) return fail(cudaErrorInvalidValue);
        work = std::make_shared<std::vector<std::function<void()>>>();
        /* cudaGraphCondAssignDefault: the handle's default when the launch begins */
        std::vector<CondHandle *> defaults;
        for (unsigned long long hid : exec->cond_handles)
            if (CondHandle *h = cond_handle(hid))
                if (h->flags & cudaGraphCondAssignDefault) defaults.push_back(h);
        if (!defaults.empty())
            work->push_back([defaults] {
                for (CondHandle *h : defaults) h->value.store(h->default_value);
            });
        for (GNode &n : exec->nodes) {
            if (!n.body) continue;
            work->push_back(n.body);
            if (n.grid) kernels++;
            else if (n.type == cudaGraphNodeTypeMemset) memsets++;
            else if (n.type == cudaGraphNodeTypeMemcpy) memcpys++;
            else if (n.type == cudaGraphNodeTypeKernel) library++;   /* a library call's work */
        }
    }
    if (!count) return cudaSuccess;   /* cudaGraphUpload: nothing to do ahead of time here */
    int d = dev;
    e = submit(dev, st, "graph", cudaGraphNodeTypeGraph, [work, d] {
        for (auto &f : *work) {
            if (sticky_error(d)) break;   /* a node faulted: the rest of the graph does not run */
            f();
        }
    });
    if (e) return fail(e);
    if (!st->cap) {
        state().counters.graph_launches++;
        state().counters.graph_kernels += kernels;
        state().counters.graph_library_calls += library;
        state().counters.graph_memsets += memsets;
        state().counters.graph_memcpys += memcpys;
    }
    return cudaSuccess;
}
} /* namespace */

extern "C" cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) { CUEMU_API_CALL(); return launch_exec(exec, stream, true); }
extern "C" cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) { CUEMU_API_CALL(); return launch_exec(exec, stream, false); }
