"""ember.utils.data samplers (issue 13, point 1): Sequential, Random, SubsetRandom,
WeightedRandom, Batch and DistributedSampler; hand-computed results, and
PyTorch's where torch is installed (the random orders differ: other generators)."""
import collections

import pytest

import ember
from ember.utils.data import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                              SubsetRandomSampler, WeightedRandomSampler)


def test_sampler_base_and_sequential():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5
    assert list(SequentialSampler([])) == []


def test_random_sampler_permutation():
    s = RandomSampler(range(10), generator=ember.Generator().manual_seed(1))
    first = list(s)
    assert sorted(first) == list(range(10)) and len(s) == 10
    assert first == ember.randperm(10, generator=ember.Generator().manual_seed(1)).tolist()
    ember.manual_seed(5)
    a = list(RandomSampler(range(10)))  # no generator: seeded from the default generator
    ember.manual_seed(5)
    assert list(RandomSampler(range(10))) == a and sorted(a) == list(range(10))


def test_random_sampler_num_samples():
    s = RandomSampler(range(4), num_samples=10, generator=ember.Generator().manual_seed(0))
    drawn = list(s)
    assert len(drawn) == 10 == len(s)
    assert sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3]  # whole permutations, then part of one
    assert len(set(drawn[8:])) == 2
    s = RandomSampler(range(3), replacement=True, num_samples=100, generator=ember.Generator().manual_seed(0))
    drawn = list(s)
    assert len(drawn) == 100 and set(drawn) == {0, 1, 2}  # 100 draws from 3 values: all appear
    assert len(list(RandomSampler(range(3), replacement=True, num_samples=64))) == 64  # exact chunks of 32


@pytest.mark.parametrize("kwargs, error, message", [
    ({"replacement": 1}, TypeError, "replacement should be a boolean value, but got replacement=1"),
    ({"num_samples": 0}, ValueError, "num_samples should be a positive integer value, but got num_samples=0"),
    ({"num_samples": 2.0}, ValueError, "num_samples should be a positive integer value, but got num_samples=2.0"),
])
def test_random_sampler_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        RandomSampler(range(3), **kwargs)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler([])


def test_subset_random_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], generator=ember.Generator().manual_seed(3))
    order = ember.randperm(4, generator=ember.Generator().manual_seed(3)).tolist()
    assert list(s) == [[10, 20, 30, 40][i] for i in order] and len(s) == 4


def test_weighted_random_sampler():
    s = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 4000, generator=ember.Generator().manual_seed(0))
    counts = collections.Counter(s)
    assert set(counts) == {1, 3} and len(s) == 4000
    assert 0.7 < counts[3] / 4000 < 0.8  # 3/4, well within sampling error
    assert s.weights.dtype == ember.float64
    s = WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False)
    assert sorted(s) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=True"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got replacement=0"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    assert len(BatchSampler(range(6), 3, False)) == 2 and list(BatchSampler([], 2, False)) == []
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match=f"should be a positive integer value, but got batch_size={bad}"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)


def shards(n, replicas, **kwargs):
    return [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, **kwargs)) for r in range(replicas)]


def test_distributed_sampler_padding_and_drop_last():
    assert shards(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded by 0, 1
    assert shards(10, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert shards(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]  # fewer samples than replicas
    assert shards(9, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s = DistributedSampler(range(10), num_replicas=3, rank=1)
    assert len(s) == 4 and s.total_size == 12
    assert len(DistributedSampler(range(10), num_replicas=3, rank=1, drop_last=True)) == 3
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(10), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match=r"Invalid rank -1"):
        DistributedSampler(range(10), num_replicas=3, rank=-1)


def test_distributed_sampler_shuffle_and_epoch():
    parts = shards(12, 4, seed=3)
    assert sorted(i for p in parts for i in p) == list(range(12))  # disjoint, covering
    order = ember.randperm(12, generator=ember.Generator().manual_seed(3)).tolist()
    assert parts[1] == order[1::4]
    s = DistributedSampler(range(12), num_replicas=4, rank=1, seed=3)
    assert list(s) == parts[1]
    s.set_epoch(2)
    assert s.epoch == 2 and list(s) == ember.randperm(12, generator=ember.Generator().manual_seed(5)).tolist()[1::4]


def test_distributed_sampler_needs_process_group():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_against_torch():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data
    for n, replicas, drop_last in ((10, 3, False), (10, 3, True), (2, 5, False), (7, 7, True), (0, 2, False)):
        for rank in range(replicas):
            ours = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            theirs = tdata.DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False,
                                              drop_last=drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for n, size, drop_last in ((7, 3, False), (7, 3, True), (6, 2, True), (1, 4, False)):
        ours, theirs = BatchSampler(range(n), size, drop_last), tdata.BatchSampler(range(n), size, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for sampler, args in (("RandomSampler", (range(4), False, 10)), ("WeightedRandomSampler", ([1.0, 2.0], 5))):
        assert len(getattr(tdata, sampler)(*args)) == len(globals()[sampler](*args))
    for bad in ({"replacement": 1}, {"num_samples": 0}):
        with pytest.raises(Exception) as theirs:
            tdata.RandomSampler(range(3), **bad)
        with pytest.raises(type(theirs.value), match=str(theirs.value)):
            RandomSampler(range(3), **bad)
