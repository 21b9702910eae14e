"""Datasets, as torch.utils.data.dataset: map-style (`__getitem__`/`__len__`) and
iterable-style (`__iter__`), and the wrappers that combine or split them."""
import bisect
import itertools
import math
import warnings
from collections.abc import Iterable
from typing import Generic, TypeVar

import ember

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """An abstract class representing a map from keys to data samples.

    Subclasses overwrite `__getitem__` and usually `__len__`; they may add
    `__getitems__(indices)` returning a list of samples, for faster batches."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable):
    """An iterable Dataset: subclasses overwrite `__iter__`. With `num_workers > 0`
    each worker holds a copy: use `get_worker_info()` to give each its own share."""

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Dataset wrapping tensors: sample i is the tuple of each tensor's row i."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


def _common_length(datasets):
    length = len(datasets[0])
    if any(length != len(dataset) for dataset in datasets):
        raise ValueError("Size mismatch between datasets")
    return length


def _items_of(dataset, indices):
    """dataset's samples at `indices`, through its __getitems__ when it has one."""
    if callable(getattr(dataset, "__getitems__", None)):
        items = dataset.__getitems__(indices)
        if len(items) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
        return items
    return [dataset[index] for index in indices]


class StackDataset(Dataset):
    """Datasets side by side: `StackDataset(a, b)[i] == (a[i], b[i])`,
    `StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}`."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or"
                             "``dict``- (via ``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self._length = _common_length(list(args or kwargs.values()))
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            columns = {key: _items_of(dataset, indices) for key, dataset in self.datasets.items()}
            return [{key: column[i] for key, column in columns.items()} for i in range(len(indices))]
        columns = [_items_of(dataset, indices) for dataset in self.datasets]
        return [tuple(column[i] for column in columns) for i in range(len(indices))]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Datasets one after another: indices run through the first, then the second, ..."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(dataset) for dataset in sequence))

    def __init__(self, datasets):
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx - self.cumulative_sizes[dataset_idx - 1] if dataset_idx > 0 else idx
        return self.datasets[dataset_idx][sample_idx]

    @property
    def cummulative_sizes(self):
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning,
                      stacklevel=2)
        return self.cumulative_sizes


def _check_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")
    return dataset


class ChainDataset(IterableDataset):
    """IterableDatasets one after another, chained as they are iterated."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            yield from _check_iterable(dataset)

    def __len__(self):
        return sum(len(_check_iterable(dataset)) for dataset in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def _lengths_from_fractions(fractions, total):
    """floor(fraction * total) each, then the remainder handed out one by one from the first split."""
    lengths = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * fraction))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                          stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=ember.default_generator):
    """Randomly split a dataset into non-overlapping Subsets of the given lengths,
    or of the given fractions of len(dataset) (summing to 1)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, len(dataset))
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = ember.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
