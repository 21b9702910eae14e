"""grad_fn names as PyTorch prints them, for the ops real scripts call most (issue 12).

Each case runs on ember with a hand-written expectation and, when torch is installed, on torch too."""
import numpy as np
import pytest

import ember

CASES = [
    ("SumBackward0", lambda m, F, a: a.sum()),
    ("SumBackward1", lambda m, F, a: a.sum(0)),
    ("SumBackward1", lambda m, F, a: a.sum(dim=-1, keepdim=True)),
    ("MaxBackward1", lambda m, F, a: a.max()),
    ("MinBackward1", lambda m, F, a: a.min()),
    ("MaxBackward0", lambda m, F, a: a.max(0).values),
    ("MinBackward0", lambda m, F, a: a.min(1)[0]),
    ("ProdBackward0", lambda m, F, a: a.prod()),
    ("ProdBackward1", lambda m, F, a: a.prod(1)),
    ("SqueezeBackward0", lambda m, F, a: a[:1].squeeze()),
    ("SqueezeBackward1", lambda m, F, a: a[:1].squeeze(0)),
    ("SqueezeBackward1", lambda m, F, a: a[:1].squeeze(dim=-2)),
    ("SqueezeBackward2", lambda m, F, a: a[:1].squeeze((0,))),
    ("SqueezeBackward2", lambda m, F, a: a[:1].squeeze(dim=[0, 1])),
    ("SqueezeBackward2", lambda m, F, a: m.squeeze(a[:1], (0,))),
    ("SqueezeBackward2", lambda m, F, a: a[:1, None].squeeze(0, 1)),
    ("SqueezeBackward2", lambda m, F, a: a.squeeze(())),
    # the in-place view ops: their out-of-place op's node under PyTorch's next number
    ("SqueezeBackward3", lambda m, F, a: a[:1].clone().squeeze_()),
    ("SqueezeBackward4", lambda m, F, a: a[:1].clone().squeeze_(0)),
    ("SqueezeBackward5", lambda m, F, a: a[:1].clone().squeeze_((0, 1))),
    ("SqueezeBackward4", lambda m, F, a: a.clone()[:1].squeeze_(0)),
    ("UnsqueezeBackward1", lambda m, F, a: a.clone().unsqueeze_(1)),
    ("TransposeBackward1", lambda m, F, a: a.clone().transpose_(0, 1)),
    ("TransposeBackward1", lambda m, F, a: a.clone().swapaxes_(0, 1)),
    ("TransposeBackward1", lambda m, F, a: a.clone().swapdims_(1, 0)),
    ("AsStridedBackward1", lambda m, F, a: a.clone().as_strided_((4, 3), (1, 4))),
    ("TBackward1", lambda m, F, a: a.clone().t_()),
    ("VarBackward0", lambda m, F, a: a.var()),
    ("VarBackward0", lambda m, F, a: a.var(1)),
    ("StdBackward0", lambda m, F, a: a.std(0)),
    ("StdMeanBackward0", lambda m, F, a: m.std_mean(a)[0]),
    ("VarMeanBackward0", lambda m, F, a: m.var_mean(a, 1)[0]),
    ("ClampBackward1", lambda m, F, a: a.clamp(-0.5, 0.5)),
    ("ClampBackward1", lambda m, F, a: a.clamp(min=0)),
    ("ClampBackward0", lambda m, F, a: a.clamp(m.zeros(4, dtype=m.float64))),
    ("RsubBackward1", lambda m, F, a: 1 - a),
    ("SubBackward0", lambda m, F, a: a - 1),
    ("MseLossBackward0", lambda m, F, a: F.mse_loss(a, a.detach() * 2)),
    ("MseLossBackward0", lambda m, F, a: F.mse_loss(a, a.detach() * 2, reduction="sum")),
    ("MseLossBackward0", lambda m, F, a: F.mse_loss(a, a.detach() * 2, reduction="none")),
    ("SmoothL1LossBackward0", lambda m, F, a: F.smooth_l1_loss(a, a.detach() * 2)),
    ("HuberLossBackward0", lambda m, F, a: F.huber_loss(a, a.detach() * 2)),
    ("BinaryCrossEntropyWithLogitsBackward0", lambda m, F, a: F.binary_cross_entropy_with_logits(a, a.detach().sigmoid())),
    ("AddmmBackward0", lambda m, F, a: m.addmm(a[:, :2], a, a.t()[:, :2])),
    ("AddmmBackward0", lambda m, F, a: F.linear(a, a[:2], a[0, :2])),
    ("ViewBackward0", lambda m, F, a: F.linear(a.unsqueeze(0), a[:2], a[0, :2])),
    ("MmBackward0", lambda m, F, a: F.linear(a, a[:2])),
    ("MvBackward0", lambda m, F, a: a.mv(a[0])),
    ("BaddbmmBackward0", lambda m, F, a: m.baddbmm(a[None, :, :3], a[None], a.t()[None, :, :3])),
    ("LogsumexpBackward0", lambda m, F, a: a.logsumexp(1)),
    ("MaskedFillBackward0", lambda m, F, a: a.masked_fill(a > 0, 0.0)),
    ("IndexSelectBackward0", lambda m, F, a: a.index_select(0, m.tensor([0, 2]))),
    ("RepeatBackward0", lambda m, F, a: a.repeat(2, 1)),
    ("TraceBackward0", lambda m, F, a: a.trace()),
    ("TrilBackward0", lambda m, F, a: a.tril()),
    ("TriuBackward0", lambda m, F, a: a.triu(1)),
    ("FlipBackward0", lambda m, F, a: a.flip(0)),
    ("RollBackward0", lambda m, F, a: a.roll(1, 0)),
    ("LerpBackward0", lambda m, F, a: m.lerp(a, a.detach(), 0.5)),
    ("LerpBackward1", lambda m, F, a: m.lerp(a, a.detach(), a.detach())),
    ("ConvolutionBackward0", lambda m, F, a: F.conv2d(a.reshape(1, 1, 3, 4), a.reshape(1, 1, 3, 4)[..., :2, :2])),
    ("ConvolutionBackward0", lambda m, F, a: F.conv1d(a.reshape(1, 3, 4), a.reshape(1, 3, 4)[..., :2])),
    ("ConvolutionBackward0", lambda m, F, a: F.conv_transpose2d(a.reshape(1, 1, 3, 4), a.reshape(1, 1, 3, 4))),
    ("MaxPool2DWithIndicesBackward0", lambda m, F, a: F.max_pool2d(a.reshape(1, 1, 3, 4), 2)),
    ("AvgPool2DBackward0", lambda m, F, a: F.avg_pool2d(a.reshape(1, 1, 3, 4), 2)),
    ("NllLossBackward0", lambda m, F, a: F.cross_entropy(a, m.tensor([0, 1, 2]))),
    ("MeanBackward0", lambda m, F, a: F.l1_loss(a, a.detach() * 2)),
    ("MeanBackward1", lambda m, F, a: a.mean(1)),
    ("MulBackward0", lambda m, F, a: 2 / a),  # PyTorch's __rtruediv__ is reciprocal() * 2
    ("DivBackward0", lambda m, F, a: a / 2),
    ("PowBackward2", lambda m, F, a: 2 ** a),
    ("PowBackward2", lambda m, F, a: m.pow(2.5, a)),
    ("PowBackward0", lambda m, F, a: a ** 2),
    ("UnsafeViewBackward0", lambda m, F, a: a.t().reshape(-1)),
    ("ViewBackward0", lambda m, F, a: a.reshape(-1)),
    ("UnsafeViewBackward0", lambda m, F, a: a.reshape(3, 1, 4) @ a.t()),
    ("UnsafeViewBackward0", lambda m, F, a: a.reshape(3, 1, 4) @ a[0]),
    ("UnsafeViewBackward0", lambda m, F, a: a[0] @ a.reshape(3, 4, 1)),
    ("UnsafeViewBackward0", lambda m, F, a: a.reshape(1, 3, 4) @ a.t().reshape(1, 4, 3)),
    ("MeanBackward1", lambda m, F, a: F.adaptive_avg_pool2d(a.reshape(1, 1, 3, 4), 1)),
    ("MeanBackward1", lambda m, F, a: F.adaptive_avg_pool2d(a.reshape(1, 3, 4), (1, 1))),
    ("AdaptiveAvgPool2DBackward0", lambda m, F, a: F.adaptive_avg_pool2d(a.reshape(1, 1, 3, 4), (3, 2))),
    ("AdaptiveAvgPool2DBackward0", lambda m, F, a: F.adaptive_avg_pool2d(a.reshape(1, 1, 3, 4), (2, 3))),
    ("AdaptiveAvgPool2DBackward0", lambda m, F, a: F.interpolate(a.reshape(1, 1, 3, 4), size=(2, 2), mode="area")),
    ("ViewBackward0", lambda m, F, a: m.einsum("ij,jk->ik", a, a.t())),
    ("ViewBackward0", lambda m, F, a: m.einsum("bij,bjk->bik", a.reshape(1, 3, 4), a.t().reshape(1, 4, 3))),
    ("ViewBackward0", lambda m, F, a: m.einsum("i,i->", a[0], a[1])),
    ("MulBackward0", lambda m, F, a: m.einsum("ij,ij->ij", a, a)),
    ("MulBackward0", lambda m, F, a: m.einsum("ij,ij->ji", a, a)),
    ("MulBackward0", lambda m, F, a: m.einsum("i,i->i", a[0], a[1])),
    ("MulBackward0", lambda m, F, a: m.einsum("i,j->ij", a[0], a[1])),
    ("MulBackward0", lambda m, F, a: m.einsum("i,j", a[0], a[1])),
    ("MulBackward0", lambda m, F, a: m.einsum("bi,bj,bk->bijk", a, a, a)),
    ("ViewBackward0", lambda m, F, a: m.einsum("i,j->", a[0], a[1])),
    ("ViewBackward0", lambda m, F, a: m.einsum("ij,i->i", a, a[:, 0])),
    ("ViewBackward0", lambda m, F, a: m.einsum("ij,ij->i", a, a)),
    ("ViewBackward0", lambda m, F, a: m.einsum("ji,jk->ik", a, a)),
    ("ViewBackward0", lambda m, F, a: m.einsum("ij,ik->kj", a, a)),
    ("ViewBackward0", lambda m, F, a: m.einsum("ij,jk,kl->il", a, a.t(), a)),
    ("ViewBackward0", lambda m, F, a: m.einsum("bhqd,bhkd->bhqk", a.reshape(1, 3, 2, 2), a.reshape(1, 3, 2, 2))),
    ("ViewBackward0", lambda m, F, a: m.einsum("...ij,...jk->...ik", a.reshape(3, 2, 2), a.reshape(3, 2, 2))),
    ("PermuteBackward0", lambda m, F, a: m.einsum("ii->i", a[:, :3])),
    ("SumBackward1", lambda m, F, a: m.einsum("ii", a[:, :3])),
    ("SumBackward1", lambda m, F, a: m.einsum("ijk->kj", a.reshape(3, 2, 2))),
    ("SumBackward1", lambda m, F, a: m.einsum("ij->j", a)),
    ("PermuteBackward0", lambda m, F, a: m.einsum("ij->ji", a)),
    ("PermuteBackward0", lambda m, F, a: m.einsum("ij->ij", a)),
    ("DiagEmbedBackward0", lambda m, F, a: m.diag(a[0])),
    ("DiagEmbedBackward0", lambda m, F, a: m.diag_embed(a)),
    ("DiagonalBackward0_copy", lambda m, F, a: m.diag(a)),
    ("ConstantPadNdBackward0", lambda m, F, a: F.pad(a, (1, 2))),
    ("ConstantPadNdBackward0", lambda m, F, a: F.pad(a, (0, 0))),
    ("ConstantPadNdBackward0", lambda m, F, a: F.pad(a, (-1, 1, 1, 0), value=2.0)),
    ("ReflectionPad1DBackward0", lambda m, F, a: F.pad(a, (1, 1), mode="reflect")),
    ("ReflectionPad2DBackward0", lambda m, F, a: F.pad(a.reshape(1, 3, 4), (1, 1, 1, 1), mode="reflect")),
    ("ReflectionPad3DBackward0", lambda m, F, a: F.pad(a.reshape(1, 1, 3, 4), (1, 1, 1, 1, 0, 0), mode="reflect")),
    ("ReplicationPad1DBackward0", lambda m, F, a: F.pad(a, (1, 1), mode="replicate")),
    ("ReplicationPad2DBackward0", lambda m, F, a: F.pad(a.reshape(1, 3, 4), (1, 1, 1, 1), mode="replicate")),
    ("ReplicationPad3DBackward0", lambda m, F, a: F.pad(a.reshape(1, 1, 3, 4), (1, 1, 1, 1, 1, 1), mode="replicate")),
    ("torch::autograd::CopySlices", lambda m, F, a: F.pad(a.reshape(1, 3, 4), (1, 1, 1, 1), mode="circular")),
    ("torch::autograd::CopySlices", lambda m, F, a: F.pad(a.reshape(1, 3, 4), (0, 0), mode="circular")),
    ("UpsampleNearest1DBackward0", lambda m, F, a: F.interpolate(a.reshape(1, 3, 4), scale_factor=2)),
    ("UpsampleNearest2DBackward0", lambda m, F, a: F.interpolate(a.reshape(1, 1, 3, 4), size=(5, 7))),
    ("UpsampleNearestExact1DBackward0", lambda m, F, a: F.interpolate(a.reshape(1, 3, 4), size=6, mode="nearest-exact")),
    ("UpsampleNearestExact2DBackward0",
     lambda m, F, a: F.interpolate(a.reshape(1, 1, 3, 4), scale_factor=(2, 1.5), mode="nearest-exact")),
    ("UpsampleLinear1DBackward0", lambda m, F, a: F.interpolate(a.reshape(1, 3, 4), scale_factor=2, mode="linear")),
    ("UpsampleBilinear2DBackward0",
     lambda m, F, a: F.interpolate(a.reshape(1, 1, 3, 4), size=(4, 5), mode="bilinear", align_corners=True)),
    ("UpsampleBicubic2DBackward0", lambda m, F, a: F.interpolate(a.reshape(1, 1, 3, 4), scale_factor=2, mode="bicubic")),
    ("AbsBackward0", lambda m, F, a: F.l1_loss(a, a.detach() * 2, reduction="none")),
    ("SumBackward0", lambda m, F, a: F.l1_loss(a, a.detach() * 2, reduction="sum")),
]


