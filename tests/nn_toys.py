"""Small modules defined once over a library argument (`ember` or `torch`), so the
nn tests build the same model in both and compare reprs, keys, messages and gradients."""
import sys
import types

import numpy as np

_made = {}


def toys(lib):
    """The toy module classes of `lib` (ember or torch), as a namespace. Each class is also
    this module's attribute `<lib>_<name>`, so that pickle finds it."""
    if lib.__name__ not in _made:
        classes = _define(lib)
        for name, cls in vars(classes).items():
            cls.__qualname__ = f"{lib.__name__}_{name}"
            setattr(sys.modules[__name__], cls.__qualname__, cls)
        _made[lib.__name__] = classes
    return _made[lib.__name__]


def _define(lib):
    nn = lib.nn

    class TinyLinear(nn.Module):
        """A Linear-like layer with fixed, distinct weights (no dependency on nn.Linear)."""

        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            w = np.arange(out_features * in_features, dtype=np.float32).reshape(out_features, in_features)
            self.weight = nn.Parameter(lib.tensor((w - w.mean()) / 10))
            if bias:
                self.bias = nn.Parameter(lib.tensor(np.linspace(-1, 1, out_features, dtype=np.float32)))
            else:
                self.register_parameter("bias", None)

        def forward(self, x):
            y = x @ self.weight.t()
            return y if self.bias is None else y + self.bias

        def extra_repr(self):
            return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"

    class Scale(nn.Module):
        """A parameter, a persistent and a non-persistent buffer, no children."""

        def __init__(self, n):
            super().__init__()
            self.gain = nn.Parameter(lib.ones(n) * 2)
            self.register_buffer("running", lib.zeros(n))
            self.register_buffer("scratch", lib.ones(n), persistent=False)

        def forward(self, x):
            return x * self.gain

    class Block(nn.Module):
        """Own parameter first, then children: the state_dict order PyTorch gives."""

        def __init__(self, n):
            super().__init__()
            self.fc = TinyLinear(n, n)
            self.alpha = nn.Parameter(lib.tensor(0.5))
            self.scale = Scale(n)

        def forward(self, x):
            return self.scale(self.fc(x)) * self.alpha

    class MultiLine(nn.Module):
        def extra_repr(self):
            return "first line\nsecond line"

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(TinyLinear(3, 4), Block(4), Scale(4))
            self.heads = nn.ModuleList([TinyLinear(4, 2), TinyLinear(4, 2), TinyLinear(4, 2, bias=False)])
            self.by_name = nn.ModuleDict({"b": Scale(2), "a": MultiLine()})
            self.empty = nn.Sequential()
            self.register_buffer("step", lib.tensor(3))

        def forward(self, x):
            h = self.features(x)
            return sum(head(h) for head in self.heads)

    class Tied(nn.Module):
        """Two layers sharing one weight Parameter."""

        def __init__(self):
            super().__init__()
            self.enc = TinyLinear(3, 3)
            self.dec = TinyLinear(3, 3)
            self.dec.weight = self.enc.weight

        def forward(self, x):
            return self.dec(self.enc(x))

    class TwoInTwoOut(nn.Module):
        """Several tensor inputs (and a non-tensor one) and a tuple of outputs, for backward hooks."""

        def forward(self, a, k, b):
            return a * b * k, (a + b).exp()

    return types.SimpleNamespace(TinyLinear=TinyLinear, Scale=Scale, Block=Block, MultiLine=MultiLine, Net=Net,
                                 Tied=Tied, TwoInTwoOut=TwoInTwoOut)


def to_lib(lib, value):
    """A tensor of `lib` with value's data (value: a tensor of either library, or an array)."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return lib.tensor(np.asarray(value))
