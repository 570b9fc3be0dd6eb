/* nccl.cpp - the emulated NCCL (2.28): communicators between processes on
   one machine, each process one rank with its own emulated GPU, and the
   collectives AllReduce, Broadcast/Bcast, Reduce, AllGather, ReduceScatter.

   Written from NCCL's user guide and API reference (docs.nvidia.com/
   deeplearning/nccl): "Creating a Communicator", "Error handling and
   communicator abort", "Collective Operations", "In-place Operations",
   "Data Pointers", "CUDA Stream Semantics", "Group Calls", and the API
   pages of each function.

   The model:
   - ncclGetUniqueId names a rendezvous: a POSIX shared-memory segment
     /dev/shm/cuemu-nccl-<pid>-<random>, created by the first rank that
     calls ncclCommInitRank with the id. Each rank registers its pid there;
     when the last rank has arrived the name is unlinked, so the memory goes
     away with the last process that maps it (even one that crashes).
     Segments whose ranks never all arrived and whose registered processes
     are all gone are removed by later ncclGetUniqueId / init calls.
   - Collectives are checked at call time (ncclInvalidArgument and friends)
     and queued on the stream as one unit of device work, like a kernel:
     they run, in the communicator's call order, when the program waits for
     the stream. Data moves through the segment in chunks: each rank copies
     its part of a chunk into its own double-buffered slot, announces it,
     waits for every peer to announce the same chunk, then reads the slots
     it needs. Reductions fold the ranks' values in rank order (0, 1, ...),
     rounding to the data type after each step, so every rank gets the same
     bits, run after run.
   - A rank waiting for its peers sleeps on a futex in the segment (woken
     by each announcement, and every 50 ms to check): ncclCommAbort from
     any thread ends the wait (the communicator's work completes with an
     error, ncclSystemError), a peer process that has exited (or became a
     zombie), or whose communicator was aborted or failed, ends it with
     ncclRemoteError within about 0.1 s. The error becomes the
     communicator's asynchronous error (ncclCommGetAsyncError); the stream
     work itself completes (no CUDA error), and later collectives on that
     communicator return the error at once. A collective whose device has
     faulted (a sticky CUDA error) fails the same way (ncclUnhandledCudaError
     here, ncclRemoteError for the peers).
   - Non-blocking communicators (config.blocking = 0): ncclCommInitRank*
     returns ncclInProgress and a thread waits for the peers;
     ncclCommGetAsyncError reports ncclInProgress until all ranks arrived.
   - Handles stay valid (as "destroyed") after ncclCommDestroy /
     ncclCommAbort: ncclCommGetAsyncError on one reports the error the
     communicator ended with (its own return value is ncclSuccess); other
     calls with it return ncclInvalidArgument.
   Not emulated: several ranks in one process (ncclCommInitAll,
   ncclCommSplit), point-to-point (ncclSend/ncclRecv), user-defined
   reduction operators, reductions on the fp8 types (they are moved, not
   reduced). */
#include "state.h"

#include <nccl.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace cuemu;

namespace {

/* >>shared segment layout */
const char kIdMagic[16] = "cuemu-nccl-id1";
const char kShmPrefix[] = "cuemu-nccl-";
const uint64_t kSegMagic = 0x3176636e756d6563ull;   /* "cemunccv1" */
const size_t kChunk = size_t(2) << 20;              /* bytes per rank per buffer */
const int kMaxRanks = 512;

enum SlotState : int32_t { SLOT_EMPTY = 0, SLOT_JOINED = 1, SLOT_DESTROYED = 2, SLOT_ABORTED = 3, SLOT_FAILED = 4 };
enum Kind : int32_t { K_ALLREDUCE = 1, K_BROADCAST, K_REDUCE, K_ALLGATHER, K_REDUCESCATTER };

struct Desc {          /* what a rank is doing with a buffer: peers compare */
    uint64_t coll;     /* the communicator's collective number */
    uint64_t count;
    int32_t kind, dtype, op, root;
};

struct alignas(64) Slot {
    int32_t pid;
    int32_t state;                 /* SlotState */
    uint64_t start_time;           /* /proc/<pid>/stat field 22: tells a reused pid apart */
    uint64_t arrived;              /* the last chunk this rank published */
    Desc desc[2];                  /* per buffer */
};

struct Header {
    uint64_t magic;
    int32_t nranks;
    uint32_t bell;                 /* futex word: bumped by every announcement */
    int32_t joined;
    int32_t pad;
    uint64_t chunk;
    int64_t created;               /* CLOCK_REALTIME seconds */
    Slot slots[1];                 /* nranks of them */
};

size_t header_bytes(int nranks) {
    size_t b = offsetof(Header, slots) + sizeof(Slot) * (size_t)nranks;
    return (b + 4095) / 4096 * 4096;
}
size_t segment_bytes(int nranks) { return header_bytes(nranks) + (size_t)nranks * 2 * kChunk; }

template <class T> T ld(const T *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
template <class T> void st(T *p, T v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

void ring(Header *h) {
    __atomic_add_fetch(&h->bell, 1u, __ATOMIC_ACQ_REL);
    syscall(SYS_futex, &h->bell, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}
void doze(Header *h, uint32_t seen, int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, &h->bell, FUTEX_WAIT, seen, &ts, nullptr, 0);
}

int64_t mono_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* >>processes */
/* The start time of pid (clock ticks since boot), 0 when unknown. */
uint64_t proc_start(int pid, char *state_out = nullptr) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p += 2;                               /* field 3, the state */
    if (state_out) *state_out = *p;
    for (int field = 3; field < 22 && *p; field++) {
        p = strchr(p, ' ');
        if (!p) return 0;
        p++;
    }
    return strtoull(p, nullptr, 10);
}

bool alive(int pid, uint64_t start) {
    if (pid <= 0) return false;
    char state = 0;
    uint64_t s = proc_start(pid, &state);
    if (s == 0) {
        if (access("/proc/self/stat", R_OK) == 0) return false;   /* /proc works: pid is gone */
        return kill(pid, 0) == 0 || errno == EPERM;
    }
    if (state == 'Z' || state == 'X') return false;   /* exited, not yet reaped */
    return start == 0 || s == start;
}

/* >>errors */
std::mutex g_err_mu;
char g_last_error[1024];

bool debug_warn() {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("NCCL_DEBUG");
        v = e && (!strcasecmp(e, "WARN") || !strcasecmp(e, "INFO") || !strcasecmp(e, "TRACE")) ? 1 : 0;
    }
    return v == 1;
}

ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    {
        std::lock_guard<std::mutex> lk(g_err_mu);
        snprintf(g_last_error, sizeof g_last_error, "%s", msg);
    }
    if (debug_warn()) {
        char host[64] = "localhost";
        gethostname(host, sizeof host - 1);
        fprintf(stderr, "%s:%d NCCL WARN %s\n", host, (int)getpid(), msg);
        fflush(stderr);
    }
    return r;
}

