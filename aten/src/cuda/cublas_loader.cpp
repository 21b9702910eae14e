// cuBLAS, loaded at run time with dlopen: the build needs neither its headers
// nor its library, and a machine without it runs ember's own GEMM kernel.
// Search order: $EMBER_CUBLAS_PATH (a file or a directory), the names
// libcublas.so.13/.12/.so on the loader's path (or already loaded, e.g. by
// PyTorch), the directories ember.cuda found in PyPI's nvidia-* packages, then
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64. One handle per device, created
// on first use and never destroyed (as PyTorch does: teardown order at exit
// is not ours to control).
#include "cublas_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ember/cuda/runtime.h"
#include "ember/errors.h"

namespace ember::cuda {
namespace cublas {
namespace {

// The cuBLAS types and values used here, as NVIDIA's cublas_api.h and
// library_types.h define them (C enums are ints in the ABI).
using Handle = void*;  // cublasHandle_t: pointer to an opaque context
using Status = int;    // cublasStatus_t
constexpr Status kStatusSuccess = 0;         // CUBLAS_STATUS_SUCCESS
constexpr int kOpN = 0, kOpT = 1;            // CUBLAS_OP_N, CUBLAS_OP_T
constexpr int kDefaultMath = 0;              // CUBLAS_DEFAULT_MATH (no TF32)
constexpr int kGemmDefault = -1;             // CUBLAS_GEMM_DEFAULT
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;  // CUDA_R_32F, _64F, _16F, _16BF
constexpr int kCompute32F = 68, kCompute64F = 70;            // CUBLAS_COMPUTE_32F, _64F
constexpr int kCompute32FFastTF32 = 77;                       // CUBLAS_COMPUTE_32F_FAST_TF32

using CreateFn = Status (*)(Handle*);
using DestroyFn = Status (*)(Handle);
using SetStreamFn = Status (*)(Handle, cudaStream_t);
using SetMathModeFn = Status (*)(Handle, int);
using GemmExFn = Status (*)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                            const void*, void*, int, int, int, int);
using GemmStridedBatchedExFn = Status (*)(Handle, int, int, int, int, int, const void*, const void*, int, int,
                                          long long, const void*, int, int, long long, const void*, void*, int, int,
                                          long long, int, int, int);
using StatusStringFn = const char* (*)(Status);

struct Library {
  void* dl = nullptr;
  std::string path;   // the file that loaded
  std::string error;  // why none did
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn set_stream = nullptr;
  SetMathModeFn set_math_mode = nullptr;
  GemmExFn gemm_ex = nullptr;
  GemmStridedBatchedExFn gemm_strided_batched_ex = nullptr;
  StatusStringFn status_string = nullptr;  // optional (cuBLAS >= 11.4)
};

constexpr int kMaxDevices = 64;
const char* const kNames[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};

std::mutex g_config_mutex;               // guards the three below
std::vector<std::string> g_search_dirs;  // from ember.cuda, before the first load
bool g_load_started = false;
std::string g_handle_error;
std::once_flag g_load_once;
Library g_library;
std::atomic<int> g_enabled_override{-1};  // -1: EMBER_DISABLE_CUBLAS decides
std::atomic<bool> g_allow_tf32{false};

struct DeviceHandle {
  std::mutex mutex;  // held from set-stream to the enqueued GEMM: the handle's stream is shared state
  Handle handle = nullptr;
  bool failed = false;
};
DeviceHandle g_handles[kMaxDevices];

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool switched_on() {
  const int forced = g_enabled_override.load(std::memory_order_relaxed);
  if (forced >= 0) return forced != 0;
  static const bool env_off = env_flag("EMBER_DISABLE_CUBLAS");
  return !env_off;
}

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct Candidate {
  std::string path;
  bool explicit_choice;  // from EMBER_CUBLAS_PATH: report it when it is missing
};

std::vector<Candidate> candidates(const std::vector<std::string>& extra_dirs) {
  std::vector<Candidate> out;
  auto add_dir = [&](const std::string& dir, bool explicit_choice) {
    for (const char* name : kNames) out.push_back({dir + "/" + name, explicit_choice});
  };
  if (const char* env = std::getenv("EMBER_CUBLAS_PATH"); env && *env) {
    if (is_directory(env)) add_dir(env, false);
    else out.push_back({env, true});
  }
  for (const char* name : kNames) out.push_back({name, false});
  for (const std::string& dir : extra_dirs) add_dir(dir, false);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(var); home && *home) add_dir(std::string(home) + "/lib64", false);
  add_dir("/usr/local/cuda/lib64", false);
  return out;
}

// libcublas needs libcublasLt of the same version; loading it first from the
// same directory finds it even where libcublas's RUNPATH would not.
void preload_lt(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  std::string lt = path;
  lt.insert(slash + 1 + std::strlen("libcublas"), "Lt");
  dlopen(lt.c_str(), RTLD_NOW | RTLD_GLOBAL);  // failure is fine: libcublas reports what it misses
}

template <typename Fn>
bool resolve(void* dl, const char* name, Fn& fn, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(dl, name));
  if (!fn) error = std::string("missing symbol ") + name;
  return fn != nullptr;
}