def run_case(m, fn):
    a = m.tensor(np.linspace(-1.0, 1.2, 12).reshape(3, 4), requires_grad=True)
    return fn(m, m.nn.functional, a).grad_fn.name()


@pytest.mark.parametrize("expected, fn", CASES)
def test_node_names(expected, fn):
    assert run_case(ember, fn) == expected


@pytest.mark.parametrize("expected, fn", CASES)
def test_node_names_as_torch(expected, fn):
    torch = pytest.importorskip("torch")
    assert run_case(torch, fn) == expected


# matmul's node by operand shapes and which operands require grad, as torch.matmul's decompositions:
# dot, mv, unsqueeze/mm/squeeze_ (SqueezeBackward4), a fold of the batch into one mm/mv (UnsafeViewBackward0,
# transposed back by a copy when the batch is on the right: CloneBackward0), else a bmm.
MATMUL_CASES = [
    ((3,), (3,), "11", "DotBackward0"), ((2, 3), (3,), "10", "MvBackward0"), ((2, 3), (3,), "01", "MvBackward0"),
    ((3,), (3, 4), "11", "SqueezeBackward4"), ((3,), (3, 4), "01", "SqueezeBackward4"),
    ((2, 3), (3, 4), "11", "MmBackward0"), ((5, 2, 3), (3,), "11", "UnsafeViewBackward0"),
    ((3,), (5, 3, 4), "11", "UnsafeViewBackward0"), ((3,), (5, 3, 4), "01", "UnsafeViewBackward0"),
    ((5, 2, 3), (3, 4), "11", "UnsafeViewBackward0"), ((6, 5, 2, 3), (3, 4), "01", "UnsafeViewBackward0"),
    ((2, 3), (5, 3, 4), "11", "CloneBackward0"), ((2, 3), (5, 3, 4), "10", "CloneBackward0"),
    ((2, 3), (5, 3, 4), "01", "UnsafeViewBackward0"), ((2, 3), (6, 5, 3, 4), "10", "CloneBackward0"),
    ((1, 2, 3), (5, 3, 4), "10", "CloneBackward0"), ((1, 2, 3), (5, 3, 4), "01", "UnsafeViewBackward0"),
    ((5, 2, 3), (1, 3, 4), "01", "UnsafeViewBackward0"), ((5, 2, 3), (5, 3, 4), "11", "UnsafeViewBackward0"),
    ((6, 1, 2, 3), (5, 3, 4), "11", "UnsafeViewBackward0"), ((1, 3), (5, 3, 4), "11", "TransposeBackward0"),
]


