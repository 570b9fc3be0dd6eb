/* nccl.h (cuemu) - NCCL 2.28 for the emulated device: the communicator
   API and the collectives AllReduce, Broadcast/Bcast, Reduce, AllGather and
   ReduceScatter, between processes on one machine (each process one rank,
   its own emulated GPU). Declarations, types, enum values and macros as
   NCCL 2.28.9's nccl.h gives them (abi_check.py holds them against it);
   the implementation is tests/emu/src/nccl.cpp, linked with -lnccl.
   Usable from C and C++. */
#ifndef NCCL_H_
#define NCCL_H_

#include "cuda_runtime.h"
#include "cuda_fp16.h"
#include "cuda_bf16.h"

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22809
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

#include <limits.h>

/* Opaque handle to communicator */
typedef struct ncclComm *ncclComm_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* Error type */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* Communicator configuration. Users can assign value to attributes to
   specify the behavior of a communicator. */
typedef struct ncclConfig_v22800 {
    /* attributes that users should never touch. */
    size_t size;
    unsigned int magic;
    unsigned int version;
    /* attributes that users are able to customize. */
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

/* Config initializer must be assigned to initialize config structure when
   it is created. Not initialized config will result in NCCL error. */
#define NCCL_CONFIG_INITIALIZER {                                       \
    sizeof(ncclConfig_t),                             /* size */        \
    0xcafebeef,                                       /* magic */       \
    NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */     \
    NCCL_CONFIG_UNDEF_INT,                    /* blocking */            \
    NCCL_CONFIG_UNDEF_INT,                    /* cgaClusterSize */      \
    NCCL_CONFIG_UNDEF_INT,                    /* minCTAs */             \
    NCCL_CONFIG_UNDEF_INT,                    /* maxCTAs */             \
    NCCL_CONFIG_UNDEF_PTR,                    /* netName */             \
    NCCL_CONFIG_UNDEF_INT,                    /* splitShare */          \
    NCCL_CONFIG_UNDEF_INT,                    /* trafficClass */        \
    NCCL_CONFIG_UNDEF_PTR,                    /* commName */            \
    NCCL_CONFIG_UNDEF_INT,                    /* collnetEnable */       \
    NCCL_CONFIG_UNDEF_INT,                    /* CTAPolicy */           \
    NCCL_CONFIG_UNDEF_INT,                    /* shrinkShare */         \
    NCCL_CONFIG_UNDEF_INT,                    /* nvlsCTAs */            \
    NCCL_CONFIG_UNDEF_INT,                    /* nChannelsPerNetPeer */ \
    NCCL_CONFIG_UNDEF_INT,                    /* nvlinkCentricSched */  \
}

/* Memory for NCCL buffers (here: cudaMalloc / cudaFree). */
ncclResult_t ncclMemAlloc(void **ptr, size_t size);
ncclResult_t ncclMemFree(void *ptr);

/* The version of the library: NCCL_VERSION_CODE. */
ncclResult_t ncclGetVersion(int *version);

/* An Id for ncclCommInitRank: call once, share with every rank. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);

/* Creates a communicator with the given config (NULL: the defaults). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config);

/* Creates a communicator (multi thread/process version): blocks until all
   nranks ranks have called it with the same commId. */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);

/* Completes the communicator's outstanding operations. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);

/* Frees the communicator (finalizing it first where needed). */
ncclResult_t ncclCommDestroy(ncclComm_t comm);

/* Aborts the communicator's uncompleted operations and frees it. */
ncclResult_t ncclCommAbort(ncclComm_t comm);

/* A string for each result code. */
const char *ncclGetErrorString(ncclResult_t result);

/* A human-readable message for the last error. */
const char *ncclGetLastError(ncclComm_t comm);

/* The communicator's asynchronous state: ncclSuccess, ncclInProgress or an
   error. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);

/* Number of ranks, the CUDA device, this rank. */
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);

/* Reduction operation selector */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/* Data types */
typedef enum {
    ncclInt8 = 0, ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2, ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6, ncclHalf = 6,
    ncclFloat32 = 7, ncclFloat = 7,
    ncclFloat64 = 8, ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

/* Collective communication operations: stream-ordered, every rank calls
   the same ones in the same order. */
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream);

/* Group semantics: the calls between ncclGroupStart and ncclGroupEnd are
   issued together at ncclGroupEnd. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