bool try_open(const Candidate& candidate, Library& lib, std::string& error) {
  const std::string& path = candidate.path;
  if (path.find('/') != std::string::npos) {
    if (::access(path.c_str(), F_OK) != 0) {  // absent: worth a line only when asked for by name
      if (candidate.explicit_choice) error = "EMBER_CUBLAS_PATH=" + path + ": no such file";
      return false;
    }
    preload_lt(path);
  }
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char* why = dlerror();
    error = why ? why : path + ": dlopen failed";
    return false;
  }
  std::string missing;
  bool ok = resolve(dl, "cublasCreate_v2", lib.create, missing) && resolve(dl, "cublasDestroy_v2", lib.destroy, missing) &&
            resolve(dl, "cublasSetStream_v2", lib.set_stream, missing) &&
            resolve(dl, "cublasSetMathMode", lib.set_math_mode, missing) &&
            resolve(dl, "cublasGemmEx", lib.gemm_ex, missing) &&
            resolve(dl, "cublasGemmStridedBatchedEx", lib.gemm_strided_batched_ex, missing);
  if (!ok) {
    error = path + ": " + missing;
    dlclose(dl);
    return false;
  }
  lib.status_string = reinterpret_cast<StatusStringFn>(dlsym(dl, "cublasGetStatusString"));
  lib.dl = dl;
  lib.path = path;
  struct link_map* map = nullptr;
  if (dlinfo(dl, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) lib.path = map->l_name;
  return true;
}

void load(Library& lib) {
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> lock(g_config_mutex);
    g_load_started = true;
    dirs = g_search_dirs;
  }
  std::string report;
  for (const Candidate& candidate : candidates(dirs)) {
    std::string error;
    if (try_open(candidate, lib, error)) return;
    if (!error.empty()) report += (report.empty() ? "" : "; ") + error;
  }
  lib.error = "cuBLAS not found (" + (report.empty() ? std::string("no candidate file exists") : report) +
              "); set EMBER_CUBLAS_PATH to libcublas.so or its directory";
}

const Library& library() {
  std::call_once(g_load_once, [] { load(g_library); });
  return g_library;
}

std::string status_text(const Library& lib, Status st) {
  const char* s = lib.status_string ? lib.status_string(st) : nullptr;
  return (s ? std::string(s) : std::string("cuBLAS status")) + " (" + std::to_string(st) + ")";
}

void check_status(const Library& lib, Status st, const char* call, const char* op) {
  EMBER_CHECK(st == kStatusSuccess, Runtime, op, ": ", call, " failed: ", status_text(lib, st));
}

int data_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return kR32F;
    case ScalarType::Float64: return kR64F;
    case ScalarType::Float16: return kR16F;
    case ScalarType::BFloat16: return kR16BF;
    default: EMBER_FAIL(Runtime, "cuBLAS GEMM: unsupported dtype ", dtype_name(t));
  }
}

