// nvml_api.h: the slice of NVML's C API that balerbench uses, declared here so
// the build needs no CUDA toolkit. Types, values and signatures are NVML's
// (nvml.h, API version 2 entry points); libnvidia-ml.so.1 is loaded at run
// time (nvml_library.h). The fake library in tests/fakes implements the same
// declarations.
#pragma once

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef int nvmlReturn_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999,
};

enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
// nvmlEnableState_t (persistence mode), nvmlComputeMode_t; C enums, int-sized.
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
// nvmlDeviceGetMigMode's current and pending modes.
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

// Buffer sizes from nvml.h.
enum {
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
};

typedef nvmlReturn_t (*nvmlInit_v2_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t, unsigned long long*);  // mJ
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int*);                     // mW
typedef nvmlReturn_t (*nvmlDeviceGetEnforcedPowerLimit_fn)(nvmlDevice_t, unsigned int*);             // mW
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementLimitConstraints_fn)(nvmlDevice_t, unsigned int*,
                                                                        unsigned int*);  // mW
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementDefaultLimit_fn)(nvmlDevice_t, unsigned int*);  // mW
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementLimit_fn)(nvmlDevice_t, unsigned int*);         // mW
typedef nvmlReturn_t (*nvmlDeviceSetPowerManagementLimit_fn)(nvmlDevice_t, unsigned int);          // mW, root
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);             // C
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, int, unsigned int*);              // MHz
typedef nvmlReturn_t (*nvmlDeviceGetCurrentClocksThrottleReasons_fn)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetPersistenceMode_fn)(nvmlDevice_t, int*);  // NVML_FEATURE_*
typedef nvmlReturn_t (*nvmlDeviceGetComputeMode_fn)(nvmlDevice_t, int*);      // NVML_COMPUTEMODE_*
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int*, unsigned int*);  // current, pending

// nvmlProcessInfo_t as the _v2 and _v3 entry points of nvmlDeviceGetComputeRunningProcesses take it
// (the unversioned v1 entry point takes only the first two fields, and is not used).
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE (~0ULL) without permission
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;
// In: *count = the buffer's length; out: the number of processes. A buffer too small (or null)
// returns NVML_ERROR_INSUFFICIENT_SIZE with *count set to what is needed.
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);

// nvmlMemory_t (v1): bytes of the device's framebuffer memory.
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);

// One process's utilisation over the driver's last sample period (percent), stamped with the CPU
// time in microseconds since the Unix epoch.
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;
// Samples newer than the last argument; a null buffer asks for the count (INSUFFICIENT_SIZE), and
// NOT_FOUND means no process had a sample since then.
typedef nvmlReturn_t (*nvmlDeviceGetProcessUtilization_fn)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                                           unsigned int*, unsigned long long);

// nvmlDeviceGetFieldValues (driver R450 and newer): one query of several fields. The power fields
// give milliwatts as an unsigned int.
enum {
  NVML_FI_DEV_POWER_AVERAGE = 185,  // averaged over 1 s; Ampere (except GA100) and newer
  NVML_FI_DEV_POWER_INSTANT = 186,  // the current reading; every architecture
};
enum { NVML_VALUE_TYPE_DOUBLE = 0, NVML_VALUE_TYPE_UNSIGNED_INT = 1 };
typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;
typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // microseconds since 1970
  long long latencyUsec;
  int valueType;          // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t, int, nvmlFieldValue_t*);

}  // extern "C"
