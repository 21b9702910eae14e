// _C._TestCachingAllocator: the device caching allocator over host memory with
// a fixed capacity per device, so its logic is tested on machines without a GPU
// (tests/test_device_caching_allocator.py).
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <map>
#include <random>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/device_caching_allocator.h"

namespace py = pybind11;

namespace ember::python {
namespace {

class HostMemory final : public RawDeviceMemory {
 public:
  explicit HostMemory(size_t capacity) : capacity_(capacity) {}
  // The allocator never releases segments itself on destruction; whatever is left goes here.
  ~HostMemory() override {
    for (auto& [p, entry] : blocks_) std::free(p);
  }

  void* allocate(size_t nbytes, int device) override {
    size_t& used = in_use_[device];
    if (used + nbytes > capacity_) return nullptr;
    void* p = std::aligned_alloc(512, (nbytes + 511) / 512 * 512);
    if (!p) return nullptr;
    used += nbytes;
    blocks_.emplace(p, std::make_pair(nbytes, device));
    ++allocs;
    return p;
  }
  void release(void* ptr, int device) override {
    auto it = blocks_.find(ptr);
    if (it == blocks_.end() || it->second.second != device) throw std::logic_error("HostMemory: bad release");
    in_use_[device] -= it->second.first;
    blocks_.erase(it);
    std::free(ptr);
    ++frees;
  }
  void before_release(int) override { ++before_release_calls; }

  size_t in_use() const {
    size_t total = 0;
    for (auto& [dev, n] : in_use_) total += n;
    return total;
  }

  int64_t allocs = 0, frees = 0, before_release_calls = 0;

 private:
  size_t capacity_;
  std::map<int, size_t> in_use_;
  std::unordered_map<void*, std::pair<size_t, int>> blocks_;
};

// Members are destroyed in reverse: the allocator's bookkeeping first, then the memory.
struct TestCachingAllocator {
  explicit TestCachingAllocator(size_t capacity) : raw(capacity), alloc(&raw) {}
  HostMemory raw;
  DeviceCachingAllocator alloc;
};

void* as_ptr(uintptr_t addr) { return reinterpret_cast<void*>(addr); }

// Threads doing random malloc/free in C++ (Python threads barely overlap under the GIL).
// Each block's ends are stamped with a tag checked before its free; returns the mismatches
// (a block handed out twice) plus exceptions.
int64_t hammer(DeviceCachingAllocator& alloc, int nthreads, int iterations) {
  static constexpr size_t kSizes[] = {700, 5000, 40000, 300000, (2 << 20) + 1, 5 << 20};
  constexpr size_t kStamp = 256;
  std::atomic<int64_t> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::tuple<unsigned char*, size_t, unsigned char>> live;
      auto release = [&](size_t k) {
        auto [p, n, tag] = live[k];
        for (size_t i = 0; i < kStamp; ++i)
          if (p[i] != tag || p[n - 1 - i] != tag) { ++bad; break; }
        alloc.free(p);
        live[k] = live.back();
        live.pop_back();
      };
      try {
        for (int i = 0; i < iterations; ++i) {
          if (live.size() < 16 && rng() % 2) {
            size_t n = kSizes[rng() % std::size(kSizes)];
            auto* p = static_cast<unsigned char*>(alloc.malloc(n, t % 2, t % 3));
            auto tag = static_cast<unsigned char>(t * 37 + i);  // mostly differs between threads
            std::memset(p, tag, kStamp);
            std::memset(p + n - kStamp, tag, kStamp);
            live.emplace_back(p, n, tag);
          } else if (!live.empty()) {
            release(rng() % live.size());
          }
        }
        while (!live.empty()) release(live.size() - 1);
      } catch (...) {
        ++bad;
      }
    });
  for (auto& th : threads) th.join();
  return bad.load();
}

}  // namespace

// ember::Error derives from std::runtime_error, which pybind11 turns into RuntimeError.
// malloc/free drop the GIL so threads in the tests really contend for the allocator's mutex.
void bind_caching_allocator_testing(py::module_& m) {
  py::class_<TestCachingAllocator>(m, "_TestCachingAllocator")
      .def(py::init<size_t>(), py::arg("capacity_bytes"))
      .def(
          "malloc",
          [](TestCachingAllocator& a, size_t nbytes, int device, uintptr_t stream) {
            return reinterpret_cast<uintptr_t>(a.alloc.malloc(nbytes, device, stream));
          },
          py::arg("nbytes"), py::arg("device") = 0, py::arg("stream") = 0, py::call_guard<py::gil_scoped_release>())
      .def("free", [](TestCachingAllocator& a, uintptr_t addr) { a.alloc.free(as_ptr(addr)); }, py::arg("addr"),
           py::call_guard<py::gil_scoped_release>())
      .def("empty_cache", [](TestCachingAllocator& a) { a.alloc.empty_cache(); })
      .def(
          "stats",
          [](const TestCachingAllocator& a, int device) {
            cuda::MemoryStats s = a.alloc.stats(device);
            py::dict d;
            d["allocated"] = s.allocated;
            d["max_allocated"] = s.max_allocated;
            d["reserved"] = s.reserved;
            d["max_reserved"] = s.max_reserved;
            return d;
          },
          py::arg("device") = 0)
      .def("reset_peak", [](TestCachingAllocator& a, int device) { a.alloc.reset_peak(device); }, py::arg("device") = 0)
      .def("block_size", [](const TestCachingAllocator& a, uintptr_t addr) { return a.alloc.block_size(as_ptr(addr)); },
           py::arg("addr"))
      .def("hammer", [](TestCachingAllocator& a, int threads, int iterations) { return hammer(a.alloc, threads, iterations); },
           py::arg("threads"), py::arg("iterations"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("raw_allocs", [](const TestCachingAllocator& a) { return a.raw.allocs; })
      .def_property_readonly("raw_frees", [](const TestCachingAllocator& a) { return a.raw.frees; })
      .def_property_readonly("raw_in_use", [](const TestCachingAllocator& a) { return a.raw.in_use(); })
      .def_property_readonly("before_release_calls", [](const TestCachingAllocator& a) { return a.raw.before_release_calls; });
}

}  // namespace ember::python