// The device's handle, created on first use with `device` current; null when creation failed.
Handle device_handle(const Library& lib, DeviceHandle& slot, int device) {
  if (slot.handle || slot.failed) return slot.handle;
  Handle h = nullptr;
  Status st = lib.create(&h);
  if (st == kStatusSuccess) st = lib.set_math_mode(h, kDefaultMath);
  if (st != kStatusSuccess) {
    if (h) lib.destroy(h);
    slot.failed = true;
    std::lock_guard<std::mutex> lock(g_config_mutex);
    g_handle_error += "; no cuBLAS handle on cuda:" + std::to_string(device) + ": " + status_text(lib, st);
    return nullptr;
  }
  slot.handle = h;
  return h;
}

}  // namespace

bool fits(const GemmCall& g) {
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch})
    if (v > INT_MAX) return false;
  return true;
}

bool gemm(const GemmCall& g, int device, cudaStream_t stream, const char* op) {
  const Library& lib = library();
  EMBER_CHECK(lib.dl, Runtime, op, ": ", lib.error);
  EMBER_CHECK(device >= 0 && device < kMaxDevices, Runtime, op, ": device index ", device, " out of range for cuBLAS");
  DeviceHandle& slot = g_handles[device];
  std::lock_guard<std::mutex> lock(slot.mutex);
  Handle h = device_handle(lib, slot, device);
  if (!h) return false;
  check_status(lib, lib.set_stream(h, stream), "cublasSetStream_v2", op);
  const int dt = data_type(g.dtype);
  const bool is_double = g.dtype == ScalarType::Float64;
  const bool tf32 = g.dtype == ScalarType::Float32 && g_allow_tf32.load(std::memory_order_relaxed);
  const int compute = is_double ? kCompute64F : tf32 ? kCompute32FFastTF32 : kCompute32F;
  const float one_f = 1.f, zero_f = 0.f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* alpha = is_double ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = is_double ? static_cast<const void*>(&zero_d) : &zero_f;
  const int op_a = g.trans_a ? kOpT : kOpN, op_b = g.trans_b ? kOpT : kOpN;
  if (g.batch == 1) {
    check_status(lib,
                 lib.gemm_ex(h, op_a, op_b, (int)g.m, (int)g.n, (int)g.k, alpha, g.a, dt, (int)g.lda, g.b, dt,
                             (int)g.ldb, beta, g.c, dt, (int)g.ldc, compute, kGemmDefault),
                 "cublasGemmEx", op);
  } else {
    check_status(lib,
                 lib.gemm_strided_batched_ex(h, op_a, op_b, (int)g.m, (int)g.n, (int)g.k, alpha, g.a, dt, (int)g.lda,
                                             g.stride_a, g.b, dt, (int)g.ldb, g.stride_b, beta, g.c, dt, (int)g.ldc,
                                             g.stride_c, (int)g.batch, compute, kGemmDefault),
                 "cublasGemmStridedBatchedEx", op);
  }
  return true;
}

}  // namespace cublas

bool cublas_available() {
  if (!cublas::switched_on() || device_count() == 0) return false;
  return cublas::library().dl != nullptr;
}

std::string cublas_status() {
  const cublas::Library& lib = cublas::library();
  std::string s = lib.dl ? "cuBLAS loaded from " + lib.path : lib.error;
  {
    std::lock_guard<std::mutex> lock(cublas::g_config_mutex);
    s += cublas::g_handle_error;
  }
  if (!cublas::switched_on()) s += "; switched off (EMBER_DISABLE_CUBLAS or ember.backends.cuda), ember's kernel runs";
  if (device_count() == 0) s += "; no CUDA device";
  return s;
}

void set_cublas_search_dirs(const std::vector<std::string>& dirs) {
  std::lock_guard<std::mutex> lock(cublas::g_config_mutex);
  if (!cublas::g_load_started) cublas::g_search_dirs = dirs;
}

void set_cublas_enabled(bool enabled) { cublas::g_enabled_override.store(enabled ? 1 : 0); }
void set_allow_tf32(bool allow) { cublas::g_allow_tf32.store(allow); }
bool allow_tf32() { return cublas::g_allow_tf32.load(); }

}  // namespace ember::cuda