/* >>data types */
size_t type_size(int t) {
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}
const char *type_name(int t) {
    static const char *n[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64", "ncclFloat16",
                              "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
    return t >= 0 && t < ncclNumTypes ? n[t] : "?";
}
const char *op_name(int o) {
    static const char *n[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};
    return o >= 0 && o < ncclNumOps ? n[o] : "?";
}
const char *kind_name(int k) {
    switch (k) {
    case K_ALLREDUCE: return "AllReduce";
    case K_BROADCAST: return "Broadcast";
    case K_REDUCE: return "Reduce";
    case K_ALLGATHER: return "AllGather";
    case K_REDUCESCATTER: return "ReduceScatter";
    default: return "?";
    }
}

uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
float ffrom(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return ffrom(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float v = std::ldexp((float)man, -24);
        return sign ? -v : v;
    }
    return ffrom(sign | ((exp + 112u) << 23) | (man << 13));
}
uint16_t float_to_half(float f) {   /* round to nearest even */
    uint32_t x = fbits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) return (uint16_t)(sign | (uint16_t)std::nearbyint(ffrom(a) * 16777216.0f));
    uint32_t h = ((a >> 23) - 112u) << 10 | ((a >> 13) & 0x3ffu);
    uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}
float bf16_to_float(uint16_t b) { return ffrom((uint32_t)b << 16); }
uint16_t float_to_bf16(float f) {
    uint32_t x = fbits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* One step of op on values of the storage type S (computed in C, rounded
   back to S). The 16-bit floats compute in float (exact enough for one
   correctly rounded step: float has 24 >= 2*11+2 bits) and round back. */
template <class S> struct Arith {
    static S step(S a, S b, int op) {
        if constexpr (std::is_floating_point<S>::value) {
            switch (op) {
            case ncclProd: return a * b;
            case ncclMax: return std::fmax(a, b);
            case ncclMin: return std::fmin(a, b);
            default: return a + b;
            }
        } else {
            using U = typename std::make_unsigned<S>::type;
            switch (op) {
            case ncclProd: return (S)(U)((uint64_t)(U)a * (uint64_t)(U)b);
            case ncclMax: return a > b ? a : b;
            case ncclMin: return a < b ? a : b;
            default: return (S)(U)((uint64_t)(U)a + (uint64_t)(U)b);
            }
        }
    }
    static S avg(S sum, int n) {
        if constexpr (std::is_floating_point<S>::value) return sum / (S)n;
        else return (S)(sum / (S)n);
    }
};

template <float (*LD)(uint16_t), uint16_t (*ST)(float)> struct Arith16 {
    static uint16_t step(uint16_t a, uint16_t b, int op) { return ST(Arith<float>::step(LD(a), LD(b), op)); }
    static uint16_t avg(uint16_t sum, int n) { return ST(LD(sum) / (float)n); }
};

/* out[i] = src[0][i] op src[1][i] op ... (rank order), i < n */
template <class S, class A> void fold_typed(void *out, const std::vector<const char *> &src, size_t n, int op) {
    int nr = (int)src.size();
    S *o = (S *)out;
    for (size_t i = 0; i < n; i++) {
        S acc;
        memcpy(&acc, src[0] + i * sizeof(S), sizeof(S));
        for (int r = 1; r < nr; r++) {
            S v;
            memcpy(&v, src[r] + i * sizeof(S), sizeof(S));
            acc = A::step(acc, v, op);
        }
        if (op == ncclAvg) acc = A::avg(acc, nr);
        memcpy(o + i, &acc, sizeof(S));
    }
}

void fold(int dtype, void *out, const std::vector<const char *> &src, size_t n, int op) {
    switch (dtype) {
    case ncclInt8: fold_typed<int8_t, Arith<int8_t>>(out, src, n, op); break;
    case ncclUint8: fold_typed<uint8_t, Arith<uint8_t>>(out, src, n, op); break;
    case ncclInt32: fold_typed<int32_t, Arith<int32_t>>(out, src, n, op); break;
    case ncclUint32: fold_typed<uint32_t, Arith<uint32_t>>(out, src, n, op); break;
    case ncclInt64: fold_typed<int64_t, Arith<int64_t>>(out, src, n, op); break;
    case ncclUint64: fold_typed<uint64_t, Arith<uint64_t>>(out, src, n, op); break;
    case ncclFloat32: fold_typed<float, Arith<float>>(out, src, n, op); break;
    case ncclFloat64: fold_typed<double, Arith<double>>(out, src, n, op); break;
    case ncclFloat16: fold_typed<uint16_t, Arith16<half_to_float, float_to_half>>(out, src, n, op); break;
    case ncclBfloat16: fold_typed<uint16_t, Arith16<bf16_to_float, float_to_bf16>>(out, src, n, op); break;
    default: break;
    }
}

/* >>communicators */
struct Impl {
    std::string name;              /* the segment's name (for cleanup before all ranks arrived) */
    Header *hdr = nullptr;
    size_t map_len = 0;
    int nranks = 0, rank = 0, dev = 0;
    bool blocking = true;
    bool registered = false;               /* this rank's slot in the segment is ours */
    std::atomic<bool> aborted{false};
    std::atomic<int> async_err{ncclSuccess};
    std::atomic<bool> ready{false};        /* every rank arrived */
    uint64_t chunk_no = 0;                 /* chunks done (the executor's; ops of a comm run one at a time) */
    uint64_t coll_no = 0;                  /* collectives issued (the issuing thread's) */
    std::thread init_thread;

    ~Impl() {
        if (hdr) munmap(hdr, map_len);
    }
    Slot &slot(int r) { return hdr->slots[r]; }
    char *buffer(int r, int parity) { return (char *)hdr + header_bytes(nranks) + ((size_t)r * 2 + parity) * kChunk; }

    /* Records err as the communicator's asynchronous error (the first one
       wins) and tells the peers this rank has failed. */
    void set_error(ncclResult_t err, int slot_state) {
        int expected = ncclSuccess;
        if (!async_err.compare_exchange_strong(expected, err)) {
            expected = ncclInProgress;
            async_err.compare_exchange_strong(expected, err);
        }
        if (hdr && registered && ld(&slot(rank).state) == SLOT_JOINED) {
            st(&slot(rank).state, (int32_t)slot_state);
            ring(hdr);
        }
    }

    /* A peer that has gone: -1 when none. Only peers for which missing(r). */
    int gone_peer(const std::function<bool(int)> &missing, std::string *why) {
        for (int r = 0; r < nranks; r++) {
            if (r == rank || !missing(r)) continue;
            Slot &s = slot(r);
            int32_t state = ld(&s.state);
            if (state == SLOT_EMPTY) continue;
            if (state == SLOT_ABORTED) { *why = "its communicator was aborted"; return r; }
            if (state == SLOT_DESTROYED) { *why = "its communicator was destroyed"; return r; }
            if (state == SLOT_FAILED) { *why = "its communicator failed"; return r; }
            if (!alive(ld(&s.pid), s.start_time)) {
                char b[64];
                snprintf(b, sizeof b, "process %d exited", (int)ld(&s.pid));
                *why = b;
                return r;
            }
        }
        return -1;
    }

    /* Waits until done() holds, sleeping on the segment's futex. Returns
       ncclSuccess, ncclSystemError (aborted here) or ncclRemoteError (a
       peer gone). what: for messages. */
    ncclResult_t wait(const std::function<bool()> &done, const std::function<bool(int)> &missing, const char *what) {
        int64_t t0 = mono_ms(), last_check = -1000;
        bool told = false;
        for (;;) {
            uint32_t bell = ld(&hdr->bell);
            if (done()) return ncclSuccess;
            if (aborted.load()) return fail(ncclSystemError, "%s: communicator aborted (ncclCommAbort)", what);
            int64_t now = mono_ms();
            if (now - last_check >= 100) {
                last_check = now;
                std::string why;
                int r = gone_peer(missing, &why);
                if (r >= 0) {
                    if (done()) return ncclSuccess;   /* it finished its part before it went */
                    return fail(ncclRemoteError, "%s: rank %d of %d is gone (%s); rank %d cannot complete", what, r, nranks,
                                why.c_str(), rank);
                }
                if (!told && now - t0 > 30000) {
                    told = true;
                    std::string who;
                    for (int q = 0; q < nranks; q++)
                        if (q != rank && missing(q)) who += (who.empty() ? "" : ", ") + std::to_string(q);
                    fprintf(stderr, "cuemu: nccl: rank %d has waited %lld s in %s for rank(s) %s (every rank must call the "
                                    "same collectives in the same order, and wait for its stream)\n",
                            rank, (long long)((now - t0) / 1000), what, who.c_str());
                    fflush(stderr);
                }
            }
            doze(hdr, bell, 50);
        }
    }
};

const uint32_t kHandleMagic = 0x4e43434cu;   /* "NCCL" */
enum HandleState { H_LIVE = 0, H_FINALIZED, H_DEAD };

}  // namespace

