"""DataLoader in the main process (issue 13, point 2): batching, shuffling,
samplers, collate_fn, drop_last, IterableDatasets, __len__ and its warnings,
and PyTorch's argument errors; hand-computed results, and PyTorch's where torch
is installed."""
import warnings

import pytest

import ember
from data_toys import Images, Range, Stream
from ember.utils.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler, TensorDataset,
                              get_worker_info)


def values(loader):
    return [b.tolist() if hasattr(b, "tolist") else b for b in loader]


def test_batches_and_drop_last():
    assert values(DataLoader(Range(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(DataLoader(Range(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert values(DataLoader(Range(3))) == [[0], [1], [2]]  # batch_size 1 by default
    assert values(DataLoader(Range(3), batch_size=None)) == [0, 1, 2]  # no batching: default_convert
    images, labels = next(iter(DataLoader(Images(5), batch_size=2)))
    assert images.shape == (2, 3, 4, 4) and images.dtype == ember.float32 and images[1, 0, 0, 0].item() == 2.0
    assert labels.tolist() == [0, 1] and labels.dtype == ember.int64
    assert get_worker_info() is None


def test_tensor_dataset_loader():
    x = ember.arange(10.).reshape(5, 2)
    batches = list(DataLoader(TensorDataset(x, ember.arange(5)), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert batches[2][0].tolist() == [[8., 9.]]


def test_shuffle_sampler_batch_sampler_generator():
    loader = DataLoader(Range(10), batch_size=4, shuffle=True, generator=ember.Generator().manual_seed(3))
    order = sum(values(loader), [])
    assert sorted(order) == list(range(10)) and isinstance(loader.sampler, RandomSampler)
    again = sum(values(DataLoader(Range(10), batch_size=4, shuffle=True,
                                  generator=ember.Generator().manual_seed(3))), [])
    assert again == order
    assert values(DataLoader(Range(6), sampler=[5, 3, 1], batch_size=2)) == [[5, 3], [1]]
    assert values(DataLoader(Range(6), batch_sampler=[[0, 5], [2]])) == [[0, 5], [2]]
    loader = DataLoader(Range(6), batch_sampler=BatchSampler(SequentialSampler(range(6)), 4, True))
    assert values(loader) == [[0, 1, 2, 3]] and loader.batch_size is None and len(loader) == 1
    assert values(DataLoader(Range(4), batch_size=2, collate_fn=lambda b: tuple(b))) == [(0, 1), (2, 3)]


def test_iterable_dataset():
    assert values(DataLoader(Stream(3, 8), batch_size=2)) == [[3, 4], [5, 6], [7]]
    assert values(DataLoader(Stream(3, 8), batch_size=2, drop_last=True)) == [[3, 4], [5, 6]]
    assert values(DataLoader(Stream(0, 3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(Stream(0, 7), batch_size=3)) == 3
    assert len(DataLoader(Stream(0, 7), batch_size=3, drop_last=True)) == 2
    assert len(DataLoader(Stream(0, 7), batch_size=None)) == 7


def test_iterable_length_warning():
    loader = DataLoader(Stream(0, 6), batch_size=None)
    assert len(loader) == 6
    loader.dataset.end = 8  # yields more than len(loader) said
    with pytest.warns(UserWarning, match=r"was reported to be 6\(when accessing len\(dataloader\)\), but 7 samples"):
        assert len(list(loader)) == 8
    # As PyTorch: with batches, the count of batches is checked against the dataset's length in samples.
    loader = DataLoader(Stream(0, 6), batch_size=2)
    assert len(loader) == 3
    loader.dataset.end = 10
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(loader)) == 5


def test_len():
    assert len(DataLoader(Range(10), batch_size=3)) == 4
    assert len(DataLoader(Range(10), batch_size=3, drop_last=True)) == 3
    assert len(DataLoader(Range(10), batch_size=None)) == 10
    assert len(iter(DataLoader(Range(10), batch_size=5))) == 2


@pytest.mark.parametrize("kwargs, error, message", [
    ({"num_workers": -1}, ValueError, "num_workers option should be non-negative; use num_workers=0 to disable"),
    ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified in multiprocessing"),
    ({"num_workers": 1, "prefetch_factor": -1}, ValueError, "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, ValueError, "persistent_workers option needs num_workers > 0"),
    ({"sampler": [0], "shuffle": True}, ValueError, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError,
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    ({"batch_sampler": [[0]], "drop_last": True}, ValueError, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, ValueError,
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
    ({"batch_size": 0}, ValueError, "batch_size should be a positive integer value, but got batch_size=0"),
    ({"multiprocessing_context": "fork"}, ValueError,
     r"multiprocessing_context can only be used with multi-process loading \(num_workers > 0\), but got num_workers=0"),
    ({"num_workers": 1, "multiprocessing_context": "nope"}, ValueError,
     r"multiprocessing_context option should specify a valid start method in \["),
    ({"num_workers": 1, "multiprocessing_context": 3}, TypeError,
     "multiprocessing_context option should be a valid context object or a string specifying the start method"),
])
def test_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        DataLoader(Range(4), **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"shuffle": True}, "expected unspecified shuffle option, but got shuffle=True"),
    ({"sampler": [0]}, r"expected unspecified sampler option, but got sampler=\[0\]"),
    ({"batch_sampler": [[0]]}, r"expected unspecified batch_sampler option, but got batch_sampler=\[\[0\]\]"),
])
def test_iterable_argument_errors(kwargs, message):
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: " + message):
        DataLoader(Stream(0, 3), **kwargs)


def test_prefetch_factor_zero():
    loader = DataLoader(Range(4), num_workers=1, prefetch_factor=0)  # accepted here, refused when iterated
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"):
        iter(loader)


def test_frozen_attributes_and_pin_memory():
    loader = DataLoader(Range(4))
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(loader, attr, None)
    loader.num_workers = 0  # others may change
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        assert values(DataLoader(Range(3), batch_size=3, pin_memory=True)) == [[0, 1, 2]]
    with pytest.warns(UserWarning, match="pin_memory_device is deprecated"):
        iter(DataLoader(Range(3), pin_memory=True, pin_memory_device="cuda"))
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        import pickle
        pickle.dumps(iter(DataLoader(Range(3))))


def test_worker_number_warning(monkeypatch):
    import os
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.warns(UserWarning, match="This DataLoader will create 3 worker processes in total. Our suggested "
                                         "max number of worker in current system is 1, which is smaller"):
        DataLoader(Range(3), num_workers=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(Range(3), num_workers=1)


def test_against_torch():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data
    for kwargs in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None},
                   {"sampler": [4, 1, 2], "batch_size": 2}, {"batch_sampler": [[1], [0, 2]]}):
        ours = DataLoader(Range(7), **kwargs)
        theirs = tdata.DataLoader(Range(7), **kwargs)
        assert len(ours) == len(theirs)
        assert values(ours) == values(theirs)
    methods = {k: v for k, v in vars(Stream).items() if callable(v)}
    TorchStream = type("TorchStream", (tdata.IterableDataset,), methods)
    for kwargs in ({"batch_size": 2}, {"batch_size": 2, "drop_last": True}, {"batch_size": None}):
        assert values(DataLoader(Stream(0, 5), **kwargs)) == values(tdata.DataLoader(TorchStream(0, 5), **kwargs))
        assert len(DataLoader(Stream(0, 5), **kwargs)) == len(tdata.DataLoader(TorchStream(0, 5), **kwargs))
    for kwargs in ({"num_workers": -1}, {"timeout": -1}, {"prefetch_factor": 2}, {"persistent_workers": True},
                   {"batch_size": None, "drop_last": True}, {"batch_sampler": [[0]], "batch_size": 2},
                   {"multiprocessing_context": "fork"}, {"num_workers": 1, "multiprocessing_context": "nope"}):
        with pytest.raises(Exception) as theirs:
            tdata.DataLoader(Range(4), **kwargs)
        with pytest.raises(type(theirs.value)) as ours:
            DataLoader(Range(4), **kwargs)
        assert str(ours.value) == str(theirs.value)
