// ember._C's CUDA runtime functions (_cuda_*), wrapped by python/ember/cuda.
// Streams and events travel as integers (their handle bits); waits release the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ember/cuda/api.h"
#include "ember/cuda/cublas.h"
#include "ember/generator.h"
#include "python_support.h"

namespace py = pybind11;

namespace ember::python {

void bind_cuda(py::module_& m) {
  m.attr("_cuda_built") = cuda::is_built();
  // The default Philox generator of GPU `index` (made on first use, never freed).
  m.def("_cuda_default_generator", [](int index) {
    EMBER_CHECK(index >= 0 && index < cuda::device_count(), Index, "cuda: invalid device index ", index);
    return py::reinterpret_steal<py::object>(generator_object(default_generator(Device(DeviceType::CUDA, index))));
  });
  m.def("_cuda_device_count", &cuda::device_count);
  m.def("_cuda_current_device", &cuda::current_device);
  m.def("_cuda_set_device", &cuda::set_device);
  m.def("_cuda_device_properties", [](int device) {
    cuda::DeviceProperties p = cuda::device_properties(device);
    return py::make_tuple(p.name, p.total_memory, p.major, p.minor, p.multi_processor_count);
  });
  m.def("_cuda_synchronize", &cuda::synchronize, py::arg("device") = -1, py::call_guard<py::gil_scoped_release>());
  m.def("_cuda_current_stream", &cuda::current_stream, py::arg("device") = -1);
  m.def("_cuda_default_stream", &cuda::default_stream, py::arg("device") = -1);
  m.def("_cuda_set_current_stream", &cuda::set_current_stream);
  m.def("_cuda_pool_stream", &cuda::pool_stream);
  m.def("_cuda_stream_query", &cuda::stream_query);
  m.def("_cuda_stream_synchronize", &cuda::stream_synchronize, py::call_guard<py::gil_scoped_release>());
  m.def("_cuda_stream_wait_event", &cuda::stream_wait_event);
  m.def("_cuda_event_create", &cuda::event_create);
  m.def("_cuda_event_destroy", &cuda::event_destroy);
  m.def("_cuda_event_record", &cuda::event_record);
  m.def("_cuda_event_query", &cuda::event_query);
  m.def("_cuda_event_synchronize", &cuda::event_synchronize, py::call_guard<py::gil_scoped_release>());
  m.def("_cuda_event_elapsed_ms", &cuda::event_elapsed_ms);
  m.def("_cuda_memory_stats", [](int device) {
    cuda::MemoryStats s = cuda::memory_stats(device);
    py::dict d;
    d["allocated_bytes"] = s.allocated;
    d["max_allocated_bytes"] = s.max_allocated;
    d["reserved_bytes"] = s.reserved;
    d["max_reserved_bytes"] = s.max_reserved;
    return d;
  }, py::arg("device") = -1);
  m.def("_cuda_reset_peak_memory_stats", &cuda::reset_peak_memory_stats, py::arg("device") = -1);
  m.def("_cuda_empty_cache", &cuda::empty_cache);
  // mm/bmm's library: cuBLAS (loaded at run time) or ember's tiled kernel.
  m.def("_cuda_cublas_available", &cuda::cublas_available);
  m.def("_cuda_cublas_status", &cuda::cublas_status);
  m.def("_cuda_set_cublas_search_dirs", &cuda::set_cublas_search_dirs);
  m.def("_cuda_set_cublas_enabled", &cuda::set_cublas_enabled);
  m.def("_cuda_set_allow_tf32", &cuda::set_allow_tf32);
  m.def("_cuda_allow_tf32", &cuda::allow_tf32);
}

}  // namespace ember::python
