/* pool.cpp - the worker threads that run the blocks of a grid (and the
   libraries' heavy loops). CUEMU_THREADS sets their number, the caller
   included; the default is the number of host CPUs, at most 16. Every job
   here is device work (a grid's blocks, a library's computation): each
   participant runs it in the device's floating-point state (access.h). */
#include "access.h"
#include "state.h"
#include <condition_variable>
#include <stdlib.h>
#include <thread>

namespace cuemu {

namespace {

struct Pool {
    std::mutex mu;
    std::condition_variable wake, done;
    std::vector<std::thread> threads;
    const std::function<void(int)> *job = nullptr;
    int wanted = 0;          /* participants of the current job, caller included */
    int started = 0;         /* participants that took a slot */
    int finished = 0;
    uint64_t generation = 0;
    bool stopping = false;

    void worker() {
        uint64_t seen = 0;
        std::unique_lock<std::mutex> lk(mu);
        for (;;) {
            wake.wait(lk, [&] { return stopping || (generation != seen && started < wanted); });
            if (stopping) return;
            seen = generation;
            int slot = started++;
            const std::function<void(int)> *j = job;
            lk.unlock();
            {
                DeviceFpScope fp(false);
                (*j)(slot);
            }
            lk.lock();
            if (++finished == wanted) done.notify_all();
        }
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> lk(mu);
            stopping = true;
        }
        wake.notify_all();
        for (auto &t : threads) t.join();
    }
};

Pool &pool() {
    static Pool p;
    return p;
}

thread_local bool t_in_pool_job = false;

int configured_size() {
    static int n = [] {
        const char *e = getenv("CUEMU_THREADS");
        int v = e ? atoi(e) : (int)std::thread::hardware_concurrency();
        if (v < 1) v = 1;
        if (v > 16) v = 16;
        return v;
    }();
    return n;
}

} /* namespace */

int pool_size() { return configured_size(); }

void pool_run(int n, const std::function<void(int)> &job) {
    if (n > configured_size()) n = configured_size();
    if (n <= 1 || t_in_pool_job) {      /* one participant, or a job inside a job: the caller does it all */
        bool was = t_in_pool_job;
        t_in_pool_job = true;
        {
            DeviceFpScope fp(false);
            job(0);
        }
        t_in_pool_job = was;
        return;
    }
    Pool &p = pool();
    std::unique_lock<std::mutex> lk(p.mu);
    while ((int)p.threads.size() < configured_size() - 1) p.threads.emplace_back([&p] { p.worker(); });
    p.job = &job;
    p.wanted = n;
    p.started = 1;       /* the caller takes slot 0 */
    p.finished = 0;
    p.generation++;
    lk.unlock();
    p.wake.notify_all();
    t_in_pool_job = true;
    {
        DeviceFpScope fp(false);
        job(0);
    }
    t_in_pool_job = false;
    lk.lock();
    if (++p.finished < p.wanted) p.done.wait(lk, [&] { return p.finished == p.wanted; });
    p.job = nullptr;
    p.wanted = 0;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t chunks = (n + grain - 1) / grain;
    std::atomic<int64_t> next{0};
    pool_run((int)(chunks < 64 ? chunks : 64), [&](int) {
        for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
            int64_t b = c * grain, e = b + grain < n ? b + grain : n;
            fn(b, e);
        }
    });
}

} /* namespace cuemu */
