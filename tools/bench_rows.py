"""The rows of tools/bench.py: the libraries under test (one column each) and
every benchmark, for the CPU and for --device cuda. Each Bench's build(lib)
makes its inputs and returns a zero-argument callable to time, or None when
that library has no equivalent."""
import numpy as np

TIME_UNITS = {"us": 1e6, "ms": 1e3, "s": 1.0}  # other units are rates: GB/s, GFLOP/s, batches/s
RATE_SCALES = {"batches/s": 1.0}  # rates counted in units, not billions


class SelfTimed(float):
    """What a row's callable returns when only part of its call is to be timed (the
    seconds that part took), e.g. the first batch but not the workers' shutdown after it."""
F32 = 4  # bytes per float32


# --------------------------------------------------------------------------
# The libraries under test
# --------------------------------------------------------------------------
class Lib:
    """One column: a module plus how to make float32 inputs on its device."""

    def __init__(self, name, mod, device="cpu"):
        self.name, self.mod, self.device = name, mod, device
        self.is_numpy = name in ("numpy", "openblas")
        self.rng = np.random.default_rng(0)

    def device_kwargs(self):
        # Pass device= only off the CPU, so a young ember needs no device kwarg.
        return {} if self.device == "cpu" else {"device": self.device}

    def rand(self, *shape):
        if self.is_numpy:
            return self.rng.random(shape, dtype=np.float32)
        return self.mod.rand(*shape, **self.device_kwargs())

    def randn(self, *shape, dtype=None):
        if self.is_numpy:
            return self.rng.standard_normal(shape, dtype=np.float32)
        kwargs = self.device_kwargs()
        if dtype is not None:
            kwargs["dtype"] = getattr(self.mod, dtype)
        return self.mod.randn(*shape, **kwargs)

    def zeros(self, *shape):
        if self.is_numpy:
            return np.zeros(shape, dtype=np.float32)
        return self.mod.zeros(*shape, **self.device_kwargs())

    def sync(self):
        # Kernels on a GPU run asynchronously: wait for them before reading the clock.
        if self.device != "cpu":
            self.mod.cuda.synchronize()


# --------------------------------------------------------------------------
# The benchmarks. Each build(lib) makes its inputs and returns a zero-argument
# callable to time, or None when that library has no equivalent.
# --------------------------------------------------------------------------
ALL_COLUMNS = ("ember", "torch", "numpy", "openblas")
ARRAY_COLUMNS = ("ember", "torch", "numpy")  # "openblas" only has matmul
TORCHLIKE_COLUMNS = ("ember", "torch")


class Bench:
    def __init__(self, section, name, unit, build, work=None, columns=ARRAY_COLUMNS):
        self.section, self.name, self.unit, self.build = section, name, unit, build
        self.work = work  # bytes or flops per call, for the rate units
        self.columns = columns

    def value(self, seconds):
        """The row's figure, in its unit, for an op taking `seconds` per call."""
        if self.unit in TIME_UNITS:
            return seconds * TIME_UNITS[self.unit]
        return self.work / seconds / RATE_SCALES.get(self.unit, 1e9)


def overhead_benches():
    def build(op):
        def build_for(lib):
            a, b = lib.rand(1), lib.rand(1)
            if op == "add":
                return lambda: a + b
            if op == "sum":
                return lambda: a.sum()
            if lib.is_numpy:
                return lambda: np.maximum(a, 0)
            return lambda: a.relu()
        return build_for

    return [Bench("per-op overhead, 1-element float32", f"overhead {label}", "us", build(op))
            for op, label in (("add", "a+b"), ("sum", "a.sum()"), ("relu", "a.relu()"))]


def autograd_benches():
    def build(lib):
        x, w, b = (lib.rand(1).requires_grad_() for _ in range(3))

        def step():
            y = (x * w + b).relu().sum()
            y.backward()
        return step

    return [Bench("tiny autograd graph, 1 element", "autograd (x*w+b).relu().sum() fwd+bwd",
                  "us", build, columns=TORCHLIKE_COLUMNS)]


