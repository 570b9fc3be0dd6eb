/* Two threads create a context each at once and compute (issue 35): under
   ThreadSanitizer (make test-embed) no race, the process-wide state (the
   CPU-sharing monitor, the opt-in binding) included. */
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"
#include <pthread.h>
static void *work(void *arg) {
    gpudl_ctx_desc d; gpudl_ctx *c; gpudl_tensor a, b, o; int64_t s[2] = {64, 64}; (void)arg;
    memset(&d, 0, sizeof d); d.device = GPUDL_DEVICE_CPU; d.log = gpudl_log_quiet; d.bind_threads = 1;
    if (gpudl_ctx_create(&d, &c) != GPUDL_OK) return NULL;
    gpudl_tensor_create(c, &a, GPUDL_F32, 2, s); gpudl_tensor_create(c, &b, GPUDL_F32, 2, s); gpudl_tensor_create(c, &o, GPUDL_F32, 2, s);
    gpudl_tensor_uniform(c, &a, -1, 1); gpudl_tensor_uniform(c, &b, -1, 1);
    gpudl_matmul(c, &o, &a, &b, 0, 0, 1.0f, 0.0f);
    gpudl_tensor_free(c, &a); gpudl_tensor_free(c, &b); gpudl_tensor_free(c, &o); gpudl_ctx_destroy(c);
    return NULL;
}
int main(void) { pthread_t t1, t2; pthread_create(&t1, 0, work, 0); pthread_create(&t2, 0, work, 0); pthread_join(t1, 0); pthread_join(t2, 0); return 0; }
