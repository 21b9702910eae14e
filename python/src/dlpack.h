// The DLPack ABI (v1.1 of the spec at dmlc/dlpack, MIT licensed): the C structs a producer
// and a consumer exchange inside a PyCapsule. Written from the spec; field order and enum
// values are the ABI and must not change.
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1

// DLManagedTensorVersioned::flags
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef enum : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17,
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U,
  // 7..17: the float8/float6/float4 formats of v1.1 (ember has none of them).
} DLDataTypeCode;

typedef struct {
  uint8_t code;    // a DLDataTypeCode
  uint8_t bits;    // of one lane
  uint16_t lanes;  // 1 for scalars
} DLDataType;

typedef struct {
  void* data;             // the first element is at (char*)data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;         // ndim entries
  int64_t* strides;       // ndim entries, in elements; NULL: compact row-major
  uint64_t byte_offset;
} DLTensor;

// The legacy (pre-1.0) capsule "dltensor".
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

// The versioned capsule "dltensor_versioned" (1.0 and later).
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"