# op -> (inputs, out-of-place call, out= call); t is the ember or torch module.
TORCHLIKE_ELEMENTWISE = {
    "add": (2, lambda t, a, b: a + b, lambda t, a, b, out: t.add(a, b, out=out)),
    "mul": (2, lambda t, a, b: a * b, lambda t, a, b, out: t.mul(a, b, out=out)),
    "exp": (1, lambda t, a: t.exp(a), lambda t, a, out: t.exp(a, out=out)),
    "sigmoid": (1, lambda t, a: t.sigmoid(a), lambda t, a, out: t.sigmoid(a, out=out)),
    "x**2": (1, lambda t, a: a**2, lambda t, a, out: t.pow(a, 2, out=out)),  # a special exponent
    "x**1.7": (1, lambda t, a: a**1.7, lambda t, a, out: t.pow(a, 1.7, out=out)),
}
NUMPY_ELEMENTWISE = {
    "add": (lambda a, b: a + b, lambda a, b, out: np.add(a, b, out=out)),
    "mul": (lambda a, b: a * b, lambda a, b, out: np.multiply(a, b, out=out)),
    "exp": (np.exp, lambda a, out: np.exp(a, out=out)),
    "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), None),  # NumPy has no sigmoid ufunc
    "x**2": (lambda a: a**2, lambda a, out: np.power(a, 2, out=out)),
    "x**1.7": (lambda a: a**1.7, lambda a, out: np.power(a, np.float32(1.7), out=out)),
}


def elementwise_bench(op, n, size_label, use_out):
    inputs, torchlike_call, torchlike_out_call = TORCHLIKE_ELEMENTWISE[op]
    numpy_call, numpy_out_call = NUMPY_ELEMENTWISE[op]

    def build(lib):
        if lib.is_numpy and use_out and numpy_out_call is None:
            return None
        args = [lib.rand(n) for _ in range(inputs)]
        if lib.is_numpy:
            out = np.empty_like(args[0])
            return (lambda: numpy_out_call(*args, out)) if use_out else (lambda: numpy_call(*args))
        t = lib.mod
        if use_out:
            out = t.empty_like(args[0])
            return lambda: torchlike_out_call(t, *args, out)
        return lambda: torchlike_call(t, *args)

    name = f"{op} {size_label}" + (" out=" if use_out else "")
    return Bench("elementwise float32 (GB/s = bytes read + written)", name, "GB/s", build,
                 work=(inputs + 1) * n * F32)


def elementwise_benches():
    benches = []
    for op in TORCHLIKE_ELEMENTWISE:
        for use_out in (False, True):
            benches.append(elementwise_bench(op, 10**7, "1e7", use_out))
    # 1e7 float32 is 40 MB, near the size of an L3 cache: 5e7 is surely memory-bound.
    for use_out in (False, True):
        benches.append(elementwise_bench("add", 5 * 10**7, "5e7", use_out))
    return benches


def layout_benches():
    n = 4096

    def broadcast_add(lib):
        x, v = lib.rand(n, n), lib.rand(n)
        return lambda: x + v

    def transposed_add(lib):
        x, y = lib.rand(n, n), lib.rand(n, n)
        if lib.is_numpy:
            return lambda: x.T + y
        return lambda: x.t() + y

    def transposed_exp(lib):
        # a new output takes its input's memory order, so this is a dense pass
        x = lib.rand(n, n)
        if lib.is_numpy:
            return lambda: np.exp(x.T)
        return lambda: x.t().exp()

    section = "broadcast and strided (GB/s)"
    return [
        Bench(section, "broadcast add 4096x4096 + 4096", "GB/s", broadcast_add,
              work=(2 * n * n + n) * F32),
        Bench(section, "transposed add X.t()+Y 4096x4096", "GB/s", transposed_add,
              work=3 * n * n * F32),
        Bench(section, "transposed exp X.t().exp() 4096x4096", "GB/s", transposed_exp,
              work=2 * n * n * F32),
    ]


def reduction_benches():
    def full_sum(n):
        def build(lib):
            a = lib.rand(n)
            return lambda: a.sum()
        return build

    def sum_over(dim):
        def build(lib):
            a = lib.rand(4096, 4096)
            if lib.is_numpy:
                return lambda: a.sum(axis=dim)
            return lambda: a.sum(dim)
        return build

    def sum_narrow_columns(lib):  # many rows, few outputs: the cascade's worst case
        a = lib.rand(2_500_000, 4)
        return (lambda: a.sum(axis=0)) if lib.is_numpy else (lambda: a.sum(0))

    def sum_strided(lib):  # every other column: a strided inner run
        a = lib.rand(4096, 4096)[:, ::2]
        return lambda: a.sum()

    def var_all(lib):
        a = lib.rand(10**7)
        return (lambda: a.var(ddof=1)) if lib.is_numpy else (lambda: a.var())

    def norm(dim):
        def build(lib):
            a = lib.rand(4096, 4096) if dim is not None else lib.rand(10**7)
            if lib.is_numpy:
                return lambda: np.linalg.norm(a, axis=dim)
            return lambda: lib.mod.linalg.vector_norm(a, dim=dim)
        return build

    section = "reductions (GB/s = bytes read + written)"
    square = 4096 * 4096 * F32 + 4096 * F32
    return [
        Bench(section, "sum 1e7", "GB/s", full_sum(10**7), work=10**7 * F32),
        Bench(section, "sum 5e7", "GB/s", full_sum(5 * 10**7), work=5 * 10**7 * F32),
        Bench(section, "sum dim 0 of 4096x4096", "GB/s", sum_over(0), work=square),
        Bench(section, "sum dim 1 of 4096x4096", "GB/s", sum_over(1), work=square),
        Bench(section, "sum dim 0 of 2.5e6x4", "GB/s", sum_narrow_columns, work=10**7 * F32),
        Bench(section, "sum of 4096x4096[:, ::2]", "GB/s", sum_strided, work=4096 * 2048 * F32),
        Bench(section, "var 1e7", "GB/s", var_all, work=10**7 * F32),
        Bench(section, "vector_norm 1e7", "GB/s", norm(None), work=10**7 * F32),
        Bench(section, "vector_norm dim 0 of 4096x4096", "GB/s", norm(0), work=square),
    ]