struct ncclComm {
    uint32_t magic = kHandleMagic;
    std::mutex mu;
    std::shared_ptr<Impl> impl;          /* null once destroyed / aborted */
    int hstate = H_LIVE;
    ncclResult_t final_err = ncclSuccess; /* what it ended with */
    uint64_t last_seq = 0;               /* its last unit of device work */
    bool blocking = true;
    int nranks = 0, rank = 0, dev = 0;
};

namespace {

/* Every handle ever made: they are never freed (a destroyed one answers
   ncclCommGetAsyncError and refuses other calls), and stay reachable from
   here so that LeakSanitizer does not count them. */
std::mutex g_handles_mu;
std::vector<ncclComm_t> *g_handles = new std::vector<ncclComm_t>;

/* >>segments */
std::string seg_name(const ncclUniqueId &id) {
    char n[NCCL_UNIQUE_ID_BYTES - 16 + 1];
    memcpy(n, id.internal + 16, sizeof n - 1);
    n[sizeof n - 1] = 0;
    return n;
}

/* Removes segments left by runs whose ranks never all arrived and whose
   registered processes are all gone (or that no rank ever set up). */
void sweep_stale() {
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    time_t now = time(nullptr);
    while (struct dirent *e = readdir(d)) {
        if (strncmp(e->d_name, kShmPrefix, sizeof kShmPrefix - 1) != 0) continue;
        std::string name = std::string("/") + e->d_name;
        int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) continue;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            close(fd);
            continue;
        }
        struct stat sb;
        bool stale = false;
        if (fstat(fd, &sb) == 0) {
            if ((size_t)sb.st_size < sizeof(Header)) {
                stale = now - sb.st_mtime > 60;
            } else {
                void *m = mmap(nullptr, header_bytes(1), PROT_READ, MAP_SHARED, fd, 0);
                if (m != MAP_FAILED) {
                    Header *h = (Header *)m;
                    if (h->magic != kSegMagic || h->nranks < 1 || h->nranks > kMaxRanks) {
                        stale = now - sb.st_mtime > 60;
                    } else if ((size_t)sb.st_size >= header_bytes(h->nranks)) {
                        int n = h->nranks;
                        munmap(m, header_bytes(1));
                        m = mmap(nullptr, header_bytes(n), PROT_READ, MAP_SHARED, fd, 0);
                        h = (Header *)m;
                        if (m != MAP_FAILED) {
                            stale = true;
                            for (int r = 0; r < n; r++)
                                if (h->slots[r].state == SLOT_JOINED && alive(h->slots[r].pid, h->slots[r].start_time))
                                    stale = false;
                        }
                        if (m != MAP_FAILED) munmap(m, header_bytes(n));
                        m = MAP_FAILED;
                    }
                    if (m != MAP_FAILED) munmap(m, header_bytes(1));
                }
            }
        }
        if (stale) shm_unlink(name.c_str());
        close(fd);
    }
    closedir(d);
}

