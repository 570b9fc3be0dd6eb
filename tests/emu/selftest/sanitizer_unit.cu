/* sanitizer_unit.cu - the compute-sanitizer tools' state machines
   (tests/emu/src/sanitizer.cpp), driven through their interface
   (sanitizer.h) as the device code's instrumentation drives them, with the
   records caught in a string. Each seeded error has its control: the same
   accesses made correct give no record. The end-to-end runs through
   tests/emu/compute-sanitizer are in part_sanitizer.sh. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <string>
#include "../src/sanitizer.h"
#include "selftest.h"

namespace cuemu {
void san_test_reset(int tool, std::string *capture);
void san_test_leak_check(bool on);
}
using namespace cuemu;

static std::string cap;
static char smem[1024] __attribute__((aligned(64)));
/* fake program counters: two sites of the kernel */
static const void *const PC_A = (const void *)&cap;
static const void *const PC_B = (const void *)((const char *)&cap + 8);

static void start(int tool, unsigned threads) {
    san_test_reset(tool, &cap);
    cap.clear();
    blockDim = dim3(threads, 1, 1);
    gridDim = dim3(1, 1, 1);
    blockIdx = uint3{0, 0, 0};
    san_kernel_begin("k", "unit.cu", 1, dim3(1), dim3(threads), 99);   /* device 99: no device's error state changes */
    san_block_begin(smem, sizeof smem, smem + 512, 512);
}
static void as(unsigned t) { threadIdx = uint3{t, 0, 0}; }
/* thread t stores v at smem + off, as instrumented code does: the hook, then the store */
static void store(unsigned t, size_t off, int v, const void *pc = PC_A) {
    as(t);
    san_access(smem + off, 4, true, false, pc);
    memcpy(smem + off, &v, 4);
}
static void load(unsigned t, size_t off, const void *pc = PC_B) {
    as(t);
    san_access(smem + off, 4, false, false, pc);
}
static std::string finish() {
    san_block_end();
    san_kernel_end();
    std::string r = cap;
    san_test_reset(SAN_NONE, nullptr);
    return r;
}
static int count(const std::string &s, const char *what) {
    int n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) n++;
    return n;
}

/* >>racecheck */
ST_TEST(race_raw_flagged) {
    start(SAN_RACECHECK, 64);
    store(0, 0, 1);
    load(40, 0);
    std::string r = finish();
    ST_CHECKF(count(r, "hazard=RAW") == 1, "%s", r.c_str());
    ST_CHECK(count(r, "a_thread=0,0,0") == 1 && count(r, "b_thread=40,0,0") == 1);
    ST_CHECK(count(r, "a_rw=Write") == 1 && count(r, "b_rw=Read") == 1);
}
ST_TEST(race_barrier_control) {
    start(SAN_RACECHECK, 64);
    store(0, 0, 2);
    san_block_barrier();
    load(40, 0);
    store(40, 0, 3);           /* the reader itself: program order */
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}
ST_TEST(race_war_and_waw) {
    start(SAN_RACECHECK, 64);
    load(1, 8);
    store(2, 8, 4);            /* WAR with thread 1 */
    store(3, 8, 5);            /* WAW with thread 2 */
    std::string r = finish();
    ST_CHECKF(count(r, "hazard=WAR") == 1 && count(r, "hazard=WAW") == 1, "%s", r.c_str());
}
ST_TEST(race_same_thread_is_ordered) {
    start(SAN_RACECHECK, 64);
    store(5, 16, 6);
    load(5, 16);
    store(5, 16, 7);
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}
ST_TEST(race_same_warp_needs_syncwarp) {
    /* Volta and later: lanes of a warp are not in lock step (independent thread scheduling) */
    start(SAN_RACECHECK, 64);
    store(0, 24, 8);
    load(1, 24);
    std::string r = finish();
    ST_CHECKF(count(r, "hazard=RAW") == 1, "%s", r.c_str());
    start(SAN_RACECHECK, 64);
    store(0, 24, 9);
    san_warp_sync(0, 0x3u);
    load(1, 24);
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}
ST_TEST(race_syncwarp_orders_only_its_lanes) {
    start(SAN_RACECHECK, 64);
    store(0, 32, 10);
    san_warp_sync(0, 0x3u);    /* lanes 0 and 1 only */
    load(2, 32);
    std::string r = finish();
    ST_CHECKF(count(r, "hazard=RAW") == 1, "%s", r.c_str());
}
ST_TEST(race_unchanged_value_not_reported) {
    start(SAN_RACECHECK, 64);
    int v;
    memcpy(&v, smem + 40, 4);
    store(0, 40, v);           /* writes what is there */
    store(33, 40, v);
    load(34, 40);
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}
ST_TEST(race_atomics_are_not_hazards) {
    start(SAN_RACECHECK, 64);
    as(0);
    san_access(smem + 48, 4, true, true, PC_A);
    smem[48]++;
    as(40);
    san_access(smem + 48, 4, true, true, PC_B);
    smem[48]++;
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}
ST_TEST(race_blocks_do_not_race) {
    start(SAN_RACECHECK, 64);
    store(0, 56, 11);
    san_block_end();
    blockIdx = uint3{1, 0, 0};
    san_block_begin(smem, sizeof smem, smem + 512, 512);
    load(40, 56);
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}
ST_TEST(race_once_per_site_with_count) {
    start(SAN_RACECHECK, 64);
    for (unsigned t = 0; t < 8; t++) store(t, 64 + 4 * t, 100 + (int)t);
    for (unsigned t = 0; t < 8; t++) load(40 + t, 64 + 4 * t);
    std::string r = finish();
    ST_CHECKF(count(r, "hazard=RAW") == 1 && count(r, "count=8") == 1, "%s", r.c_str());
}
ST_TEST(race_dynamic_shared_named) {
    start(SAN_RACECHECK, 64);
    store(0, 600, 12);
    load(40, 600);
    std::string r = finish();
    ST_CHECKF(count(r, "extern __shared__") == 1, "%s", r.c_str());
}