def numpy_softmax_last_dim(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def softmax_benches():
    n = 4096

    def build(lib):
        a = lib.randn(n, n)
        if lib.is_numpy:
            return lambda: numpy_softmax_last_dim(a)
        return lambda: lib.mod.softmax(a, -1)

    return [Bench("softmax (GB/s = bytes read + written)", "softmax 4096x4096 dim -1",
                  "GB/s", build, work=2 * n * n * F32)]


def matmul_benches():
    section = "matmul float32 (GFLOP/s = 2*m*n*k / t)"

    def square(n):
        def build(lib):
            a, b = lib.randn(n, n), lib.randn(n, n)
            if lib.name == "openblas":  # lib.mod is a DirectSgemm
                c = np.empty((n, n), dtype=np.float32)
                return lambda: lib.mod.matmul_into(a, b, c)
            return lambda: a @ b
        return build

    def batched(lib):
        a, b = lib.randn(64, 128, 128), lib.randn(64, 128, 128)
        if lib.is_numpy:
            return lambda: np.matmul(a, b)
        return lambda: lib.mod.bmm(a, b)

    benches = [Bench(section, f"matmul {n}", "GFLOP/s", square(n), work=2 * n**3,
                     columns=ALL_COLUMNS) for n in (256, 1024, 2048)]
    benches.append(Bench(section, "bmm (64,128,128)x(64,128,128)", "GFLOP/s", batched,
                         work=2 * 64 * 128**3))
    return benches


# --------------------------------------------------------------------------
# MLP training step: the same code for every torch-like module.
# --------------------------------------------------------------------------
MLP_SIZES = (784, 512, 256, 10)
MLP_BATCH = 128
MLP_LR = 0.01


def clear_grad(p):
    try:
        p.grad = None
    except (AttributeError, TypeError, RuntimeError):  # a library that cannot unset .grad
        p.grad.zero_()


def torchlike_mlp_step(lib):
    t = lib.mod
    x = lib.randn(MLP_BATCH, MLP_SIZES[0])
    labels = t.randint(0, MLP_SIZES[-1], (MLP_BATCH, 1), **lib.device_kwargs())
    onehot = (labels == t.arange(MLP_SIZES[-1], **lib.device_kwargs())).float()
    params = []
    for fan_in, fan_out in zip(MLP_SIZES, MLP_SIZES[1:]):
        params.append((lib.randn(fan_in, fan_out) * (2 / fan_in) ** 0.5).requires_grad_())
        params.append(lib.zeros(fan_out).requires_grad_())
    w1, b1, w2, b2, w3, b3 = params

    def step():
        h = t.relu(x @ w1 + b1)
        h = t.relu(h @ w2 + b2)
        logits = h @ w3 + b3
        loss = -(t.log_softmax(logits, 1) * onehot).sum() / MLP_BATCH
        loss.backward()
        with t.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=MLP_LR)
                clear_grad(p)
    return step


def numpy_mlp_step(lib):
    """The same maths with the backward pass written out by hand."""
    x = lib.randn(MLP_BATCH, MLP_SIZES[0])
    onehot = np.eye(MLP_SIZES[-1], dtype=np.float32)[
        lib.rng.integers(0, MLP_SIZES[-1], MLP_BATCH)]
    weights = [lib.randn(i, o) * np.float32((2 / i) ** 0.5)
               for i, o in zip(MLP_SIZES, MLP_SIZES[1:])]
    biases = [np.zeros(o, dtype=np.float32) for o in MLP_SIZES[1:]]
    w1, w2, w3 = weights
    b1, b2, b3 = biases

    def step():
        z1 = x @ w1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3 + b3
        shifted = logits - logits.max(1, keepdims=True)
        e = np.exp(shifted)
        sum_e = e.sum(1, keepdims=True)
        log_softmax = shifted - np.log(sum_e)
        loss = -(log_softmax * onehot).sum() / MLP_BATCH  # computed as the others do
        # d loss / d logits = (softmax - onehot) / B, as each onehot row sums to 1.
        d_logits = (e / sum_e - onehot) / MLP_BATCH
        d_z2 = (d_logits @ w3.T) * (z2 > 0)
        d_z1 = (d_z2 @ w2.T) * (z1 > 0)
        grads = [(w3, h2.T @ d_logits), (b3, d_logits.sum(0)),
                 (w2, h1.T @ d_z2), (b2, d_z2.sum(0)),
                 (w1, x.T @ d_z1), (b1, d_z1.sum(0))]
        for param, grad in grads:
            param -= MLP_LR * grad
        return loss
    return step


