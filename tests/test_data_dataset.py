"""ember.utils.data datasets (issue 13, point 1): TensorDataset, Subset, ConcatDataset,
ChainDataset, StackDataset, random_split; hand-computed results, and PyTorch's
where torch is installed."""
import warnings

import pytest

import ember
from ember.utils.data import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                              TensorDataset, random_split)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


class Batched(Squares):
    """Has __getitems__: wrappers must use it for whole batches."""

    def __init__(self, n):
        super().__init__(n)
        self.calls = []

    def __getitems__(self, indices):
        self.calls.append(list(indices))
        return [i * i for i in indices]


class Count(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))

    def __len__(self):
        return self.end - self.start


def test_dataset_base_and_add():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        Dataset()[0]
    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 4, 0, 1]
    chained = Count(0, 2) + Count(5, 7)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 5, 6] and len(chained) == 4
    assert Dataset[int] is not None  # generic, as PyTorch's (Dataset[T] in annotations)


def test_tensor_dataset():
    x, y = ember.arange(12.).reshape(4, 3), ember.tensor([5, 6, 7, 8])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6., 7., 8.] and b.item() == 7
    a, b = ds[1:3]  # slices index every tensor
    assert a.shape == (2, 3) and b.tolist() == [6, 7]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.zeros(3))


def test_subset():
    sub = Subset(Squares(10), [9, 2, 4])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 4, 16]
    assert sub.__getitems__([2, 0]) == [16, 81]
    base = Batched(10)
    sub = Subset(base, [3, 1])
    assert sub.__getitems__([0, 1]) == [9, 1] and base.calls == [[3, 1]]

    class Override(Subset):
        def __getitem__(self, idx):
            return 0
    with pytest.raises(NotImplementedError, match="Override overrides __getitem__ but not __getitems__"):
        Override(Squares(3), [0])


def test_concat_dataset():
    ds = ConcatDataset([Squares(2), Squares(3), Squares(1)])
    assert len(ds) == 6 and ds.cumulative_sizes == [2, 5, 6]
    assert [ds[i] for i in range(6)] == [0, 1, 0, 1, 4, 0]
    assert ds[-1] == 0 and ds[-4] == 0 and ds[-3] == 1
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-7]
    with pytest.raises(IndexError):
        ds[6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Squares(1), Count(0, 1)])
    with pytest.warns(FutureWarning, match="renamed to `cumulative_sizes`"):
        assert ds.cummulative_sizes == [2, 5, 6]


def test_chain_dataset():
    ds = ChainDataset([Count(0, 3), Count(10, 12)])
    assert list(ds) == [0, 1, 2, 10, 11] and len(ds) == 5
    bad = ChainDataset([Count(0, 1), Squares(2)])
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(bad)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(bad)


def test_stack_dataset():
    ds = StackDataset(Squares(3), Subset(Squares(5), [4, 3, 2]))
    assert len(ds) == 3 and ds[1] == (1, 9)
    assert ds.__getitems__([0, 2]) == [(0, 16), (4, 4)]
    named = StackDataset(a=Squares(2), b=Batched(2))
    assert named[1] == {"a": 1, "b": 1}
    assert named.__getitems__([1, 0]) == [{"a": 1, "b": 1}, {"a": 0, "b": 0}]
    assert named.datasets["b"].calls == [[1, 0]]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a=Squares(2), b=Squares(3))
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(Squares(2), b=Squares(2))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()

    class Short(Squares):
        def __getitems__(self, indices):
            return [0]
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
        StackDataset(Short(3)).__getitems__([0, 1])


@pytest.mark.parametrize("n, fractions, lengths", [
    (10, [0.3, 0.7], [3, 7]),
    (10, [0.33, 0.33, 0.34], [4, 3, 3]),  # floors 3, 3, 3: the remainder goes round-robin from the first
    (11, [0.5, 0.5], [6, 5]),
    (7, [0.1, 0.2, 0.3, 0.4], [1, 2, 2, 2]),  # floors 0, 1, 2, 2; remainder 2 to the first two
])
def test_random_split_fractions(n, fractions, lengths):
    parts = random_split(range(n), fractions, generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == lengths
    everything = sorted(i for p in parts for i in (p[j] for j in range(len(p))))
    assert everything == list(range(n))  # disjoint and covering


def test_random_split_lengths_and_generator():
    parts = random_split(range(30), [10, 20], generator=ember.Generator().manual_seed(7))
    again = random_split(range(30), [10, 20], generator=ember.Generator().manual_seed(7))
    assert [p.indices for p in parts] == [p.indices for p in again]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(30))
    expected = ember.randperm(30, generator=ember.Generator().manual_seed(7)).tolist()
    assert parts[0].indices == expected[:10] and parts[1].indices == expected[10:]
    ember.manual_seed(3)
    first = random_split(range(5), [2, 3])  # the default generator
    ember.manual_seed(3)
    assert [p.indices for p in random_split(range(5), [2, 3])] == [p.indices for p in first]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(5), [2, 2])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(5), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        assert [len(p) for p in random_split(range(2), [1.0, 0.0])] == [2, 0]


def test_against_torch():
    torch = pytest.importorskip("torch")
    tdata = torch.utils.data
    for n, fractions in ((10, [0.33, 0.33, 0.34]), (7, [0.1, 0.2, 0.3, 0.4]), (101, [0.25] * 4), (3, [0.5, 0.5])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = [len(p) for p in random_split(range(n), fractions)]
            theirs = [len(p) for p in tdata.random_split(range(n), fractions)]
        assert ours == theirs
    lists = [[0, 1], [2, 3, 4], [5]]
    ours, theirs = ConcatDataset(lists), tdata.ConcatDataset(lists)
    assert [ours[i] for i in range(-6, 6)] == [theirs[i] for i in range(-6, 6)]
    ours, theirs = StackDataset(a=[1, 2], b=[3, 4]), tdata.StackDataset(a=[1, 2], b=[3, 4])
    assert ours.__getitems__([1, 0]) == theirs.__getitems__([1, 0]) and ours[0] == theirs[0]
