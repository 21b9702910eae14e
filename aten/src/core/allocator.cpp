// The CPU allocator. Blocks of 1 MiB and more are kept on free lists by size
// when freed, so the next out-of-place op of that size reuses warm pages
// instead of faulting in fresh ones (see docs/ARCHITECTURE.md, "Memory").
// A full cache evicts the blocks freed longest ago: blocks of sizes no longer
// asked for must not keep the current loop's sizes out.
#include "ember/allocator.h"

#include <sys/mman.h>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>

#include "ember/errors.h"

namespace ember {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kLargeBlock = 1 << 20;
constexpr size_t kMaxCached = size_t(2) << 30;  // beyond this, large frees go back to the OS

// Bytes held by tensors (requested size of small blocks, rounded size of large
// ones) and their peak. Globals, so a free reaches them without instance().
std::atomic<size_t> g_in_use{0}, g_peak{0};

// One relaxed add per allocation; the peak is written only when it grows.
void raise_peak(size_t now) {
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
inline void note_allocated(size_t bytes) {
  size_t now = g_in_use.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (now > g_peak.load(std::memory_order_relaxed)) raise_peak(now);
}
inline void note_freed(size_t bytes) { g_in_use.fetch_sub(bytes, std::memory_order_relaxed); }

class CachingCpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, int /*device*/) override {
    if (nbytes < kLargeBlock) {
      // malloc and align by hand: glibc's posix_memalign splits and frees chunk
      // remainders on every call (~800 instructions, a fifth of a small op).
      // malloc's 16-byte alignment leaves at least 16 bytes before `aligned`: the size goes there.
      void* raw = std::malloc(nbytes + kAlignment);
      if (!raw) oom(nbytes);
      auto aligned = (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~uintptr_t(kAlignment - 1);
      reinterpret_cast<size_t*>(aligned)[-1] = nbytes;
      note_allocated(nbytes);
      return {reinterpret_cast<void*>(aligned), raw, &free_small};
    }
    size_t rounded = (nbytes + 4095) & ~size_t(4095);
    {
      std::lock_guard<std::mutex> g(mutex_);
      // Best fit within 1/8 of the request, so big blocks are not wasted on small asks.
      auto it = free_.lower_bound(rounded);
      if (it != free_.end() && it->first <= rounded + rounded / 8) {
        void* p = it->second->second;
        size_t size = it->first;
        freed_order_.erase(it->second);
        free_.erase(it);
        cached_ -= size;
        allocated_ += size;
        note_allocated(size);
        return {p, reinterpret_cast<void*>(size), &free_large};
      }
      allocated_ += rounded;
    }
    void* p = nullptr;
    if (posix_memalign(&p, 4096, rounded) != 0) {
      empty_cache();
      if (posix_memalign(&p, 4096, rounded) != 0) {
        std::lock_guard<std::mutex> g(mutex_);
        allocated_ -= rounded;
        oom(nbytes);
      }
    }
    madvise(p, rounded, MADV_HUGEPAGE);
    note_allocated(rounded);
    return {p, reinterpret_cast<void*>(rounded), &free_large};
  }

  void release(void* p, size_t size) {
    note_freed(size);
    std::lock_guard<std::mutex> g(mutex_);
    allocated_ -= size;
    if (size > kMaxCached) { std::free(p); return; }
    while (cached_ + size > kMaxCached) evict_oldest();
    freed_order_.emplace_back(size, p);
    free_.emplace(size, std::prev(freed_order_.end()));
    cached_ += size;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> g(mutex_);
    for (auto& [size, p] : freed_order_) std::free(p);
    freed_order_.clear();
    free_.clear();
    cached_ = 0;
  }

  CpuCacheStats stats() {
    std::lock_guard<std::mutex> g(mutex_);
    return {cached_, allocated_};
  }

 private:
  // PyTorch's message, so scripts that catch it by text keep working.
  [[noreturn]] static void oom(size_t n) {
    EMBER_FAIL(Runtime, "DefaultCPUAllocator: can't allocate memory: you tried to allocate ", n,
               " bytes. Error code 12 (Cannot allocate memory)");
  }
  static void free_small(void* raw, void* data) {
    note_freed(static_cast<size_t*>(data)[-1]);
    std::free(raw);
  }
  static void free_large(void* ctx, void* p);

  // Called with mutex_ held and the cache not empty.
  void evict_oldest() {
    const auto oldest = freed_order_.begin();
    auto it = free_.lower_bound(oldest->first);
    while (it->second != oldest) ++it;  // blocks of one size are few
    free_.erase(it);
    cached_ -= oldest->first;
    std::free(oldest->second);
    freed_order_.erase(oldest);
  }

  using Block = std::pair<size_t, void*>;  // rounded size, address
  std::mutex mutex_;
  std::list<Block> freed_order_;                           // cached blocks, freed longest ago first
  std::multimap<size_t, std::list<Block>::iterator> free_;  // the same blocks by size
  size_t cached_ = 0, allocated_ = 0;
};

CachingCpuAllocator* instance() {
  static auto* a = new CachingCpuAllocator();  // never destroyed: frees may run at exit
  return a;
}

void CachingCpuAllocator::free_large(void* ctx, void* p) { instance()->release(p, reinterpret_cast<size_t>(ctx)); }

Allocator* g_allocators[kNumDeviceTypes] = {};

}  // namespace

Allocator* cpu_allocator() { return instance(); }

Allocator* allocator_for(DeviceType t) {
  if (t == DeviceType::CPU) return instance();
  return g_allocators[(int)t];
}

void register_allocator(DeviceType t, Allocator* a) { g_allocators[(int)t] = a; }

void check_device_available(Device device, const char* op) {
  EMBER_CHECK(allocator_for(device.type) != nullptr, Runtime, op,
              "(): CUDA is not available (ember was built without CUDA or no GPU is present)");
}

CpuCacheStats cpu_cache_stats() { return instance()->stats(); }
void cpu_empty_cache() { instance()->empty_cache(); }
CpuMemoryStats cpu_memory_stats() {
  return {g_in_use.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed)};
}
void cpu_reset_peak_memory_stats() { g_peak.store(g_in_use.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace ember