def matmul_node(m, sa, sb, grads):
    rng = np.random.default_rng(0)
    a, b = (m.tensor(rng.standard_normal(s), requires_grad=g == "1") for s, g in zip((sa, sb), grads))
    return m.matmul(a, b).grad_fn.name(), a, b


@pytest.mark.parametrize("sa, sb, grads, expected", MATMUL_CASES)
def test_matmul_node_names(sa, sb, grads, expected):
    name, a, b = matmul_node(ember, sa, sb, grads)
    assert name == expected
    # the decomposition still computes the product and its gradients
    np.testing.assert_allclose(ember.matmul(a, b).detach().numpy(), np.matmul(a.detach().numpy(), b.detach().numpy()),
                               rtol=1e-12)
    assert ember.autograd.gradcheck(ember.matmul, (a, b))


@pytest.mark.parametrize("sa, sb, grads, expected", MATMUL_CASES)
def test_matmul_node_names_as_torch(sa, sb, grads, expected):
    torch = pytest.importorskip("torch")
    assert matmul_node(torch, sa, sb, grads)[0] == expected


def test_squeeze_overloads_shapes_and_gradients():
    """squeeze(dims) (SqueezeBackward2) drops the size-one dims listed, as squeeze(dim), and its
    gradient is the reshaped incoming one."""
    a = ember.arange(3.0).reshape(1, 3, 1).requires_grad_()
    assert a.squeeze((0,)).shape == (3, 1) and a.squeeze([0, 2]).shape == (3,) and a.squeeze(()).shape == (1, 3, 1)
    assert a.squeeze(0, 2).shape == (3,) and a.squeeze((1,)).shape == (1, 3, 1) and a.squeeze(-1).shape == (1, 3)
    y = a.squeeze((0, -1))
    (y * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.array([1.0, 2.0, 3.0]).reshape(1, 3, 1))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        a.squeeze((0, -3))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        a.squeeze(0.5)