/* After an init that did not complete: removes the name when no other
   registered rank is still there. */
void unlink_if_last(Impl &c) {
    if (c.name.empty() || !c.hdr || !c.registered) return;
    int fd = shm_open(c.name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return;
    flock(fd, LOCK_EX);
    bool others = false;
    for (int r = 0; r < c.nranks; r++)
        if (r != c.rank && ld(&c.slot(r).state) == SLOT_JOINED && alive(ld(&c.slot(r).pid), c.slot(r).start_time))
            others = true;
    if (!others) shm_unlink(c.name.c_str());
    c.name.clear();
    close(fd);
}

/* Opens (creating where needed) the segment and registers rank. */
ncclResult_t join(Impl &c) {
    int fd = shm_open(c.name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return fail(ncclSystemError, "shm_open(%s): %s", c.name.c_str(), strerror(errno));
    if (flock(fd, LOCK_EX) != 0) {
        close(fd);
        return fail(ncclSystemError, "flock(%s): %s", c.name.c_str(), strerror(errno));
    }
    ncclResult_t res = ncclSuccess;
    size_t len = segment_bytes(c.nranks);
    struct stat sb;
    void *m = MAP_FAILED;
    if (fstat(fd, &sb) != 0) {
        res = fail(ncclSystemError, "fstat(%s): %s", c.name.c_str(), strerror(errno));
        goto out;
    }
    if (sb.st_size == 0 && ftruncate(fd, (off_t)len) != 0) {
        res = fail(ncclSystemError, "ftruncate(%s, %zu): %s", c.name.c_str(), len, strerror(errno));
        goto out;
    }
    if (sb.st_size != 0 && (size_t)sb.st_size != len) {
        res = fail(ncclInvalidUsage, "ncclCommInitRank: rank %d says nranks = %d, but another rank of this unique id said a "
                   "different number", c.rank, c.nranks);
        goto out;
    }
    m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        res = fail(ncclSystemError, "mmap(%s, %zu): %s", c.name.c_str(), len, strerror(errno));
        goto out;
    }
    c.hdr = (Header *)m;
    c.map_len = len;
    if (c.hdr->magic != kSegMagic) {   /* the first rank here (or one that crashed setting it up) */
        memset(c.hdr, 0, header_bytes(c.nranks));
        c.hdr->nranks = c.nranks;
        c.hdr->chunk = kChunk;
        c.hdr->created = (int64_t)time(nullptr);
        st(&c.hdr->magic, kSegMagic);
    }
    if (c.hdr->nranks != c.nranks) {
        res = fail(ncclInvalidUsage, "ncclCommInitRank: rank %d says nranks = %d, another rank of this unique id said %d",
                   c.rank, c.nranks, c.hdr->nranks);
        goto out;
    }
    {
        Slot &s = c.slot(c.rank);
        int32_t state = ld(&s.state);
        if (state != SLOT_EMPTY) {
            if (state == SLOT_JOINED && alive(s.pid, s.start_time))
                res = fail(ncclInvalidUsage, "ncclCommInitRank: rank %d of this unique id is already taken (by process %d)",
                           c.rank, (int)s.pid);
            else
                res = fail(ncclRemoteError, "ncclCommInitRank: rank %d of this unique id was used before by process %d, "
                           "which is gone", c.rank, (int)s.pid);
            goto out;
        }
        s.pid = (int32_t)getpid();
        s.start_time = proc_start(getpid());
        s.arrived = 0;
        st(&s.state, (int32_t)SLOT_JOINED);
        c.registered = true;
        int joined = __atomic_add_fetch(&c.hdr->joined, 1, __ATOMIC_ACQ_REL);
        if (joined == c.nranks) {
            shm_unlink(c.name.c_str());   /* everyone has it mapped: the memory lives as long as a rank maps it */
            c.name.clear();
        }
        ring(c.hdr);
    }
out:
    flock(fd, LOCK_UN);
    close(fd);
    return res;
}

ncclResult_t rendezvous(Impl &c) {
    ncclResult_t r = join(c);
    if (r != ncclSuccess) return r;
    r = c.wait([&] { return ld(&c.hdr->joined) >= c.nranks; }, [](int) { return true; },
               "ncclCommInitRank");
    if (r == ncclSuccess) c.ready = true;
    return r;
}

/* >>handles */
ncclResult_t check_handle(ncclComm_t comm, const char *fn) {
    if (!comm) return fail(ncclInvalidArgument, "%s: comm argument is NULL", fn);
    if (comm->magic != kHandleMagic) return fail(ncclInvalidArgument, "%s: comm is not a communicator", fn);
    return ncclSuccess;
}

/* The live communicator behind comm, or null with the error in *r. */
std::shared_ptr<Impl> live(ncclComm_t comm, const char *fn, ncclResult_t *r) {
    if ((*r = check_handle(comm, fn)) != ncclSuccess) return nullptr;
    std::lock_guard<std::mutex> lk(comm->mu);
    if (!comm->impl || comm->hstate == H_DEAD) {
        *r = fail(ncclInvalidArgument, "%s: the communicator has been destroyed or aborted", fn);
        return nullptr;
    }
    return comm->impl;
}

/* >>groups */
thread_local int t_group_depth = 0;
thread_local std::vector<std::function<ncclResult_t()>> t_group_work;
thread_local std::vector<ncclComm_t> t_group_inits;
thread_local ncclResult_t t_group_err = ncclSuccess;

/* >>collectives */
struct Coll {
    int kind;
    const void *send;
    void *recv;
    size_t count;        /* AllReduce/Broadcast/Reduce: count; AllGather: sendcount; ReduceScatter: recvcount */
    int dtype, op, root;
    uint64_t coll;
};

/* Runs one collective (inside queued device work). */
void run_coll(Impl &c, const Coll &k) {
    if (c.aborted.load()) {
        c.set_error(ncclSystemError, SLOT_ABORTED);
        return;
    }
    if (c.async_err.load() != ncclSuccess) return;
    if (cudaError_t ce = sticky_error(c.dev)) {
        /* the device has faulted: a kernel would not run; the peers hear of it rather than wait */
        fail(ncclUnhandledCudaError, "%s: rank %d: the device has an error (%s)", kind_name(k.kind), c.rank, cudaGetErrorName(ce));
        c.set_error(ncclUnhandledCudaError, SLOT_FAILED);
        return;
    }
    const size_t es = type_size(k.dtype);
    const int n = c.nranks, me = c.rank;
    const size_t per_chunk = k.kind == K_REDUCESCATTER ? kChunk / es / (size_t)n : kChunk / es;
    const bool reduces = k.kind == K_ALLREDUCE || k.kind == K_REDUCE || k.kind == K_REDUCESCATTER;
    /* the memory, as a kernel would check it */
    {
        size_t in_elems = k.kind == K_REDUCESCATTER ? k.count * (size_t)n : k.count;
        size_t out_elems = k.kind == K_ALLGATHER ? k.count * (size_t)n : k.count;
        bool uses_send = k.kind != K_BROADCAST || me == k.root;
        bool uses_recv = k.kind != K_REDUCE || me == k.root;
        std::string why;
        if ((uses_send && !device_range(c.dev, k.send, in_elems * es, &why)) ||
            (uses_recv && !device_range(c.dev, k.recv, out_elems * es, &why))) {
            fault(cudaErrorIllegalAddress, "nccl %s: rank %d: %s", kind_name(k.kind), me, why.c_str());
            fail(ncclUnhandledCudaError, "%s: rank %d: %s", kind_name(k.kind), me, why.c_str());
            c.set_error(ncclUnhandledCudaError, SLOT_FAILED);
            return;
        }
    }
    char what[96];
    snprintf(what, sizeof what, "%s (collective #%llu)", kind_name(k.kind), (unsigned long long)k.coll);
    size_t nchunks = (k.count + per_chunk - 1) / per_chunk;
    std::vector<const char *> src(n);
    for (size_t ch = 0; ch < nchunks; ch++) {
        uint64_t no = ++c.chunk_no;
        int par = (int)(no & 1);
        size_t lo = ch * per_chunk, len = std::min(per_chunk, k.count - lo);
        Slot &mine = c.slot(me);
        mine.desc[par] = Desc{k.coll, k.count, k.kind, k.dtype, reduces ? k.op : -1, k.kind == K_BROADCAST || k.kind == K_REDUCE ? k.root : -1};
        char *buf = c.buffer(me, par);
        const char *send = (const char *)k.send;
        switch (k.kind) {
        case K_ALLREDUCE: case K_REDUCE: case K_ALLGATHER:
            memcpy(buf, send + lo * es, len * es);
            break;
        case K_BROADCAST:
            if (me == k.root) memcpy(buf, send + lo * es, len * es);
            break;
        case K_REDUCESCATTER:
            for (int d = 0; d < n; d++) memcpy(buf + (size_t)d * len * es, send + ((size_t)d * k.count + lo) * es, len * es);
            break;
        }
        st(&mine.arrived, no);
        ring(c.hdr);
        ncclResult_t r = c.wait(
            [&] {
                for (int q = 0; q < n; q++)
                    if (ld(&c.slot(q).arrived) < no) return false;
                return true;
            },
            [&](int q) { return ld(&c.slot(q).arrived) < no; }, what);
        if (r != ncclSuccess) {
            c.set_error(r, r == ncclSystemError ? SLOT_ABORTED : SLOT_FAILED);
            return;
        }
        for (int q = 0; q < n; q++) {
            const Desc &d = c.slot(q).desc[par], &m = mine.desc[par];
            if (d.coll != m.coll || d.count != m.count || d.kind != m.kind || d.dtype != m.dtype || d.op != m.op ||
                d.root != m.root) {
                fail(ncclInvalidUsage, "rank %d called %s(count %llu, %s%s%s, root %d) as its collective #%llu, where rank %d "
                     "called %s(count %llu, %s%s%s, root %d) (#%llu): every rank must call the same collectives in the same order",
                     q, kind_name(d.kind), (unsigned long long)d.count, type_name(d.dtype), d.op >= 0 ? ", " : "",
                     d.op >= 0 ? op_name(d.op) : "", d.root, (unsigned long long)d.coll, me, kind_name(m.kind),
                     (unsigned long long)m.count, type_name(m.dtype), m.op >= 0 ? ", " : "", m.op >= 0 ? op_name(m.op) : "",
                     m.root, (unsigned long long)m.coll);
                c.set_error(ncclInvalidUsage, SLOT_FAILED);
                return;
            }
        }
        char *recv = (char *)k.recv;
        switch (k.kind) {
        case K_ALLREDUCE:
            for (int q = 0; q < n; q++) src[q] = c.buffer(q, par);
            fold(k.dtype, recv + lo * es, src, len, k.op);
            break;
        case K_REDUCE:
            if (me == k.root) {
                for (int q = 0; q < n; q++) src[q] = c.buffer(q, par);
                fold(k.dtype, recv + lo * es, src, len, k.op);
            }
            break;
        case K_BROADCAST:
            memmove(recv + lo * es, c.buffer(k.root, par), len * es);
            break;
        case K_ALLGATHER:
            for (int q = 0; q < n; q++) memmove(recv + ((size_t)q * k.count + lo) * es, c.buffer(q, par), len * es);
            break;
        case K_REDUCESCATTER:
            for (int q = 0; q < n; q++) src[q] = c.buffer(q, par) + (size_t)me * len * es;
            fold(k.dtype, recv + lo * es, src, len, k.op);
            break;
        }
    }
}

/* Checks and queues one collective. */
ncclResult_t collective(const char *fn, Coll k, ncclComm_t comm, cudaStream_t stream) {
    ncclResult_t r;
    std::shared_ptr<Impl> c = live(comm, fn, &r);
    if (!c) return r;
    {
        std::lock_guard<std::mutex> lk(comm->mu);
        if (comm->hstate == H_FINALIZED) return fail(ncclInvalidUsage, "%s: the communicator has been finalized", fn);
    }
    if (!c->ready.load()) {
        int e = c->async_err.load();
        if (e != ncclInProgress && e != ncclSuccess) return (ncclResult_t)e;
        return fail(ncclInvalidUsage, "%s: the communicator is still being initialized (ncclCommGetAsyncError says "
                    "ncclInProgress)", fn);
    }
    int e = c->async_err.load();
    if (e != ncclSuccess) return (ncclResult_t)e;
    if (k.dtype < 0 || k.dtype >= ncclNumTypes) return fail(ncclInvalidArgument, "%s: invalid type %d", fn, k.dtype);
    bool reduces = k.kind == K_ALLREDUCE || k.kind == K_REDUCE || k.kind == K_REDUCESCATTER;
    if (reduces) {
        if (k.op < 0 || k.op >= ncclNumOps) return fail(ncclInvalidArgument, "%s: invalid reduction operation %d", fn, k.op);
        if (k.dtype == ncclFloat8e4m3 || k.dtype == ncclFloat8e5m2)
            return fail(ncclInvalidArgument, "%s: reductions on %s are not emulated", fn, type_name(k.dtype));
    }
    if ((k.kind == K_BROADCAST || k.kind == K_REDUCE) && (k.root < 0 || k.root >= c->nranks))
        return fail(ncclInvalidArgument, "%s: invalid root %d (root should be in the 0..%d range)", fn, k.root, c->nranks - 1);
    size_t es = type_size(k.dtype);
    size_t in_elems = k.kind == K_REDUCESCATTER ? k.count * (size_t)c->nranks : k.count;
    size_t out_elems = k.kind == K_ALLGATHER ? k.count * (size_t)c->nranks : k.count;
    bool uses_send = k.kind != K_BROADCAST || c->rank == k.root;
    bool uses_recv = k.kind != K_REDUCE || c->rank == k.root;
    if (k.count > 0) {
        std::string why;
        if (uses_send && k.send == nullptr) return fail(ncclInvalidArgument, "%s: sendbuff is NULL", fn);
        if (uses_recv && k.recv == nullptr) return fail(ncclInvalidArgument, "%s: recvbuff is NULL", fn);
        if (uses_send && !device_range(c->dev, k.send, in_elems * es, &why))
            return fail(ncclInvalidArgument, "%s: sendbuff %p is not device memory of device %d the communicator may use (%s)",
                        fn, k.send, c->dev, why.c_str());
        if (uses_recv && !device_range(c->dev, k.recv, out_elems * es, &why))
            return fail(ncclInvalidArgument, "%s: recvbuff %p is not device memory of device %d the communicator may use (%s)",
                        fn, k.recv, c->dev, why.c_str());
    }
    /* the stream */
    ensure_init();
    int sdev;
    cudaError_t ce;
    Stream *s = resolve_stream(stream, &sdev, &ce);
    if (!s) return fail(ncclInvalidArgument, "%s: invalid stream", fn);
    if (sdev != c->dev)
        return fail(ncclInvalidUsage, "%s: the stream belongs to device %d, the communicator to device %d", fn, sdev, c->dev);
    if (sticky_error(sdev)) return fail(ncclUnhandledCudaError, "%s: the device has an error (%s)", fn,
                                        cudaGetErrorName(sticky_error(sdev)));
    auto issue = [comm, c, k, s, sdev]() mutable -> ncclResult_t {
        k.coll = ++c->coll_no;
        static const char *names[] = {"", "ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter"};
        uint64_t prev;
        {
            std::lock_guard<std::mutex> lk(comm->mu);
            prev = comm->last_seq;
        }
        /* after the communicator's previous collective, whatever its stream: all ranks run them in call order */
        uint64_t seq = push_op(sdev, s, names[k.kind], [c, k] { run_coll(*c, k); }, prev, /*always=*/true);
        {
            std::lock_guard<std::mutex> lk(comm->mu);
            comm->last_seq = seq;
        }
        state().counters.library_calls++;
        return ncclSuccess;
    };
    if (t_group_depth > 0) {
        t_group_work.push_back(issue);
        return ncclSuccess;
    }
    return issue();
}

const int kBlockingUndef = NCCL_CONFIG_UNDEF_INT;

ncclResult_t init_comm(ncclComm_t *out, int nranks, const ncclUniqueId &id, int rank, const ncclConfig_t *config,
                       const char *fn) {
    if (!out) return fail(ncclInvalidArgument, "%s: comm argument is NULL", fn);
    *out = nullptr;
    if (nranks < 1 || nranks > kMaxRanks) return fail(ncclInvalidArgument, "%s: invalid nranks %d", fn, nranks);
    if (rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "%s: rank %d is not in 0..%d", fn, rank, nranks - 1);
    if (memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0 || seg_name(id).empty() || seg_name(id)[0] != '/')
        return fail(ncclInvalidArgument, "%s: commId does not come from ncclGetUniqueId", fn);
    bool blocking = true;
    if (config) {
        if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, cgaClusterSize))
            return fail(ncclInvalidArgument, "%s: config is not initialized with NCCL_CONFIG_INITIALIZER", fn);
        if (config->blocking != kBlockingUndef && config->blocking != 0 && config->blocking != 1)
            return fail(ncclInvalidArgument, "%s: config.blocking %d should be 0 or 1", fn, config->blocking);
        if (config->blocking == 0) blocking = false;
    }
    ensure_init();
    if (state().no_driver || state().devs.empty())
        return fail(ncclUnhandledCudaError, "%s: no CUDA device (%s)", fn, state().no_driver ? "no driver" : "no device");
    int dev = current_device();
    if (sticky_error(dev)) return fail(ncclUnhandledCudaError, "%s: the device has an error", fn);
    count_library_api_call();
    sweep_stale();
    auto c = std::make_shared<Impl>();
    c->name = seg_name(id);
    c->nranks = nranks;
    c->rank = rank;
    c->dev = dev;
    c->blocking = blocking;
    ncclComm_t h = new ncclComm;
    h->impl = c;
    h->blocking = blocking;
    h->nranks = nranks;
    h->rank = rank;
    h->dev = dev;
    if (blocking && t_group_depth == 0) {
        ncclResult_t r = rendezvous(*c);
        if (r != ncclSuccess) {
            c->set_error(r, SLOT_FAILED);
            if (!c->name.empty()) unlink_if_last(*c);
            delete h;
            return r;
        }
        {
            std::lock_guard<std::mutex> lk(g_handles_mu);
            g_handles->push_back(h);
        }
        *out = h;
        return ncclSuccess;
    }
    {
        std::lock_guard<std::mutex> lk(g_handles_mu);
        g_handles->push_back(h);
    }
    c->async_err = ncclInProgress;
    Impl *raw = c.get();
    c->init_thread = std::thread([raw] {
        ncclResult_t r = rendezvous(*raw);
        if (r != ncclSuccess) {
            raw->set_error(r, raw->aborted.load() ? SLOT_ABORTED : SLOT_FAILED);
        } else {
            int expected = ncclInProgress;
            raw->async_err.compare_exchange_strong(expected, ncclSuccess);
        }
    });
    *out = h;
    if (t_group_depth > 0) {
        t_group_inits.push_back(h);
        return ncclSuccess;
    }
    return ncclInProgress;
}

