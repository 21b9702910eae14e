"""nn.DataParallel, nn.parallel.DistributedDataParallel and ember.distributed (issue 12, point 8): on
one device and one process the wrappers call their module; DDP needs an initialised process group,
as PyTorch's; the single-process group's collectives leave tensors as they are."""
import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP

try:
    import torch
except ImportError:
    torch = None


def to_numpy(t):
    return t.detach().numpy()


@pytest.fixture
def process_group():
    dist.init_process_group("gloo", world_size=1, rank=0)
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_data_parallel_calls_the_module():
    lin = ember.nn.Linear(3, 2)
    dp = ember.nn.DataParallel(lin)
    assert dp.module is lin and dp.device_ids == []  # as PyTorch's without CUDA
    x = ember.randn(4, 3)
    np.testing.assert_array_equal(to_numpy(dp(x)), to_numpy(lin(x)))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert repr(dp) == "DataParallel(\n  (module): Linear(in_features=3, out_features=2, bias=True)\n)"
    assert ember.nn.parallel.DataParallel is ember.nn.DataParallel
    np.testing.assert_array_equal(to_numpy(ember.nn.parallel.data_parallel(lin, x)), to_numpy(lin(x)))
    dp(x).sum().backward()
    np.testing.assert_allclose(to_numpy(lin.weight.grad), np.tile(to_numpy(x).sum(0), (2, 1)), rtol=1e-6)


def test_ddp_needs_a_process_group():
    assert dist.is_available() and not dist.is_initialized()
    msg = "Default process group has not been initialized, please make sure to call init_process_group."
    with pytest.raises(ValueError) as err:
        DDP(ember.nn.Linear(3, 2))
    assert str(err.value) == msg
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier, dist.destroy_process_group):
        with pytest.raises(ValueError, match="^Default process group has not been initialized"):
            fn()
    if torch is not None:
        with pytest.raises(ValueError) as t_err:
            torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
        assert str(t_err.value) == msg


def test_init_process_group_is_single_process(monkeypatch):
    with pytest.raises(NotImplementedError, match="one process only"):
        dist.init_process_group("gloo", world_size=2, rank=0)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(NotImplementedError, match=r"got world_size=4, rank=1"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    dist.init_process_group("nccl")
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "nccl")
        with pytest.raises(ValueError, match="^trying to initialize the default process group twice!$"):
            dist.init_process_group("gloo")
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_ddp_on_one_process_calls_the_module(process_group):
    lin = ember.nn.Linear(3, 2)
    model = DDP(lin)
    assert model.module is lin and model.device_ids is None
    assert repr(model) == "DistributedDataParallel(\n  (module): Linear(in_features=3, out_features=2, bias=True)\n)"
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    x = ember.randn(4, 3)
    model(x).sum().backward()  # one process: the local gradient is the average
    np.testing.assert_allclose(to_numpy(lin.weight.grad), np.tile(to_numpy(x).sum(0), (2, 1)), rtol=1e-6)
    with model.no_sync():
        assert not model.require_backward_grad_sync
    assert model.require_backward_grad_sync
    t = ember.tensor([1.0, 2.0])
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX):
        dist.all_reduce(t, op=op)
    dist.broadcast(t, src=0)
    dist.barrier()
    assert t.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="^DistributedDataParallel is not needed when a module doesn't have any "
                                           "parameter that requires a gradient.$"):
        DDP(ember.nn.Linear(2, 2).requires_grad_(False))