def test_renamed_node_still_differentiates():
    """A composite's node keeps its formula: only the name is PyTorch's."""
    a = ember.tensor([1.0, 2.0, 4.0], requires_grad=True)
    loss = ember.nn.functional.mse_loss(a, ember.tensor([0.0, 0.0, 1.0]))
    assert loss.grad_fn.name() == "MseLossBackward0"
    loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), [2 / 3, 4 / 3, 2.0], rtol=1e-6)
    # an input a composite returns unchanged keeps its own node's name
    b = a * 1
    assert ember.nn.functional.dropout(b, 0.5, training=False).grad_fn.name() == "MulBackward0"


# ---------------------------------------------------------------- one Python class per node name
def test_each_node_name_is_its_own_class():
    a = ember.randn(3, 4, requires_grad=True)
    loss = ember.nn.functional.cross_entropy(a, ember.tensor([0, 1, 2]))
    node = loss.grad_fn
    cls = type(node)
    assert cls.__name__ == cls.__qualname__ == node.name() == "NllLossBackward0"
    assert cls.__module__ == "builtins" and repr(cls) == "<class 'NllLossBackward0'>"
    assert isinstance(node, ember._C.Node) and isinstance(node, ember.autograd.graph.Node)
    assert type(ember.nn.functional.cross_entropy(a * 2, ember.tensor([0, 0, 0])).grad_fn) is cls  # cached per name
    assert type((a * 2).grad_fn) is not cls and type((a * 2).grad_fn).__name__ == "MulBackward0"
    leaf_node = (a * 2).grad_fn.next_functions[0][0]
    assert type(leaf_node).__name__ == "AccumulateGrad" and leaf_node.variable.data_ptr() == a.data_ptr()
    assert loss.grad_fn is node  # an existing wrapper is returned as is