/* >>initcheck (device memory from cudaMalloc: initcheck tracks device memory only) */
static float *dev_buf;
static void dev_alloc() {
    dev_buf = nullptr;
    ST_CHECK(cudaMalloc(&dev_buf, 64 * sizeof(float)) == cudaSuccess);
}
ST_TEST(initcheck_uninitialised_read_flagged) {
    start(SAN_INITCHECK, 32);
    dev_alloc();
    as(3);
    san_access(&dev_buf[5], 4, false, false, PC_A);
    cudaFree(dev_buf);
    std::string r = finish();
    ST_CHECKF(count(r, "initcheck") == 1 && count(r, "what=uninit") == 1 && count(r, "thread=3,0,0") == 1, "%s", r.c_str());
}
ST_TEST(initcheck_written_control) {
    start(SAN_INITCHECK, 32);
    dev_alloc();
    san_written(dev_buf, 8 * sizeof(float));          /* a cudaMemset of the first 8 */
    as(0);
    san_access(&dev_buf[7], 4, false, false, PC_A);
    san_access(&dev_buf[9], 4, true, false, PC_A);    /* a kernel's write */
    san_access(&dev_buf[9], 4, false, false, PC_B);
    std::string ok = cap;
    san_access(&dev_buf[8], 4, false, false, PC_B);   /* never written */
    cudaFree(dev_buf);
    std::string r = finish();
    ST_CHECKF(count(ok, "CUEMU-SAN") == 0, "%s", ok.c_str());
    ST_CHECK(count(r, "what=uninit") == 1);
}
ST_TEST(initcheck_partial_write_flagged) {
    start(SAN_INITCHECK, 32);
    dev_alloc();
    san_written(dev_buf, 2);
    as(0);
    san_access(dev_buf, 4, false, false, PC_A);
    cudaFree(dev_buf);
    std::string r = finish();
    ST_CHECK(count(r, "what=uninit") == 1);
}

ST_TEST(initcheck_managed_memory_not_tracked) {
    /* the host writes managed memory directly, where no tool sees it */
    start(SAN_INITCHECK, 32);
    float *m = nullptr;
    ST_CHECK(cudaMallocManaged(&m, 64 * sizeof(float), cudaMemAttachGlobal) == cudaSuccess);
    as(0);
    if (m) san_access(&m[3], 4, false, false, PC_A);
    cudaFree(m);
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
}

