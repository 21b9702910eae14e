"""ember.set_default_device / get_default_device and `with ember.device(...)`: the device
Python factory calls use when given none (per thread, as PyTorch's DeviceContext).

This machine has no GPU, so a CUDA default shows itself by the error a CUDA allocation raises."""
import re
import threading

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None


@pytest.fixture(autouse=True)
def restore_default_device():
    yield
    ember.set_default_device(None)


def cuda_error():
    """The exception class and message (without the op's name) an explicit CUDA factory call raises here."""
    try:
        ember.zeros(2, device="cuda")
    except Exception as e:  # noqa: BLE001  (whatever it is, the default must raise the same)
        return type(e), str(e).split(": ", 1)[-1]
    pytest.skip("a GPU is present: the CUDA-default checks assume none")


FACTORIES = [
    lambda: ember.zeros(2), lambda: ember.ones(2, 3), lambda: ember.empty(4), lambda: ember.full((2,), 1.5),
    lambda: ember.arange(5), lambda: ember.linspace(0, 1, 5), lambda: ember.eye(3), lambda: ember.rand(2),
    lambda: ember.randn(2), lambda: ember.randint(0, 5, (3,)), lambda: ember.randperm(4),
    lambda: ember.tensor([1.0, 2.0]), lambda: ember.as_tensor([1, 2]),
]


def test_the_default_is_the_cpu():
    assert ember.get_default_device() == ember.device("cpu")
    assert all(f().device == ember.device("cpu") for f in FACTORIES)


@pytest.mark.parametrize("factory", range(len(FACTORIES)))
def test_factories_without_a_device_use_the_default(factory):
    cls, message = cuda_error()
    ember.set_default_device("cuda")
    with pytest.raises(cls, match=re.escape(message[:40])):
        FACTORIES[factory]()
    ember.set_default_device("cpu")
    assert FACTORIES[factory]().device.type == "cpu"
    ember.set_default_device(None)
    assert FACTORIES[factory]().device.type == "cpu"


def test_explicit_devices_likes_and_ops_ignore_the_default():
    cuda_error()
    x = ember.arange(6.0).reshape(2, 3)
    ember.set_default_device(ember.device("cuda"))
    assert ember.zeros(2, device="cpu").device.type == "cpu"
    assert ember.tensor([1.0], device="cpu").device.type == "cpu"
    assert ember.zeros_like(x).device.type == "cpu"  # a *_like takes its input's device, as PyTorch
    assert ember.rand_like(x).device.type == "cpu"
    assert ember.from_numpy(np.ones(3)).device.type == "cpu"  # shares memory: never moved
    assert (x + 1).device.type == "cpu"
    # Composites that make helper tensors in C++ are not affected (PyTorch's default applies to Python calls).
    padded = ember.nn.functional.pad(x[None], (1, 1), mode="reflect")
    np.testing.assert_array_equal(padded.numpy()[0], np.pad(x.numpy(), ((0, 0), (1, 1)), mode="reflect"))
    assert x.sum(0).device.type == "cpu"


def test_device_as_a_context_manager_nests_and_restores():
    cls, _ = cuda_error()
    with ember.device("cpu") as d:
        assert d == ember.device("cpu")
        assert ember.get_default_device() == ember.device("cpu")
        with ember.device("cuda"):
            with pytest.raises(cls):
                ember.ones(2)
        assert ember.ones(2).device.type == "cpu"
    with pytest.raises(ZeroDivisionError):
        with ember.device("cuda"):
            1 / 0
    assert ember.zeros(1).device.type == "cpu"
    ember.set_default_device("cuda")
    with ember.device("cpu"):  # a block wins over the set default, and gives it back after
        assert ember.zeros(1).device.type == "cpu"
    with pytest.raises(cls):
        ember.zeros(1)


def test_get_default_device_names_what_was_set():
    ember.set_default_device("cpu")
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cuda:1")
    assert ember.get_default_device() == ember.device("cuda", 1)
    with ember.device("cuda:2"):
        assert ember.get_default_device() == ember.device("cuda:2")
    ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")
    if torch is not None:
        torch.set_default_device("cpu")
        try:
            assert str(torch.get_default_device()) == str(ember.get_default_device())
        finally:
            torch.set_default_device(None)


def test_the_default_belongs_to_the_thread_that_set_it():
    cls, _ = cuda_error()
    ember.set_default_device("cuda")
    seen = []
    t = threading.Thread(target=lambda: seen.append((ember.get_default_device(), ember.zeros(1).device)))
    t.start()
    t.join()
    assert seen == [(ember.device("cpu"), ember.device("cpu"))]
    with pytest.raises(cls):
        ember.zeros(1)


def test_bad_devices_raise_as_pytorch():
    with pytest.raises(RuntimeError, match="Expected one of|Invalid device|device"):
        ember.set_default_device("tpu")
    with pytest.raises(TypeError):
        ember.set_default_device(1.5)
