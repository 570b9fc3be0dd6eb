/* cublasLt.h (cuemu) - the part of the cuBLASLt 13.1 API the emulator
   implements: handles, matmul / matrix layout / preference descriptors,
   heuristics, algorithm queries and cublasLtMatmul with its epilogues.
   Enum values, struct layouts and signatures are cuBLAS 13.1's. C99 and C++. */
#ifndef CUEMU_CUBLASLT_H
#define CUEMU_CUBLASLT_H

#include <stddef.h>
#include <stdint.h>

#include "cublas_api.h"

#if defined(__cplusplus)
extern "C" {
#endif

struct cublasLtContext;
typedef struct cublasLtContext *cublasLtHandle_t;

/* Opaque descriptors: the sizes are the library's (user code may hold an
   algo by value). */
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t *cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t *cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t *cublasLtMatmulPreference_t;

typedef enum {
    CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F = 0,
    CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 = 1,
    CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 = 2,
    CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F = 3,
    CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F = 4,
    CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F = 5,
    CUBLASLT_MATMUL_MATRIX_SCALE_END
} cublasLtMatmulMatrixScale_t;

typedef enum {
    CUBLASLT_POINTER_MODE_HOST = CUBLAS_POINTER_MODE_HOST,
    CUBLASLT_POINTER_MODE_DEVICE = CUBLAS_POINTER_MODE_DEVICE,
    CUBLASLT_POINTER_MODE_DEVICE_VECTOR = 2,
    CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO = 3,
    CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST = 4
} cublasLtPointerMode_t;

typedef enum {
    CUBLASLT_POINTER_MODE_MASK_HOST = 1,
    CUBLASLT_POINTER_MODE_MASK_DEVICE = 2,
    CUBLASLT_POINTER_MODE_MASK_DEVICE_VECTOR = 4,
    CUBLASLT_POINTER_MODE_MASK_ALPHA_DEVICE_VECTOR_BETA_ZERO = 8,
    CUBLASLT_POINTER_MODE_MASK_ALPHA_DEVICE_VECTOR_BETA_HOST = 16
} cublasLtPointerModeMask_t;

#define CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA (0x01ull << 0)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA (0x02ull << 0)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_IMMA (0x04ull << 0)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_DMMA (0x08ull << 0)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK (0xfeull << 0)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_TYPE_MASK (0xffull << 0)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_16F (0x01ull << 8)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F (0x02ull << 8)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_64F (0x04ull << 8)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32I (0x08ull << 8)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_TYPE_MASK (0xffull << 8)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F (0x01ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF (0x02ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32 (0x04ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_32F (0x08ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_64F (0x10ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8I (0x20ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E4M3 (0x40ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8F_E5M2 (0x80ull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_INPUT_TYPE_MASK (0xffull << 16)
#define CUBLASLT_NUMERICAL_IMPL_FLAGS_GAUSSIAN (0x01ull << 32)
typedef uint64_t cublasLtNumericalImplFlags_t;

/* >>matrix layout */
typedef enum {
    CUBLASLT_ORDER_COL = 0,
    CUBLASLT_ORDER_ROW = 1,
    CUBLASLT_ORDER_COL32 = 2,
    CUBLASLT_ORDER_COL4_4R2_8C = 3,
    CUBLASLT_ORDER_COL32_2R_4R4 = 4
} cublasLtOrder_t;

typedef enum { CUBLASLT_BATCH_MODE_STRIDED = 0, CUBLASLT_BATCH_MODE_POINTER_ARRAY = 1 } cublasLtBatchMode_t;

typedef enum {
    CUBLASLT_MATRIX_LAYOUT_TYPE = 0,                 /* uint32_t (cudaDataType) */
    CUBLASLT_MATRIX_LAYOUT_ORDER = 1,                /* int32_t, default CUBLASLT_ORDER_COL */
    CUBLASLT_MATRIX_LAYOUT_ROWS = 2,                 /* uint64_t */
    CUBLASLT_MATRIX_LAYOUT_COLS = 3,                 /* uint64_t */
    CUBLASLT_MATRIX_LAYOUT_LD = 4,                   /* int64_t */
    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,          /* int32_t, default 1 */
    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6, /* int64_t (elements), default 0 */
    CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET = 7,         /* int64_t, default 0 */
    CUBLASLT_MATRIX_LAYOUT_BATCH_MODE = 8            /* uint32_t, default CUBLASLT_BATCH_MODE_STRIDED */
} cublasLtMatrixLayoutAttribute_t;

/* >>matmul descriptor */
typedef enum {
    CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,           /* int32_t */
    CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,             /* int32_t */
    CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,           /* int32_t, default host */
    CUBLASLT_MATMUL_DESC_TRANSA = 3,                 /* int32_t */
    CUBLASLT_MATMUL_DESC_TRANSB = 4,                 /* int32_t */
    CUBLASLT_MATMUL_DESC_TRANSC = 5,                 /* int32_t */
    CUBLASLT_MATMUL_DESC_FILL_MODE = 6,              /* int32_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE = 7,               /* uint32_t */
    CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,           /* void * */
    CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10,     /* int64_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,  /* void * */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12,       /* int64_t */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13, /* int64_t */
    CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE = 14, /* int64_t */
    CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15,       /* int32_t */
    CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17,       /* void * */
    CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18,
    CUBLASLT_MATMUL_DESC_C_SCALE_POINTER = 19,
    CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = 20,
    CUBLASLT_MATMUL_DESC_AMAX_D_POINTER = 21,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22, /* int32_t, default -1 */
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER = 23,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER = 24,
    CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25,            /* int8_t */
    CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,        /* int32_t, default -1 */
    CUBLASLT_MATMUL_DESC_A_SCALE_MODE = 31,          /* int32_t */
    CUBLASLT_MATMUL_DESC_B_SCALE_MODE = 32,
    CUBLASLT_MATMUL_DESC_C_SCALE_MODE = 33,
    CUBLASLT_MATMUL_DESC_D_SCALE_MODE = 34,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE = 35,
    CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER = 36,   /* void * */
    CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE = 37,      /* int32_t */
    CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR = 38   /* pointer */
} cublasLtMatmulDescAttributes_t;

typedef enum {
    CUBLASLT_REDUCTION_SCHEME_NONE = 0,
    CUBLASLT_REDUCTION_SCHEME_INPLACE = 1,
    CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2,
    CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE = 4,
    CUBLASLT_REDUCTION_SCHEME_MASK = 0x7
} cublasLtReductionScheme_t;

typedef enum {
    CUBLASLT_EPILOGUE_DEFAULT = 1,
    CUBLASLT_EPILOGUE_RELU = 2,
    CUBLASLT_EPILOGUE_RELU_AUX = (CUBLASLT_EPILOGUE_RELU | 128),
    CUBLASLT_EPILOGUE_BIAS = 4,
    CUBLASLT_EPILOGUE_RELU_BIAS = (CUBLASLT_EPILOGUE_RELU | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_RELU_AUX_BIAS = (CUBLASLT_EPILOGUE_RELU_AUX | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_DRELU = 8 | 128,
    CUBLASLT_EPILOGUE_DRELU_BGRAD = CUBLASLT_EPILOGUE_DRELU | 16,
    CUBLASLT_EPILOGUE_GELU = 32,
    CUBLASLT_EPILOGUE_GELU_AUX = (CUBLASLT_EPILOGUE_GELU | 128),
    CUBLASLT_EPILOGUE_GELU_BIAS = (CUBLASLT_EPILOGUE_GELU | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_GELU_AUX_BIAS = (CUBLASLT_EPILOGUE_GELU_AUX | CUBLASLT_EPILOGUE_BIAS),
    CUBLASLT_EPILOGUE_DGELU = 64 | 128,
    CUBLASLT_EPILOGUE_DGELU_BGRAD = CUBLASLT_EPILOGUE_DGELU | 16,
    CUBLASLT_EPILOGUE_BGRADA = 256,
    CUBLASLT_EPILOGUE_BGRADB = 512
} cublasLtEpilogue_t;

/* >>preferences and heuristics */
typedef enum {
    CUBLASLT_SEARCH_BEST_FIT = 0,
    CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID = 1,
    CUBLASLT_SEARCH_RESERVED_02 = 2,
    CUBLASLT_SEARCH_RESERVED_03 = 3,
    CUBLASLT_SEARCH_RESERVED_04 = 4,
    CUBLASLT_SEARCH_RESERVED_05 = 5,
    CUBLASLT_SEARCH_RESERVED_06 = 6,
    CUBLASLT_SEARCH_RESERVED_07 = 7,
    CUBLASLT_SEARCH_RESERVED_08 = 8,
    CUBLASLT_SEARCH_RESERVED_09 = 9
} cublasLtMatmulSearch_t;

typedef enum {
    CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0,            /* uint32_t */
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,    /* uint64_t, default 0 */
    CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3,  /* uint32_t */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  /* uint32_t, default 256 */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
    CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT = 9,        /* float */
    CUBLASLT_MATMUL_PREF_IMPL_MASK = 12              /* uint64_t */
} cublasLtMatmulPreferenceAttributes_t;

typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef enum {
    CUBLASLT_ALGO_CAP_SPLITK_SUPPORT = 0,
    CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK = 1,
    CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT = 2,
    CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT = 3,
    CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT = 4,
    CUBLASLT_ALGO_CAP_UPLO_SUPPORT = 5,
    CUBLASLT_ALGO_CAP_TILE_IDS = 6,
    CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX = 7,
    CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER = 10,
    CUBLASLT_ALGO_CAP_POINTER_MODE_MASK = 11,
    CUBLASLT_ALGO_CAP_EPILOGUE_MASK = 12,
    CUBLASLT_ALGO_CAP_STAGES_IDS = 13,
    CUBLASLT_ALGO_CAP_LD_NEGATIVE = 14,
    CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS = 15,
    CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES = 16,
    CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES = 17,
    CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES = 18,
    CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES = 19,
    CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT = 21,
    CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT = 22
} cublasLtMatmulAlgoCapAttributes_t;

typedef enum {
    CUBLASLT_ALGO_CONFIG_ID = 0,
    CUBLASLT_ALGO_CONFIG_TILE_ID = 1,
    CUBLASLT_ALGO_CONFIG_SPLITK_NUM = 2,
    CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME = 3,
    CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING = 4,
    CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION = 5,
    CUBLASLT_ALGO_CONFIG_STAGES_ID = 6,
    CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID = 7,
    CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID = 8
} cublasLtMatmulAlgoConfigAttributes_t;

/* >>functions */
cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *lightHandle);
cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle);
const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status);
const char *CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status);
size_t CUBLASWINAPI cublasLtGetVersion(void);
size_t CUBLASWINAPI cublasLtGetCudartVersion(void);
cublasStatus_t CUBLASWINAPI cublasLtGetProperty(libraryPropertyType type, int *value);

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                                           const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                                           const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                                           cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                                           void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream);

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout);
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr, const void *buf,
                                                             size_t sizeInBytes);
cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr, void *buf,
                                                             size_t sizeInBytes, size_t *sizeWritten);

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                                     cublasComputeType_t computeType, cudaDataType_t scaleType);
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc);
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr, const void *buf,
                                                           size_t sizeInBytes);
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr, void *buf,
                                                           size_t sizeInBytes, size_t *sizeWritten);

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref);
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void *buf, size_t sizeInBytes);
cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr, void *buf,
                                                                 size_t sizeInBytes, size_t *sizeWritten);

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
                                                           cublasLtMatmulDesc_t operationDesc,
                                                           cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                                           cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                                           cublasLtMatmulPreference_t preference,
                                                           int requestedAlgoCount,
                                                           cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                                           int *returnAlgoCount);
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetIds(cublasLtHandle_t lightHandle, cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType, cudaDataType_t Atype,
                                                     cudaDataType_t Btype, cudaDataType_t Ctype, cudaDataType_t Dtype,
                                                     int requestedAlgoCount, int algoIdsArray[],
                                                     int *returnAlgoCount);
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle, cublasComputeType_t computeType,
                                                   cudaDataType_t scaleType, cudaDataType_t Atype,
                                                   cudaDataType_t Btype, cudaDataType_t Ctype, cudaDataType_t Dtype,
                                                   int algoId, cublasLtMatmulAlgo_t *algo);
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoCheck(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                                    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                                    cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                                    const cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulHeuristicResult_t *result);
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                              cublasLtMatmulAlgoCapAttributes_t attr, void *buf,
                                                              size_t sizeInBytes, size_t *sizeWritten);
cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                                 cublasLtMatmulAlgoConfigAttributes_t attr, void *buf,
                                                                 size_t sizeInBytes, size_t *sizeWritten);

#if defined(__cplusplus)
}
#endif

#endif