/* Ends the handle's communicator: aborting (abort) or after its work. */
ncclResult_t end_comm(ncclComm_t comm, bool abort, const char *fn) {
    ncclResult_t r = check_handle(comm, fn);
    if (r != ncclSuccess) return r;
    std::shared_ptr<Impl> c;
    uint64_t last;
    {
        std::lock_guard<std::mutex> lk(comm->mu);
        if (!comm->impl || comm->hstate == H_DEAD)
            return fail(ncclInvalidArgument, "%s: the communicator has already been destroyed or aborted", fn);
        c = comm->impl;
        last = comm->last_seq;
    }
    if (abort) {
        c->aborted = true;
        c->set_error(ncclSystemError, SLOT_ABORTED);
        if (c->hdr) ring(c->hdr);
    } else {
        /* finalize: the communicator's outstanding work runs */
        if (c->init_thread.joinable()) c->init_thread.join();
        if (last && c->ready.load()) run_until(last);
    }
    if (c->init_thread.joinable()) c->init_thread.join();
    if (c->hdr && c->registered) {
        if (!abort && ld(&c->slot(c->rank).state) == SLOT_JOINED) st(&c->slot(c->rank).state, (int32_t)SLOT_DESTROYED);
        ring(c->hdr);
        if (!c->ready.load()) unlink_if_last(*c);
    }
    {
        std::lock_guard<std::mutex> lk(comm->mu);
        int e = c->async_err.load();
        comm->final_err = (ncclResult_t)(e == ncclInProgress ? ncclSuccess : e);
        comm->hstate = H_DEAD;
        comm->impl.reset();   /* queued work that still holds it keeps it alive */
    }
    return ncclSuccess;
}

}  // namespace