def test_cpp_node_names_are_torch_autograd_qualified():
    """PyTorch's C++ nodes: name() is torch::autograd::X, the class (and repr) X."""
    a = ember.ones(2, 3, requires_grad=True)
    leaf = (a * 2).grad_fn.next_functions[0][0]
    assert leaf.name() == "torch::autograd::AccumulateGrad"
    assert type(leaf).__name__ == "AccumulateGrad" and repr(leaf) == f"<AccumulateGrad object at {hex(id(leaf))}>"
    b = a.clone()
    b[0] = 1
    assert b.grad_fn.name() == "torch::autograd::CopySlices" and type(b.grad_fn).__name__ == "CopySlices"
    assert repr(b.grad_fn) == f"<CopySlices object at {hex(id(b.grad_fn))}>"
    assert type(b.grad_fn.next_functions[0][0]).__name__ == "CloneBackward0"
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[0, 0, 0], [1, 1, 1]])


def test_cpp_node_names_as_torch():
    torch = pytest.importorskip("torch")
    names = []
    for m in (ember, torch):
        a = m.ones(2, 3, requires_grad=True)
        b = a.clone()
        b[0] = 1
        leaf = (a * 2).grad_fn.next_functions[0][0]
        names.append((leaf.name(), type(leaf).__name__, b.grad_fn.name(), type(b.grad_fn).__name__))
    assert names[0] == names[1]


