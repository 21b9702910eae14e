"""The errors users hit most (conv, linear/matmul, broadcasting, losses, cat, view) carry PyTorch's
class and exact message, so pytest.raises(match=...) written for PyTorch matches ember (issue 12)."""
import re

import pytest

import ember

CASES = [
    (lambda m: m.nn.functional.conv2d(m.ones(1, 4, 5, 5), m.ones(4, 3, 3, 3), groups=2), RuntimeError,
     "Given groups=2, weight of size [4, 3, 3, 3], expected input[1, 4, 5, 5] to have 6 channels, but got 4 "
     "channels instead"),
    (lambda m: m.nn.Conv2d(3, 8, 3)(m.ones(1, 1, 8, 8)), RuntimeError,
     "Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 1, 8, 8] to have 3 channels, but got 1 "
     "channels instead"),
    (lambda m: m.nn.functional.conv1d(m.ones(1, 3, 5), m.ones(4, 2, 3)), RuntimeError,
     "Given groups=1, weight of size [4, 2, 3], expected input[1, 3, 5] to have 2 channels, but got 3 channels instead"),
    (lambda m: m.nn.functional.conv2d(m.ones(1, 3, 2, 2), m.ones(4, 3, 3, 3)), RuntimeError,
     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than "
     "actual input size"),
    (lambda m: m.nn.functional.conv2d(m.ones(3, 5), m.ones(4, 3, 3, 3)), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 5]"),
    (lambda m: m.nn.functional.conv3d(m.ones(1, 2, 3, 3, 3), m.ones(4, 3, 1, 1, 1)), RuntimeError,
     "Given groups=1, weight of size [4, 3, 1, 1, 1], expected input[1, 2, 3, 3, 3] to have 3 channels, but got 2 "
     "channels instead"),
    (lambda m: m.nn.Linear(5, 4)(m.ones(2, 3)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)"),
    (lambda m: m.nn.Linear(5, 4)(m.ones(2, 2, 3)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x4)"),
    (lambda m: m.ones(2, 3) @ m.ones(4, 5), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda m: m.ones(2, 3).mm(m.ones(4, 5)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda m: m.ones(3) @ m.ones(4), RuntimeError,
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 "
     "elements respectively"),
    (lambda m: m.ones(2, 3) + m.ones(4), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    (lambda m: m.ones(2, 3) * m.ones(4, 1, 2), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 2"),
    (lambda m: m.nn.functional.mse_loss(m.ones(2, 3), m.ones(4, 3)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0"),
    (lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.tensor([0, 5])), IndexError, "Target 5 is out of bounds."),
    (lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.tensor([0.0, 1.0])), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    (lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the "
     "list."),
    (lambda m: m.cat([m.ones(2, 3), m.ones(2, 3, 1)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 3"),
    (lambda m: m.ones(2, 3).view(4), RuntimeError, "shape '[4]' is invalid for input of size 6"),
    (lambda m: m.ones(2, 3).t().view(6), RuntimeError,
     "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
     "contiguous subspaces). Use .reshape(...) instead."),
]


@pytest.mark.filterwarnings("ignore:Using a target size")  # mse_loss's broadcasting warning, as PyTorch's
@pytest.mark.parametrize("call, kind, message", CASES)
def test_message(call, kind, message):
    with pytest.raises(kind, match=f"^{re.escape(message)}$"):
        call(ember)


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("call, kind, message", CASES)
def test_message_as_torch(call, kind, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(kind, match=f"^{re.escape(message)}$"):
        call(torch)
