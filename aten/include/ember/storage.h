#pragma once
#include <atomic>
#include "ember/allocator.h"
#include "ember/ref.h"

namespace ember {

// Memory shared by a tensor and its views. `version` counts in-place writes,
// so autograd can tell when a saved tensor was changed under it.
struct StorageImpl : RefCounted {
  DataPtr data;
  size_t nbytes = 0;
  Device device;
  std::atomic<uint32_t> version{0};

  StorageImpl(DataPtr d, size_t n, Device dev) : data(d), nbytes(n), device(dev) {}
  StorageImpl(const StorageImpl&) = delete;
  ~StorageImpl() { if (data.deleter) data.deleter(data.ctx, data.ptr); }
  void bump_version() { version.fetch_add(1, std::memory_order_relaxed); }
};

Ref<StorageImpl> new_storage(size_t nbytes, Device device);

}  // namespace ember
