// The device caching allocator (a simplified PyTorch CUDACachingAllocator).
// Segments come from RawDeviceMemory; each is a doubly linked list of blocks
// that are split on malloc and merged back on free. Free blocks sit in a set
// per (device, pool) ordered by (stream, size, address), so lower_bound is
// the best fit on a stream.
#include "ember/device_caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/errors.h"

namespace ember {
namespace {

constexpr size_t kMinBlockSize = 512;           // every size is a multiple of this
constexpr size_t kSmallSize = 1 << 20;          // requests up to this use the small pool
constexpr size_t kSmallBuffer = 2 << 20;        // small pool segment size
constexpr size_t kLargeBuffer = 20 << 20;       // large pool segment size for requests < kMinLargeAlloc
constexpr size_t kMinLargeAlloc = 10 << 20;     // from here, segments are the request itself
constexpr size_t kRoundLarge = 2 << 20;         // ... rounded up to this

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

struct Block {
  int device;
  uintptr_t stream;
  size_t size;
  char* ptr;
  bool small;  // which pool it returns to
  bool allocated = false;
  Block* prev = nullptr;  // neighbours in the same segment
  Block* next = nullptr;
  Block(int d, uintptr_t s, size_t n, char* p, bool sm) : device(d), stream(s), size(n), ptr(p), small(sm) {}
  bool whole_segment() const { return !prev && !next; }
};

bool block_less(const Block* a, const Block* b) {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return std::less<char*>()(a->ptr, b->ptr);
}

using Pool = std::set<Block*, decltype(&block_less)>;

// Merges `left`'s (free) right neighbour into it.
void absorb_next(Block* left) {
  Block* right = left->next;
  left->size += right->size;
  left->next = right->next;
  if (right->next) right->next->prev = left;
  delete right;
}

std::string format_size(size_t n) {
  char buf[64];
  if (n < 1024) std::snprintf(buf, sizeof buf, "%zu bytes", n);
  else if (n < (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", n / 1024.0);
  else if (n < (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", n / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", n / 1073741824.0);
  return buf;
}

}  // namespace

struct DeviceCachingAllocator::State {
  struct Device {
    Pool small{&block_less}, large{&block_less};
    cuda::MemoryStats stats;
  };
  mutable std::mutex mutex;
  std::map<int, Device> devices;
  std::unordered_map<void*, Block*> live;

  // Releases the wholly free segments of one device; returns whether any were.
  bool release_cached(RawDeviceMemory* raw, int device, Device& d) {
    std::vector<std::pair<Pool*, Block*>> segments;
    for (Pool* pool : {&d.small, &d.large})
      for (Block* b : *pool)
        if (b->whole_segment()) segments.emplace_back(pool, b);
    if (segments.empty()) return false;
    raw->before_release(device);
    for (auto [pool, b] : segments) {
      pool->erase(b);
      raw->release(b->ptr, device);
      d.stats.reserved -= int64_t(b->size);
      delete b;
    }
    return true;
  }
};

DeviceCachingAllocator::DeviceCachingAllocator(RawDeviceMemory* raw) : raw_(raw), s_(std::make_unique<State>()) {}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  // Only the bookkeeping goes; every block is either live or in a pool.
  for (auto& [ptr, b] : s_->live) delete b;
  for (auto& [dev, d] : s_->devices) {
    for (Block* b : d.small) delete b;
    for (Block* b : d.large) delete b;
  }
}

void* DeviceCachingAllocator::malloc(size_t nbytes, int device, uintptr_t stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<std::mutex> g(s_->mutex);
  const size_t size = round_up(nbytes, kMinBlockSize);
  const bool small = size <= kSmallSize;
  State::Device& d = s_->devices[device];
  Pool& pool = small ? d.small : d.large;

  Block key(device, stream, size, nullptr, small);
  Block* block = nullptr;
  auto it = pool.lower_bound(&key);
  if (it != pool.end() && (*it)->stream == stream) {
    block = *it;
    pool.erase(it);
  } else {
    const size_t seg = small ? kSmallBuffer : size < kMinLargeAlloc ? kLargeBuffer : round_up(size, kRoundLarge);
    void* p = raw_->allocate(seg, device);
    // Out of memory: give back what is cached on this device and try once more.
    if (!p && s_->release_cached(raw_, device, d)) p = raw_->allocate(seg, device);
    if (!p)
      EMBER_FAIL(Runtime, "CUDA out of memory. Tried to allocate ", format_size(size), " (GPU ", device, "; ",
                 format_size(size_t(d.stats.reserved)), " reserved by ember, ", format_size(size_t(d.stats.allocated)),
                 " allocated)");
    block = new Block(device, stream, seg, static_cast<char*>(p), small);
    d.stats.reserved += int64_t(seg);
    d.stats.max_reserved = std::max(d.stats.max_reserved, d.stats.reserved);
  }

  // Split off the tail when it is worth keeping: any small-pool tail, but a large
  // block only for more than 1 MiB, so big blocks are not cut up for small leftovers.
  const size_t remaining = block->size - size;
  if (small ? remaining >= kMinBlockSize : remaining > kSmallSize) {
    Block* rest = new Block(device, stream, remaining, block->ptr + size, small);
    rest->prev = block;
    rest->next = block->next;
    if (block->next) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    pool.insert(rest);
  }
  block->allocated = true;
  s_->live.emplace(block->ptr, block);
  d.stats.allocated += int64_t(block->size);
  d.stats.max_allocated = std::max(d.stats.max_allocated, d.stats.allocated);
  return block->ptr;
}

void DeviceCachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> g(s_->mutex);
  auto it = s_->live.find(ptr);
  EMBER_CHECK(it != s_->live.end(), Runtime, "invalid device pointer: ", ptr, " was not allocated by the caching allocator");
  Block* block = it->second;
  s_->live.erase(it);
  State::Device& d = s_->devices[block->device];
  d.stats.allocated -= int64_t(block->size);
  block->allocated = false;
  Pool& pool = block->small ? d.small : d.large;

  if (Block* p = block->prev; p && !p->allocated) {
    pool.erase(p);
    absorb_next(p);
    block = p;
  }
  if (Block* n = block->next; n && !n->allocated) {
    pool.erase(n);
    absorb_next(block);
  }
  pool.insert(block);
}

void DeviceCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> g(s_->mutex);
  for (auto& [dev, d] : s_->devices) s_->release_cached(raw_, dev, d);
}

cuda::MemoryStats DeviceCachingAllocator::stats(int device) const {
  std::lock_guard<std::mutex> g(s_->mutex);
  auto it = s_->devices.find(device);
  return it == s_->devices.end() ? cuda::MemoryStats{} : it->second.stats;
}

void DeviceCachingAllocator::reset_peak(int device) {
  std::lock_guard<std::mutex> g(s_->mutex);
  auto it = s_->devices.find(device);
  if (it == s_->devices.end()) return;
  it->second.stats.max_allocated = it->second.stats.allocated;
  it->second.stats.max_reserved = it->second.stats.reserved;
}

size_t DeviceCachingAllocator::block_size(void* ptr) const {
  std::lock_guard<std::mutex> g(s_->mutex);
  auto it = s_->live.find(ptr);
  EMBER_CHECK(it != s_->live.end(), Runtime, "invalid device pointer: ", ptr, " was not allocated by the caching allocator");
  return it->second->size;
}

}  // namespace ember