def test_renamed_nodes_keep_their_gradients():
    """Only the names are PyTorch's: 2 / a, 2 ** a, the unsafe views and the global pool differentiate as before."""
    a = ember.tensor([[0.5, 1.0], [2.0, 4.0]], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad((2 / a).sum() + (2 ** a).sum(), a)
    x = a.detach().numpy()
    np.testing.assert_allclose(g.numpy(), -2 / x**2 + np.log(2) * 2**x, rtol=1e-12)
    (g,) = ember.autograd.grad((a.t().reshape(-1) * ember.arange(4.0, dtype=ember.float64)).sum(), a)
    np.testing.assert_array_equal(g.numpy(), [[0, 2], [1, 3]])
    (g,) = ember.autograd.grad(ember.nn.functional.adaptive_avg_pool2d(a.reshape(1, 1, 2, 2), 1).sum(), a)
    np.testing.assert_allclose(g.numpy(), np.full((2, 2), 0.25))
    np.testing.assert_array_equal((2 / ember.tensor([1, 4])).numpy(), np.float32([2, 0.5]))  # int input: float


def test_node_repr_is_pythons_default_with_a_hex_address():
    node = (ember.ones(2, requires_grad=True) * 2).grad_fn
    assert repr(node) == f"<MulBackward0 object at {hex(id(node))}>"


def test_custom_function_nodes_keep_their_class():
    class Double(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(ember.ones(2, requires_grad=True))
    assert type(y.grad_fn).__name__ == "DoubleBackward" and y.grad_fn.name() == "DoubleBackward"


def test_node_classes_as_torch():
    torch = pytest.importorskip("torch")
    for m in (ember, torch):
        a = m.ones(2, 3, requires_grad=True)
        names = [type(f(m, a).grad_fn).__name__ for f in (
            lambda m, a: m.nn.functional.mse_loss(a, a.detach()),
            lambda m, a: a.sum(1), lambda m, a: a.max(), lambda m, a: a.t())]
        if m is ember:
            ours = names
    assert ours == names == ["MseLossBackward0", "SumBackward1", "MaxBackward1", "TBackward0"]


# ---------------------------------------------------------------- next_functions
def _next_names(m, make):
    x, w = m.ones(2, 3, requires_grad=True), m.ones(3, 4, requires_grad=True)
    c, k = m.ones(2, 3), m.ones(3, 4)
    node = make(m, x, w, c, k).grad_fn
    return [(None if n is None else type(n).__name__, i) for n, i in node.next_functions]


ACC, NONE = ("AccumulateGrad", 0), (None, 0)
NEXT_FUNCTIONS = [
    # one entry per differentiable input, (None, 0) for those that do not require grad, as PyTorch's
    (lambda m, x, w, c, k: x + c, [ACC, NONE]), (lambda m, x, w, c, k: c + x, [NONE, ACC]),
    (lambda m, x, w, c, k: x * c, [ACC, NONE]), (lambda m, x, w, c, k: x + 1, [ACC, NONE]),
    (lambda m, x, w, c, k: c.mm(w), [NONE, ACC]), (lambda m, x, w, c, k: x.mm(k), [ACC, NONE]),
    (lambda m, x, w, c, k: x.mm(w), [ACC, ACC]), (lambda m, x, w, c, k: m.where(c > 0, x, c), [ACC, NONE]),
    (lambda m, x, w, c, k: m.addcmul(c, x, c), [NONE, ACC, NONE]), (lambda m, x, w, c, k: m.cat([c, x]), [NONE, ACC]),
    (lambda m, x, w, c, k: m.stack([x, c, x]), [ACC, NONE, ACC]), (lambda m, x, w, c, k: m.lerp(c, x, 0.5), [NONE, ACC]),
    (lambda m, x, w, c, k: c.pow(x), [NONE, ACC]),
    (lambda m, x, w, c, k: m.nn.functional.layer_norm(c, (3,), x[0], None), [NONE, ("SelectBackward0", 0), NONE]),
    # composites with PyTorch's one node (ops.yaml node_inputs): their own inputs, not the inner nodes
    (lambda m, x, w, c, k: m.nn.Linear(3, 4)(c), [ACC, NONE, ("TBackward0", 0)]),
    (lambda m, x, w, c, k: m.nn.Linear(3, 4)(x), [ACC, ACC, ("TBackward0", 0)]),
    (lambda m, x, w, c, k: m.addmm(k[0], c, w), [NONE, NONE, ACC]),
    (lambda m, x, w, c, k: m.nn.functional.mse_loss(x, c), [ACC, NONE]),
    (lambda m, x, w, c, k: m.nn.functional.mse_loss(c, x * 2), [NONE, ("MulBackward0", 0)]),
    (lambda m, x, w, c, k: m.clamp(x, c, c), [ACC, NONE, NONE]),
    (lambda m, x, w, c, k: m.clamp(c, None, x), [NONE, NONE, ACC]),
    (lambda m, x, w, c, k: c.mv(w[:, 0]), [NONE, ("SelectBackward0", 0)]),
]


@pytest.mark.parametrize("make, expected", NEXT_FUNCTIONS)
@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_next_functions_list_every_input(lib, make, expected):
    assert _next_names(ember if lib == "ember" else pytest.importorskip("torch"), make) == expected


def test_shown_inputs_leave_the_gradients_alone():
    """nn.Linear's AddmmBackward0 shows its inputs; backward still runs the composite's own graph."""
    lin = ember.nn.Linear(3, 2)
    x = ember.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], requires_grad=True)
    out = lin(x)
    assert [type(n).__name__ for n, _ in out.grad_fn.next_functions] == ["AccumulateGrad", "AccumulateGrad",
                                                                          "TBackward0"]
    assert out.grad_fn.next_functions[0][0].variable.data_ptr() == lin.bias.data_ptr()
    out.backward(ember.tensor([[1.0, 0.0], [2.0, 1.0]]))
    g = np.array([[1.0, 0.0], [2.0, 1.0]])
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ x.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), g @ lin.weight.detach().numpy(), rtol=1e-6)
