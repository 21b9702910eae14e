"""ember.cuda: the API without a GPU (everywhere), and devices, copies, streams,
events and the allocator on a GPU (skipped when none is present)."""
import numpy as np
import pytest

import ember

HAS_GPU = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")


# ---------------------------------------------------------------- everywhere
def test_built_flag_matches_backends():
    assert ember.cuda.is_built() is ember.backends.cuda.is_built()
    assert isinstance(ember.cuda.is_built(), bool)


def test_device_objects():
    d = ember.device("cuda:1")
    assert d.type == "cuda" and d.index == 1
    assert ember.device("cuda").index is None
    assert not ember.zeros(2).is_cuda


@no_gpu
def test_no_gpu_reports_and_raises():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.memory_allocated() == 0 and ember.cuda.memory_reserved() == 0
    ember.cuda.empty_cache()          # nothing to free, no error
    ember.cuda.manual_seed(0)         # CPU programs call it unconditionally
    ember.cuda.manual_seed_all(0)
    x = ember.ones(3)
    for move in (lambda: x.to("cuda"), lambda: x.cuda(), lambda: ember.zeros(2, device="cuda"),
                 lambda: ember.ones(2, device="cuda:0"), lambda: x.to(ember.device("cuda", 0))):
        with pytest.raises(RuntimeError, match="CUDA"):
            move()
    for call in (ember.cuda.current_device, ember.cuda.synchronize, ember.cuda.current_stream,
                 ember.cuda.Stream, ember.cuda.Event, ember.cuda.get_device_name):
        with pytest.raises(RuntimeError, match="CUDA"):
            call()
    assert x.cpu() is x


def test_matmul_precision_settings():
    m = ember.backends.cuda.matmul
    assert m.allow_tf32 is False and ember.get_float32_matmul_precision() == "highest"
    try:
        ember.set_float32_matmul_precision("high")
        assert m.allow_tf32 is True and ember.get_float32_matmul_precision() == "high"
        ember.set_float32_matmul_precision("highest")
        assert m.allow_tf32 is False
        m.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="Invalid precision"):
            ember.set_float32_matmul_precision("low")
    finally:
        ember.set_float32_matmul_precision("highest")
    assert m.allow_tf32 is False


def test_bf16_support_query():
    assert ember.cuda.is_bf16_supported() is (HAS_GPU and ember.cuda.get_device_capability()[0] >= 8)


# ---------------------------------------------------------------- on a GPU
@gpu
def test_round_trip_every_dtype():
    for dt in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        x = ember.arange(24).reshape(2, 3, 4).to(getattr(ember, dt))
        y = x.cuda()
        assert y.is_cuda and y.device == ember.device("cuda:0") and y.dtype == x.dtype
        assert ember.equal(y.cpu(), x) if hasattr(ember, "equal") else (y.cpu().tolist() == x.tolist())


@gpu
def test_copies_across_dtypes_and_layouts():
    a = ember.randn(5, 7)
    g = a.cuda()
    np.testing.assert_array_equal(g.t().cpu().numpy(), a.t().numpy())            # strided source
    np.testing.assert_array_equal(g.to(ember.float64).cpu().numpy(), a.numpy().astype(np.float64))
    dst = ember.zeros(7, 5, device="cuda")
    dst.copy_(a.t())                                                              # host -> strided device
    np.testing.assert_array_equal(dst.cpu().numpy(), a.t().numpy())
    host = ember.zeros(7, 5, dtype=ember.float64).t()
    host.copy_(g)                                                                 # device -> strided host, cast
    np.testing.assert_array_equal(host.numpy(), a.numpy().astype(np.float64))
    row = ember.arange(5.0)
    big = ember.empty(3, 5, device="cuda")
    big.copy_(row)                                                                # broadcast across devices
    np.testing.assert_array_equal(big.cpu().numpy(), np.tile(np.arange(5.0), (3, 1)))


@gpu
def test_fill_and_pointwise_on_device():
    x = ember.full((4, 4), 2.5, device="cuda")
    y = (x * 2 + 1).cpu()
    np.testing.assert_array_equal(y.numpy(), np.full((4, 4), 6.0, np.float32))


@gpu
def test_mixing_devices_names_both():
    with pytest.raises(RuntimeError, match=r"cuda:0.*cpu|cpu.*cuda:0"):
        ember.ones(3, device="cuda") + ember.ones(3)


@gpu
def test_gradients_stay_on_device():
    x = ember.randn(8, device="cuda", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.is_cuda
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * x.detach().cpu().numpy(), rtol=1e-6)


@gpu
def test_tf32_matmul_is_close_but_not_exact():
    if not ember.backends.cuda.cublas_available():
        pytest.skip("TF32 is a cuBLAS setting")
    a, b = ember.randn(512, 512, device="cuda"), ember.randn(512, 512, device="cuda")
    exact = (a @ b).cpu().numpy()
    ember.backends.cuda.matmul.allow_tf32 = True
    try:
        fast = (a @ b).cpu().numpy()
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    np.testing.assert_allclose(fast, exact, rtol=0, atol=0.1)
    assert (fast != exact).any()   # TF32 keeps 10 mantissa bits: some products differ
    assert ((a @ b).cpu().numpy() == exact).all()


@gpu
def test_device_properties():
    p = ember.cuda.get_device_properties(0)
    assert isinstance(p.name, str) and p.name == ember.cuda.get_device_name()
    assert p.total_memory > 2**30 and p.multi_processor_count > 0
    assert ember.cuda.get_device_capability("cuda:0") == (p.major, p.minor) and p.major >= 5


@gpu
def test_device_context_and_set_device():
    start = ember.cuda.current_device()
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    assert ember.cuda.current_device() == start
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.cuda.set_device(ember.cuda.device_count())


@gpu
def test_streams_and_events():
    s = ember.cuda.Stream()
    assert s != ember.cuda.default_stream()
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        a = ember.ones(1 << 20, device="cuda")
        start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
        start.record()
        b = a * 3
        end.record()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0
    ember.cuda.current_stream().wait_stream(s)
    assert b.sum().item() == 3 * (1 << 20)
    with pytest.raises(RuntimeError, match="enable_timing"):
        ember.cuda.Event().elapsed_time(ember.cuda.Event())


@gpu
def test_allocator_reuse_and_figures():
    ember.cuda.synchronize()
    ember.cuda.empty_cache()
    base = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")                    # 4 MiB
    assert ember.cuda.memory_allocated() - base == 4 << 20
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    reserved = ember.cuda.memory_reserved()
    ptr = x.data_ptr() if hasattr(x, "data_ptr") else None
    del x
    assert ember.cuda.memory_allocated() == base
    y = ember.empty(1 << 20, device="cuda")                    # the cached block comes back
    assert ember.cuda.memory_reserved() == reserved
    if ptr is not None:
        assert y.data_ptr() == ptr
    assert ember.cuda.max_memory_allocated() >= base + (4 << 20)
    del y
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() < reserved