/* >>memcheck */
static char dev_mem[8192] __attribute__((aligned(256)));
ST_TEST(memcheck_past_the_end_flagged) {
    start(SAN_MEMCHECK, 32);
    san_alloc(dev_mem + 256, 100, 0);
    as(7);
    san_access(dev_mem + 256 + 96, 4, false, false, PC_A);   /* the last element */
    std::string ok = cap;
    san_access(dev_mem + 256 + 100, 4, true, false, PC_B);   /* one past */
    san_free(dev_mem + 256);
    std::string r = finish();
    ST_CHECKF(count(ok, "CUEMU-SAN") == 0, "%s", ok.c_str());
    ST_CHECKF(count(r, "what=oob") == 1 && count(r, "rw=write") == 1 && count(r, "asize=100") == 1, "%s", r.c_str());
}
ST_TEST(memcheck_freed_flagged) {
    start(SAN_MEMCHECK, 32);
    san_alloc(dev_mem + 1024, 64, 0);
    san_free(dev_mem + 1024);
    as(0);
    san_access(dev_mem + 1024, 4, false, false, PC_A);
    std::string r = finish();
    ST_CHECKF(count(r, "freed=1") == 1, "%s", r.c_str());
}
ST_TEST(memcheck_host_and_stack_memory_ignored) {
    start(SAN_MEMCHECK, 32);
    int local = 0;
    static int host_global;
    as(0);
    san_access(&local, 4, true, false, PC_A);
    san_access(&host_global, 4, false, false, PC_A);
    ST_CHECK(count(finish(), "CUEMU-SAN") == 0);
    (void)local;
}
ST_TEST(memcheck_bad_shared_access_reported) {
    start(SAN_MEMCHECK, 32);
    as(9);
    san_bad_access(smem + 40, 4, true, SAN_BAD_BOUNDS, PC_A);
    san_bad_access(smem + 2, 4, false, SAN_BAD_ALIGN, PC_B);
    std::string r = finish();
    ST_CHECKF(count(r, "space=shared") == 2 && count(r, "addr=0x28") == 1 && count(r, "what=misaligned") == 1, "%s",
              r.c_str());
}
ST_TEST(memcheck_fault_after_report_counted_once) {
    start(SAN_MEMCHECK, 32);
    san_alloc(dev_mem + 4096, 256, 0);
    as(0);
    san_access(dev_mem + 4096 + 256, 4, false, false, PC_A);
    san_bad_access(dev_mem + 4096 + 256, 0, false, SAN_BAD_FAULT, PC_A);   /* the guard page's fault that follows */
    san_free(dev_mem + 4096);
    std::string r = finish();
    ST_CHECKF(count(r, "CUEMU-SAN\tmemcheck") == 1, "%s", r.c_str());
}

ST_TEST(memcheck_leaks_listed_at_device_reset) {
    start(SAN_MEMCHECK, 32);
    san_test_leak_check(true);
    san_alloc(dev_mem + 2048, 64, 0);
    san_device_reset(1);                 /* another device's reset: not its allocation */
    std::string other = cap;
    san_device_reset(0);
    san_free(dev_mem + 2048);
    san_test_leak_check(false);
    std::string r = finish();
    ST_CHECKF(count(other, "CUEMU-SAN") == 0, "%s", other.c_str());
    ST_CHECKF(count(r, "CUEMU-SAN\tleak") == 1 && count(r, "size=64") == 1 && count(r, "bt=0x") == 1, "%s", r.c_str());
}

/* >>synccheck */
ST_TEST(synccheck_kinds) {
    start(SAN_SYNCCHECK, 32);
    as(16);
    bool a = san_sync_error("waits at __syncthreads() at x.cu:9 while other threads of the block wait at __syncthreads() at x.cu:5", PC_A);
    bool b = san_sync_error("lane 3 calls __shfl_sync with mask 0x00000001, which does not name it", PC_B);
    bool c = san_sync_error("lane 4 waits in __syncwarp with mask 0xffffffff while lanes of mask 0x0000ffff call __shfl_sync", PC_A);
    std::string r = finish();
    ST_CHECK(a && b && c);
    ST_CHECKF(count(r, "what=block") == 1 && count(r, "what=invalid") == 1 && count(r, "what=warp") == 1, "%s", r.c_str());
    ST_CHECK(!san_sync_error("no tool", PC_A));   /* without synccheck the executor reports it itself */
}

/* >>no tool: every entry point returns at once */
ST_TEST(no_tool_is_silent) {
    san_test_reset(SAN_NONE, &cap);
    cap.clear();
    san_block_begin(smem, sizeof smem, smem + 512, 512);
    as(0);
    san_access(smem, 4, true, false, PC_A);
    as(1);
    san_access(smem, 4, false, false, PC_B);
    san_block_end();
    san_kernel_end();
    ST_CHECK(cap.empty());
    san_test_reset(SAN_NONE, nullptr);
}

int main() {
    ST_RUN(race_raw_flagged);
    ST_RUN(race_barrier_control);
    ST_RUN(race_war_and_waw);
    ST_RUN(race_same_thread_is_ordered);
    ST_RUN(race_same_warp_needs_syncwarp);
    ST_RUN(race_syncwarp_orders_only_its_lanes);
    ST_RUN(race_unchanged_value_not_reported);
    ST_RUN(race_atomics_are_not_hazards);
    ST_RUN(race_blocks_do_not_race);
    ST_RUN(race_once_per_site_with_count);
    ST_RUN(race_dynamic_shared_named);
    ST_RUN(initcheck_uninitialised_read_flagged);
    ST_RUN(initcheck_written_control);
    ST_RUN(initcheck_partial_write_flagged);
    ST_RUN(initcheck_managed_memory_not_tracked);
    ST_RUN(memcheck_past_the_end_flagged);
    ST_RUN(memcheck_freed_flagged);
    ST_RUN(memcheck_host_and_stack_memory_ignored);
    ST_RUN(memcheck_bad_shared_access_reported);
    ST_RUN(memcheck_fault_after_report_counted_once);
    ST_RUN(memcheck_leaks_listed_at_device_reset);
    ST_RUN(synccheck_kinds);
    ST_RUN(no_tool_is_silent);
    return st_summary();
}