def mlp_benches():
    def build(lib):
        return numpy_mlp_step(lib) if lib.is_numpy else torchlike_mlp_step(lib)

    sizes = "-".join(map(str, MLP_SIZES))
    return [Bench("MLP training step (forward, backward, SGD)",
                  f"MLP {sizes} step, batch {MLP_BATCH}", "ms", build)]


def all_benches():
    from bench_io import data_benches, save_load_benches  # issue 13's rows (bench_io imports this module)
    return (overhead_benches() + autograd_benches() + elementwise_benches()
            + layout_benches() + reduction_benches() + softmax_benches()
            + matmul_benches() + mlp_benches() + loss_benches() + index_benches()
            + scan_benches() + attention_benches() + conv_benches() + blas_benches()
            + norm_benches() + pool_benches() + sort_benches() + unique_benches()
            + regression_loss_benches() + padpool_benches() + lapack_benches() + conv3d_benches()
            + optim_benches() + rnn_benches() + ctc_benches() + save_load_benches() + data_benches() + amp_benches())


def loss_benches():
    """Issue 11's losses: a language-model-sized cross_entropy, forward and backward."""
    n, classes = 4096, 32000

    def build(lib):
        if lib.is_numpy:
            return None
        logits = lib.randn(n, classes)
        logits.requires_grad_(True)
        target = lib.mod.randint(0, classes, (n,), **lib.device_kwargs())
        functional = lib.mod.nn.functional

        def step():
            logits.grad = None
            functional.cross_entropy(logits, target).backward()
        return step

    return [Bench("losses", f"cross_entropy fwd+bwd {n}x{classes}", "ms", build, columns=TORCHLIKE_COLUMNS)]


def index_benches():
    # 1e7 float32 elements, int64 indices along dim 1 of rows of 1000 (duplicates included).
    shape = (10_000, 1_000)

    def inputs(lib):
        rng = np.random.default_rng(0)
        a = lib.mod.tensor(rng.standard_normal(shape, dtype=np.float32))
        return a, lib.mod.tensor(rng.integers(0, shape[1], size=shape))

    def gather(lib):
        a, idx = inputs(lib)
        return lambda: lib.mod.gather(a, 1, idx)

    def scatter_add(lib):
        a, idx = inputs(lib)
        return lambda: lib.mod.scatter_add(a, 1, idx, a)

    section = "index (GB/s = bytes of input, index and result)"
    n = shape[0] * shape[1]
    return [Bench(section, "gather 1e7", "GB/s", gather, work=n * (2 * F32 + 8), columns=TORCHLIKE_COLUMNS),
            Bench(section, "scatter_add 1e7", "GB/s", scatter_add, work=n * (3 * F32 + 8),
                  columns=TORCHLIKE_COLUMNS)]


# --------------------------------------------------------------------------
# --device cuda: the GPU rows of the CUDA issue (ember and torch only).
# --------------------------------------------------------------------------
GPU_N = 10**8


