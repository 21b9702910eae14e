"""Random numbers on the device: the same counter-based Philox stream as the
CPU, so a seed gives the same values on either device and for any launch shape."""
import numpy as np
import pytest

import ember

HAS_GPU = ember.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")


def test_generator_device_defaults_to_cpu():
    g = ember.Generator()
    assert g.device == ember.device("cpu")
    assert ember.default_generator.device == ember.device("cpu")
    assert ember.Generator(device="cpu").device == ember.device("cpu")


def test_manual_seed_reseeds_the_cpu_stream():
    ember.manual_seed(7)
    a = ember.rand(5)
    ember.manual_seed(7)
    assert ember.rand(5).tolist() == a.tolist()


def test_values_do_not_depend_on_the_size_of_the_request():
    # Element i comes from Philox block i // 4 (i // 2 for float64): a longer
    # request starts with the values of a shorter one.
    for dtype, fn in ((ember.float32, ember.rand), (ember.float64, ember.randn)):
        short = fn(5, generator=ember.Generator().manual_seed(3), dtype=dtype)
        long = fn(1001, generator=ember.Generator().manual_seed(3), dtype=dtype)
        np.testing.assert_array_equal(short.numpy(), long.numpy()[:5])


@no_gpu
def test_cuda_generators_without_a_gpu():
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ember.Generator(device="cuda")
    assert len(ember.cuda.default_generators) == 0
    ember.manual_seed(0)  # seeds the CPU and every GPU there is: none


@gpu
def test_cuda_generator_device_and_defaults():
    g = ember.Generator(device="cuda")
    assert g.device == ember.device("cuda", ember.cuda.current_device())
    assert len(ember.cuda.default_generators) == ember.cuda.device_count()
    d = ember.cuda.default_generators[0]
    assert d.device == ember.device("cuda:0")
    ember.cuda.manual_seed(11)
    assert ember.cuda.default_generators[ember.cuda.current_device()].initial_seed() == 11


@gpu
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
@pytest.mark.parametrize("n", [1, 3, 4, 5, 1000, 123457])
def test_rand_matches_the_cpu_stream(dtype, n):
    cpu = ember.rand(n, dtype=dtype, generator=ember.Generator().manual_seed(42))
    dev = ember.rand(n, dtype=dtype, device="cuda", generator=ember.Generator(device="cuda").manual_seed(42))
    assert dev.is_cuda and dev.dtype == dtype
    np.testing.assert_array_equal(dev.cpu().to(ember.float64).numpy(), cpu.to(ember.float64).numpy())


@gpu
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_randn_matches_the_cpu_stream(dtype):
    n = 100003
    cpu = ember.randn(n, dtype=dtype, generator=ember.Generator().manual_seed(5))
    dev = ember.randn(n, dtype=dtype, device="cuda", generator=ember.Generator(device="cuda").manual_seed(5))
    # sqrt/log/sin/cos may differ in the last bit between the host and the device.
    tol = {ember.float16: 2e-3, ember.bfloat16: 1e-2}.get(dtype, 1e-6)
    np.testing.assert_allclose(dev.cpu().to(ember.float64).numpy(), cpu.to(ember.float64).numpy(), rtol=tol, atol=tol)
    x = dev.to(ember.float64).cpu().numpy()
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02


@gpu
@pytest.mark.parametrize("low,high,dtype", [(0, 10, ember.int64), (-5, 5, ember.int32), (0, 2, ember.bool),
                                            (0, 256, ember.uint8), (-(2 ** 40), 2 ** 40, ember.int64),
                                            (0, 100, ember.float32)])
def test_randint_matches_the_cpu_stream(low, high, dtype):
    cpu = ember.randint(low, high, (333, 7), dtype=dtype, generator=ember.Generator().manual_seed(9))
    dev = ember.randint(low, high, (333, 7), dtype=dtype, device="cuda",
                        generator=ember.Generator(device="cuda").manual_seed(9))
    assert dev.shape == (333, 7)
    np.testing.assert_array_equal(dev.cpu().numpy(), cpu.numpy())


@gpu
def test_default_cuda_stream_advances_and_reseeds():
    ember.cuda.manual_seed(3)
    a = ember.rand(10, device="cuda")
    b = ember.rand(10, device="cuda")
    assert a.tolist() != b.tolist()
    ember.cuda.manual_seed(3)
    assert ember.rand(10, device="cuda").tolist() == a.tolist()
    ember.manual_seed(3)  # seeds every GPU too, as PyTorch does
    assert ember.rand(10, device="cuda").tolist() == a.tolist()


@gpu
def test_generator_of_the_wrong_device_is_rejected():
    with pytest.raises(RuntimeError, match="expected a 'cuda' device type for generator but found 'cpu'"):
        ember.rand(3, device="cuda", generator=ember.Generator())
    with pytest.raises(RuntimeError, match="expected a 'cpu' device type for generator but found 'cuda'"):
        ember.randn(3, generator=ember.Generator(device="cuda"))


@gpu
def test_empty_and_requires_grad_on_device():
    assert ember.rand(0, device="cuda").shape == (0,)
    x = ember.randn(4, 3, device="cuda", requires_grad=True)
    assert x.is_cuda and x.requires_grad and x.is_leaf


def test_hand_bound_functions_raise_the_error_kind():
    # ember::Error raised under pybind11 keeps its kind (IndexError here, not RuntimeError).
    with pytest.raises(IndexError, match="invalid device index"):
        ember._C._cuda_default_generator(ember.cuda.device_count())