/* >>API */
extern "C" {

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version argument is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t) {
    static thread_local char copy[sizeof g_last_error];
    std::lock_guard<std::mutex> lk(g_err_mu);
    memcpy(copy, g_last_error, sizeof copy);
    return copy;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
    if (!uniqueId) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId argument is NULL");
    sweep_stale();
    uint64_t rnd[2] = {0, 0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        rnd[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
        rnd[1] = (uint64_t)getpid() * 0xbf58476d1ce4e5b9ull ^ (uint64_t)(uintptr_t)uniqueId;
    }
    memset(uniqueId, 0, sizeof *uniqueId);
    memcpy(uniqueId->internal, kIdMagic, sizeof kIdMagic);
    snprintf(uniqueId->internal + 16, NCCL_UNIQUE_ID_BYTES - 16, "/%s%d-%016llx%016llx", kShmPrefix, (int)getpid(),
             (unsigned long long)rnd[0], (unsigned long long)rnd[1]);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
    return init_comm(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config) {
    return init_comm(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
    ncclResult_t r;
    std::shared_ptr<Impl> c = live(comm, "ncclCommFinalize", &r);
    if (!c) return r;
    uint64_t last;
    {
        std::lock_guard<std::mutex> lk(comm->mu);
        if (comm->hstate == H_FINALIZED) return fail(ncclInvalidUsage, "ncclCommFinalize: already finalized");
        last = comm->last_seq;
    }
    if (!c->ready.load()) return fail(ncclInvalidUsage, "ncclCommFinalize: the communicator is still being initialized");
    if (last) run_until(last);
    {
        std::lock_guard<std::mutex> lk(comm->mu);
        comm->hstate = H_FINALIZED;
    }
    int e = c->async_err.load();
    return (ncclResult_t)e;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (!comm) return ncclSuccess;   /* as NCCL: destroying NULL is a no-op */
    return end_comm(comm, false, "ncclCommDestroy");
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (!comm) return ncclSuccess;
    return end_comm(comm, true, "ncclCommAbort");
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
    ncclResult_t r = check_handle(comm, "ncclCommGetAsyncError");
    if (r != ncclSuccess) return r;
    if (!asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError argument is NULL");
    std::lock_guard<std::mutex> lk(comm->mu);
    if (!comm->impl) {
        *asyncError = comm->final_err;
        return ncclSuccess;
    }
    *asyncError = (ncclResult_t)comm->impl->async_err.load();
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    ncclResult_t r = check_handle(comm, "ncclCommCount");
    if (r != ncclSuccess) return r;
    if (!count) return fail(ncclInvalidArgument, "ncclCommCount: count argument is NULL");
    *count = comm->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
    ncclResult_t r = check_handle(comm, "ncclCommCuDevice");
    if (r != ncclSuccess) return r;
    if (!device) return fail(ncclInvalidArgument, "ncclCommCuDevice: device argument is NULL");
    *device = comm->dev;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    ncclResult_t r = check_handle(comm, "ncclCommUserRank");
    if (r != ncclSuccess) return r;
    if (!rank) return fail(ncclInvalidArgument, "ncclCommUserRank: rank argument is NULL");
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
    if (!ptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr argument is NULL");
    cudaError_t e = cudaMalloc(ptr, size);
    return e == cudaSuccess ? ncclSuccess : fail(ncclUnhandledCudaError, "ncclMemAlloc: cudaMalloc: %s", cudaGetErrorName(e));
}

ncclResult_t ncclMemFree(void *ptr) {
    cudaError_t e = cudaFree(ptr);
    return e == cudaSuccess ? ncclSuccess : fail(ncclUnhandledCudaError, "ncclMemFree: cudaFree: %s", cudaGetErrorName(e));
}

ncclResult_t ncclGroupStart(void) {
    if (t_group_depth == 0) {
        t_group_work.clear();
        t_group_inits.clear();
        t_group_err = ncclSuccess;
    }
    t_group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (t_group_depth <= 0) return fail(ncclInvalidUsage, "ncclGroupEnd: not in a group call (ncclGroupStart first)");
    if (--t_group_depth > 0) return ncclSuccess;
    std::vector<std::function<ncclResult_t()>> work;
    work.swap(t_group_work);
    std::vector<ncclComm_t> inits;
    inits.swap(t_group_inits);
    ncclResult_t res = ncclSuccess;
    bool in_progress = false;
    for (ncclComm_t h : inits) {
        std::shared_ptr<Impl> c;
        {
            std::lock_guard<std::mutex> lk(h->mu);
            c = h->impl;
        }
        if (!c) continue;
        if (h->blocking) {
            if (c->init_thread.joinable()) c->init_thread.join();
            int e = c->async_err.load();
            if (e != ncclSuccess && res == ncclSuccess) res = (ncclResult_t)e;
        } else if (c->async_err.load() == ncclInProgress) {
            in_progress = true;
        }
    }
    for (auto &w : work) {
        ncclResult_t r = w();
        if (r != ncclSuccess && res == ncclSuccess) res = r;
    }
    if (res == ncclSuccess && in_progress) res = ncclInProgress;
    return res;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    return collective("ncclAllReduce", Coll{K_ALLREDUCE, sendbuff, recvbuff, count, (int)datatype, (int)op, 0, 0}, comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    return collective("ncclBroadcast", Coll{K_BROADCAST, sendbuff, recvbuff, count, (int)datatype, 0, root, 0}, comm, stream);
}

ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
    return collective("ncclBcast", Coll{K_BROADCAST, buff, buff, count, (int)datatype, 0, root, 0}, comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
    return collective("ncclReduce", Coll{K_REDUCE, sendbuff, recvbuff, count, (int)datatype, (int)op, root, 0}, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) {
    return collective("ncclAllGather", Coll{K_ALLGATHER, sendbuff, recvbuff, sendcount, (int)datatype, 0, 0, 0}, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
    return collective("ncclReduceScatter", Coll{K_REDUCESCATTER, sendbuff, recvbuff, recvcount, (int)datatype, (int)op, 0, 0},
                      comm, stream);
}

}  /* extern "C" */