def cuda_benches():
    n = GPU_N

    def copy_d2d(lib):
        a, b = lib.rand(n), lib.zeros(n)
        return lambda: b.copy_(a)

    def add(use_out):
        def build(lib):
            a, b = lib.rand(n), lib.rand(n)
            if use_out:
                out = lib.zeros(n)
                return lambda: lib.mod.add(a, b, out=out)
            return lambda: a + b
        return build

    def full_sum(lib):
        a = lib.rand(n)
        return lambda: a.sum()

    def sum_over(dim):
        def build(lib):
            a = lib.rand(8192, 8192)
            return lambda: a.sum(dim)
        return build

    def softmax(lib):
        a = lib.randn(8192, 8192)
        return lambda: lib.mod.softmax(a, -1)

    def matmul(dtype):
        def build(lib):
            a, b = lib.randn(8192, 8192, dtype=dtype), lib.randn(8192, 8192, dtype=dtype)
            return lambda: a @ b
        return build

    cols = TORCHLIKE_COLUMNS
    bw, square = "GPU memory (GB/s = bytes read + written)", 8192 * 8192 * F32
    mm = "GPU matmul 8192 (GFLOP/s = 2*n^3 / t)"
    return (overhead_benches() + autograd_benches() + [
        Bench(bw, "copy 1e8 device-to-device", "GB/s", copy_d2d, work=2 * n * F32, columns=cols),
        Bench(bw, "add 1e8", "GB/s", add(False), work=3 * n * F32, columns=cols),
        Bench(bw, "add 1e8 out=", "GB/s", add(True), work=3 * n * F32, columns=cols),
        Bench(bw, "sum 1e8", "GB/s", full_sum, work=n * F32, columns=cols),
        Bench(bw, "sum dim 0 of 8192x8192", "GB/s", sum_over(0), work=square, columns=cols),
        Bench(bw, "sum dim 1 of 8192x8192", "GB/s", sum_over(1), work=square, columns=cols),
        Bench(bw, "softmax 8192x8192 dim -1", "GB/s", softmax, work=2 * square, columns=cols),
        Bench(mm, "matmul 8192 float32", "GFLOP/s", matmul("float32"), work=2 * 8192**3, columns=cols),
        Bench(mm, "matmul 8192 bfloat16", "GFLOP/s", matmul("bfloat16"), work=2 * 8192**3, columns=cols),
    ] + mlp_benches())


# ---------------------------------------------------------------- scans (issue 11)
def scan_benches():
    n = 10**7

    def build(lib):
        a = lib.randn(n)
        if lib.is_numpy:
            return lambda: np.cumsum(a)
        return lambda: lib.mod.cumsum(a, 0)

    return [Bench("scans (GB/s = bytes read + written)", "cumsum 1e7", "GB/s", build, work=2 * n * F32)]


def attention_benches():
    """Issue 11's attention: causal self-attention at a GPT-2-small block's shape, forward (no autograd)
    and forward+backward (the flash backward)."""
    b, h, n, d = 8, 8, 512, 64

    def build(backward):
        def make(lib):
            if lib.is_numpy:
                return None
            q, k, v = (lib.randn(b, h, n, d) for _ in range(3))
            sdpa = lib.mod.nn.functional.scaled_dot_product_attention
            if not backward:
                def forward():
                    with lib.mod.no_grad():
                        sdpa(q, k, v, is_causal=True)
                return forward
            grad = lib.randn(b, h, n, d)

            def step():
                args = [t.detach().requires_grad_() for t in (q, k, v)]
                sdpa(*args, is_causal=True).backward(grad)
            return step
        return make

    name = f"sdpa causal b{b} h{h} {n}x{d}"
    return [Bench("attention", name, "ms", build(False), columns=TORCHLIKE_COLUMNS),
            Bench("attention", f"{name} fwd+bwd", "ms", build(True), columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- conv (issue 11)
# (batch, in channels, out channels, image side, kernel, padding): LeNet's two layers, a ResNet block.
CONV_SHAPES = {"LeNet conv1": (64, 1, 6, 28, 5, 0), "LeNet conv2": (64, 6, 16, 12, 5, 0),
               "ResNet 3x3": (8, 64, 64, 56, 3, 1)}


def conv_row_name(shape, backward):
    n, c, oc, side, k, _ = CONV_SHAPES[shape]
    return f"conv2d {'fwd+bwd' if backward else 'fwd'} {shape} b{n} {c}->{oc} {side}x{side} k{k}"


def conv_benches():
    def build(shape, backward):
        n, c, oc, side, k, pad = CONV_SHAPES[shape]

        def build_for(lib):
            if lib.is_numpy:
                return None
            x, w, b = lib.randn(n, c, side, side), lib.randn(oc, c, k, k), lib.randn(oc)
            conv2d = lib.mod.nn.functional.conv2d
            if not backward:
                return lambda: conv2d(x, w, b, padding=pad)
            for t in (x, w, b):
                t.requires_grad_(True)
            out_side = side + 2 * pad - k + 1
            grad = lib.randn(n, oc, out_side, out_side)

            def step():
                x.grad = w.grad = b.grad = None
                conv2d(x, w, b, padding=pad).backward(grad)
            return step
        return build_for

    return [Bench("convolution (all gradients: input, weight, bias)", conv_row_name(shape, backward), "ms",
                  build(shape, backward), columns=TORCHLIKE_COLUMNS)
            for shape in CONV_SHAPES for backward in (False, True)]
# ---------------------------------------------------------------- blas (issue 11)
def blas_benches():
    """addmm with a broadcast bias (one gemm when no gradient is needed) and the attention
    scores einsum (one bmm)."""
    section = "blas (GFLOP/s = 2*m*n*k / t)"
    n = 1024
    b, h, q, d = 8, 8, 512, 64

    def addmm(lib):
        c, x, w = lib.randn(n), lib.randn(n, n), lib.randn(n, n)
        if lib.is_numpy:
            return lambda: c + x @ w
        return lambda: lib.mod.addmm(c, x, w)

    def scores(lib):
        qs, ks = lib.randn(b, h, q, d), lib.randn(b, h, q, d)
        if lib.is_numpy:
            return lambda: np.matmul(qs, np.swapaxes(ks, -1, -2))
        return lambda: lib.mod.einsum("bhqd,bhkd->bhqk", qs, ks)

    return [Bench(section, f"addmm {n}", "GFLOP/s", addmm, work=2 * n**3),
            Bench(section, f"einsum bhqd,bhkd->bhqk ({b},{h},{q},{d})", "GFLOP/s", scores, work=2 * b * h * q * q * d)]
# ---------------------------------------------------------------- norm (issue 11)
def norm_benches():
    """Training steps (forward and backward) of batch_norm, layer_norm and embedding."""
    def fwd_bwd(make):
        def build(lib):
            if lib.is_numpy:
                return None
            leaves, run, grad_shape = make(lib)
            for t in leaves:
                t.requires_grad_(True)
            g = lib.randn(*grad_shape)

            def step():
                for t in leaves:
                    t.grad = None
                run().backward(g)
            return step
        return build

    def batch_norm(lib):
        x, w, b = lib.randn(32, 64, 56, 56), lib.randn(64), lib.randn(64)
        rm, rv = lib.mod.zeros(64), lib.mod.ones(64)
        return [x, w, b], lambda: lib.mod.nn.functional.batch_norm(x, rm, rv, w, b, training=True), x.shape

    def layer_norm(lib):
        x, w, b = lib.randn(4096, 1024), lib.randn(1024), lib.randn(1024)
        return [x, w, b], lambda: lib.mod.nn.functional.layer_norm(x, [1024], w, b), x.shape

    def embedding(lib):
        w = lib.randn(50_000, 512)
        idx = lib.mod.tensor(np.random.default_rng(0).integers(0, 50_000, size=8192))
        return [w], lambda: lib.mod.nn.functional.embedding(idx, w), (8192, 512)

    group = "normalization and embedding (training step)"
    return [Bench(group, "batch_norm 2d train fwd+bwd b32 64ch 56x56", "ms", fwd_bwd(batch_norm), columns=TORCHLIKE_COLUMNS),
            Bench(group, "layer_norm fwd+bwd 4096x1024", "ms", fwd_bwd(layer_norm), columns=TORCHLIKE_COLUMNS),
            Bench(group, "embedding fwd+bwd 50000x512, 8192 indices", "ms", fwd_bwd(embedding), columns=TORCHLIKE_COLUMNS)]
# ---------------------------------------------------------------- pool (issue 11)
def pool_benches():
    """ResNet's stem pool: max_pool2d k3 s2 p1 over b64 x 64 ch x 56x56 float32, forward and forward+backward."""
    shape = (64, 64, 56, 56)

    def build(backward):
        def make(lib):
            if lib.is_numpy:
                return None
            x = lib.randn(*shape)
            functional = lib.mod.nn.functional
            if not backward:
                return lambda: functional.max_pool2d(x, 3, 2, 1)
            x.requires_grad_(True)

            def step():
                x.grad = None
                functional.max_pool2d(x, 3, 2, 1).sum().backward()
            return step
        return make

    section = "pool"
    return [Bench(section, "max_pool2d 64x64x56x56 k3s2p1 fwd", "ms", build(False), columns=TORCHLIKE_COLUMNS),
            Bench(section, "max_pool2d 64x64x56x56 k3s2p1 fwd+bwd", "ms", build(True), columns=TORCHLIKE_COLUMNS)]
# ---------------------------------------------------------------- sort (issue 11)
def sort_benches():
    """A 1-D float32 sort of 1e6 elements and topk k=100 of it (GB/s = bytes of the input read)."""
    n = 10**6

    def values(lib):
        return lib.mod.tensor(np.random.default_rng(0).standard_normal(n, dtype=np.float32))

    def sort(lib):
        a = values(lib)
        return lambda: lib.mod.sort(a)

    def topk(lib):
        a = values(lib)
        return lambda: lib.mod.topk(a, 100)

    section = "sort (GB/s = bytes of the input)"
    return [Bench(section, "sort 1e6", "GB/s", sort, work=n * F32, columns=TORCHLIKE_COLUMNS),
            Bench(section, "topk 1e6 k=100", "GB/s", topk, work=n * F32, columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- losses-regression (issue 11)
def regression_loss_benches():
    """mse_loss of two 1e7 float32 vectors, forward and backward (the input requires grad)."""
    n = 10**7

    def build(lib):
        if lib.is_numpy:
            return None
        rng = np.random.default_rng(0)
        x = lib.mod.tensor(rng.standard_normal(n, dtype=np.float32))
        y = lib.mod.tensor(rng.standard_normal(n, dtype=np.float32))
        x.requires_grad_(True)
        functional = lib.mod.nn.functional

        def step():
            x.grad = None
            functional.mse_loss(x, y).backward()
        return step

    return [Bench("losses", "mse_loss fwd+bwd 1e7", "ms", build, columns=TORCHLIKE_COLUMNS)]
# ---------------------------------------------------------------- padpool (issue 11)
def padpool_benches():
    """F.pad reflect by 3 on every side of b8 x 64 ch x 224x224 float32 (a 7x7 conv stem's padding), forward
    and forward+backward (backward from a fixed gradient of the padded shape)."""
    shape, p = (8, 64, 224, 224), 3

    def build(backward):
        def make(lib):
            if lib.is_numpy:
                return None
            x = lib.randn(*shape)
            pad = lib.mod.nn.functional.pad
            if not backward:
                return lambda: pad(x, (p,) * 4, mode="reflect")
            x.requires_grad_(True)
            g = lib.randn(*shape[:2], shape[2] + 2 * p, shape[3] + 2 * p)

            def step():
                x.grad = None
                pad(x, (p,) * 4, mode="reflect").backward(g)
            return step
        return make

    section = "padpool"
    name = f"pad reflect b{shape[0]} {shape[1]}ch {shape[2]}x{shape[3]} p{p}"
    return [Bench(section, f"{name} fwd", "ms", build(False), columns=TORCHLIKE_COLUMNS),
            Bench(section, f"{name} fwd+bwd", "ms", build(True), columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- lapack2 (issue 11)
def lapack_benches():
    """linalg.inv and linalg.qr of one well-conditioned 512x512 float32 matrix (LAPACK runs on
    one thread: a single matrix is not split)."""
    n = 512

    def matrix(lib):
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32) + n**0.5 * np.eye(n, dtype=np.float32)
        return a if lib.is_numpy else lib.mod.tensor(a)

    def inv(lib):
        a = matrix(lib)
        return (lambda: np.linalg.inv(a)) if lib.is_numpy else (lambda: lib.mod.linalg.inv(a))

    def qr(lib):
        a = matrix(lib)
        return (lambda: np.linalg.qr(a)) if lib.is_numpy else (lambda: lib.mod.linalg.qr(a))

    return [Bench("lapack", f"linalg.inv {n}", "ms", inv), Bench("lapack", f"linalg.qr {n}", "ms", qr)]


# ---------------------------------------------------------------- unique (issue 11)
def unique_benches():
    """topk over many short rows (8192 x 1000 float32, k=5 along the last dim), the shape of
    a classifier's top-5 (GB/s = bytes of the input read)."""
    rows, cols, k = 8192, 1000, 5

    def topk(lib):
        a = lib.mod.tensor(np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32))
        return lambda: lib.mod.topk(a, k, -1)

    return [Bench("unique / short-row topk (GB/s = bytes of the input)", "topk 8192x1000 k=5", "GB/s", topk,
                  work=rows * cols * F32, columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- nn layers (issue 12)
def conv3d_benches():
    """F.conv3d (ember: one conv2d over the depth taps as channels), forward and all gradients."""
    n, c, oc, side, k = 4, 8, 16, 16, 3

    def build(backward):
        def build_for(lib):
            if lib.is_numpy:
                return None
            x, w, b = lib.randn(n, c, side, side, side), lib.randn(oc, c, k, k, k), lib.randn(oc)
            conv3d = lib.mod.nn.functional.conv3d
            if not backward:
                return lambda: conv3d(x, w, b, padding=1)
            for t in (x, w, b):
                t.requires_grad_(True)
            grad = lib.randn(n, oc, side, side, side)

            def step():
                x.grad = w.grad = b.grad = None
                conv3d(x, w, b, padding=1).backward(grad)
            return step
        return build_for

    return [Bench("convolution (all gradients: input, weight, bias)",
                  f"conv3d {'fwd+bwd' if backward else 'fwd'} b{n} {c}->{oc} {side}^3 k{k}", "ms", build(backward),
                  columns=TORCHLIKE_COLUMNS) for backward in (False, True)]


# ---------------------------------------------------------------- optim (issue 12)
def optim_benches():
    """One optimizer step over 10M float32 parameters in 100 tensors of 1e5, gradients set, state made by a
    first step; each library's default update (ember: the C++ multi-tensor kernel; PyTorch on the CPU: its
    single-tensor loop)."""
    count, size = 100, 10**5

    def build(make_optimizer):
        def make(lib):
            if lib.is_numpy:
                return None
            rng = np.random.default_rng(0)
            params = [lib.mod.tensor(rng.standard_normal(size, dtype=np.float32), requires_grad=True)
                      for _ in range(count)]
            for p in params:
                p.grad = lib.mod.tensor(rng.standard_normal(size, dtype=np.float32))
            opt = make_optimizer(lib.mod.optim, params)
            opt.step()
            return opt.step
        return make

    section = "optim"
    return [Bench(section, "Adam step 10M params in 100 tensors", "ms",
                  build(lambda optim, ps: optim.Adam(ps, lr=1e-6)), columns=TORCHLIKE_COLUMNS),
            Bench(section, "SGD momentum step 10M params in 100 tensors", "ms",
                  build(lambda optim, ps: optim.SGD(ps, lr=1e-6, momentum=0.9)), columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- rnn (issue 12)
LSTM_SHAPE = {"layers": 2, "input": 256, "hidden": 256, "seq": 35, "batch": 20}  # the LSTM LM, vocab-free


def lstm_row_name():
    d = LSTM_SHAPE
    return f"LSTM {d['layers']}x{d['hidden']} in{d['input']} seq{d['seq']} b{d['batch']} fwd+bwd"


def rnn_benches():
    """Issue 12's recurrent layers: a 2-layer LSTM's forward and backward (every parameter's gradient)."""
    d = LSTM_SHAPE

    def build(lib):
        if lib.is_numpy:
            return None
        lib.mod.manual_seed(0)
        lstm = lib.mod.nn.LSTM(d["input"], d["hidden"], num_layers=d["layers"])
        x = lib.randn(d["seq"], d["batch"], d["input"])
        grad = lib.randn(d["seq"], d["batch"], d["hidden"])

        def step():
            for p in lstm.parameters():
                p.grad = None
            out, _ = lstm(x)
            out.backward(grad)
        return step

    return [Bench("rnn", lstm_row_name(), "ms", build, columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- amp (session 13)
def amp_benches():
    """Mixed precision: the MLP step's model (nn.Linear + ReLU, cross entropy, AdamW) under CPU bfloat16
    autocast with a GradScaler, against the same step in float32."""
    def build(use_amp):
        def build_for(lib):
            if lib.is_numpy:
                return None
            t = lib.mod
            t.manual_seed(0)
            layers = []
            for fan_in, fan_out in zip(MLP_SIZES, MLP_SIZES[1:]):
                layers += [t.nn.Linear(fan_in, fan_out), t.nn.ReLU()]
            model = t.nn.Sequential(*layers[:-1])
            opt = t.optim.AdamW(model.parameters(), lr=1e-3)
            scaler = t.amp.GradScaler("cpu", enabled=use_amp)
            x = lib.randn(MLP_BATCH, MLP_SIZES[0])
            labels = t.randint(0, MLP_SIZES[-1], (MLP_BATCH,))

            def step():
                opt.zero_grad()
                with t.autocast("cpu", dtype=t.bfloat16, enabled=use_amp):
                    loss = t.nn.functional.cross_entropy(model(x), labels)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            return step
        return build_for

    sizes = "-".join(map(str, MLP_SIZES))
    return [Bench("amp", f"MLP {sizes} AdamW step, batch {MLP_BATCH}, {label}", "ms", build(use_amp),
                  columns=TORCHLIKE_COLUMNS)
            for use_amp, label in ((False, "float32"), (True, "bf16 autocast + GradScaler"))]


# ---------------------------------------------------------------- ctc (issue 12)
CTC_SHAPE = {"T": 50, "N": 16, "C": 20, "S": 30}


def ctc_benches():
    """Issue 12's ctc_loss, the C++ kernel: forward and backward through log_softmax, mean reduction."""
    d = CTC_SHAPE

    def build(lib):
        if lib.is_numpy:
            return None
        lib.mod.manual_seed(0)
        logits = lib.randn(d["T"], d["N"], d["C"])
        logits.requires_grad_(True)
        targets = lib.mod.randint(1, d["C"], (d["N"], d["S"]), **lib.device_kwargs())
        input_lengths = lib.mod.full((d["N"],), d["T"], dtype=lib.mod.int64)
        target_lengths = lib.mod.randint(10, d["S"] + 1, (d["N"],))
        functional = lib.mod.nn.functional

        def step():
            logits.grad = None
            log_probs = logits.log_softmax(2)
            functional.ctc_loss(log_probs, targets, input_lengths, target_lengths).backward()
        return step

    name = f"ctc_loss T={d['T']} N={d['N']} C={d['C']} S={d['S']} fwd+bwd"
    return [Bench("losses", name, "ms", build, columns=TORCHLIKE_COLUMNS)]
