"""Sizes past int64 and allocations that cannot be made: every shape, numel,
stride and byte-size computation is checked, and the failure is PyTorch's
RuntimeError with PyTorch's message, never a segfault, a hang or a tensor of
the wrong size (issue 8, point 6).

The cases run in a child interpreter (one for all of them) so that a
regression to a crash or a hang fails these tests, not the whole run; with
torch importable the same expressions run under torch too and must raise the
same class with the same message."""
import json

import pytest

import ember
from child_process import run_isolated, torch_available

STORAGE = "Storage size calculation overflowed with sizes="
NUMEL = "numel: integer multiplication overflow"
ARANGE = "invalid size, possible overflow?"
GIB = 1 << 30

# (expression with `lib` for the library, the message it must raise, whether torch says the same).
CASES = [
    ("lib.zeros(2**62)", STORAGE + "[4611686018427387904]", True),
    ("lib.ones(2**62)", STORAGE + "[4611686018427387904]", True),
    ("lib.full((2**62,), 1)", STORAGE + "[4611686018427387904]", True),
    ("lib.randn(2**62)", STORAGE + "[4611686018427387904]", True),
    ("lib.rand(2**62)", STORAGE + "[4611686018427387904]", True),
    ("lib.randint(0, 5, (2**62,))", STORAGE + "[4611686018427387904]", True),
    ("lib.linspace(0, 1, 2**62)", STORAGE + "[4611686018427387904]", True),
    ("lib.arange(0, 2**62)", STORAGE + "[4611686018427387904]", True),
    ("lib.empty(2**32, 2**32)", STORAGE + "[4294967296, 4294967296]", True),
    ("lib.empty(2**62, 4)", STORAGE + "[4611686018427387904, 4]", True),
    ("lib.zeros(2**31, 2**31, 4)", STORAGE + "[2147483648, 2147483648, 4]", True),
    ("lib.empty(2**60, dtype=lib.float64)", STORAGE + "[1152921504606846976]", True),
    ("lib.empty(2**61, dtype=lib.int32)", STORAGE + "[2305843009213693952]", True),
    ("lib.eye(2**31, 2**31)", STORAGE + "[2147483648, 2147483648]", True),
    ("lib.eye(2**32)", NUMEL, True),
    ("lib.ones(5).expand(2**62, 5)", NUMEL, True),
    ("lib.ones(5).expand(2**61, 5)", NUMEL, True),
    ("lib.ones(5).expand(2**62, 5).contiguous()", NUMEL, True),
    ("lib.ones(5).expand(2**62, 5).sum()", NUMEL, True),
    ("lib.ones(5).expand(2**62, 5).clone()", NUMEL, True),
    ("lib.ones(5).expand(2**62, 5) + 1", NUMEL, True),
    ("lib.ones(3).expand(2**62, 3).max()", NUMEL, True),
    ("lib.ones(1).expand(2**32, 2**32).reshape(-1)", NUMEL, True),
    ("lib.empty(0).view(2**32, 2**32)", NUMEL, True),
    ("lib.empty(0).view(2**32, 2**32, 0)", NUMEL, True),
    ("lib.ones(4).view(2**62, 4)", "shape '[4611686018427387904, 4]' is invalid for input of size 4", True),
    ("lib.ones(1).reshape(2**32, 2**32)", "shape '[4294967296, 4294967296]' is invalid for input of size 1", True),
    ("lib.empty(0, 2**62, 2**62)", "Stride calculation overflowed", True),
    ("lib.empty(-1)", "Trying to create tensor with negative dimension -1: [-1]", True),
    ("lib.empty(2**62, -1)", "Trying to create tensor with negative dimension -1: [4611686018427387904, -1]", True),
    ("lib.arange(-2**62, 2**62)", ARANGE, True),
    ("lib.arange(-2**63, 2**63 - 1)", ARANGE, True),
    ("lib.arange(0., float('inf'))", "unsupported range: 0 -> inf", True),
    # PyTorch's own messages here come from a wrapped size ("negative dimension -9223372036854775808",
    # "cannot be represented as a SymInt"); ember names the overflow. The class is the same.
    ("lib.arange(0, 2**62, 0.5)", ARANGE, False),
    ("lib.cat([lib.ones(1).expand(2**62), lib.ones(1).expand(2**62)])", "cat(): the size of the result overflowed",
     False),
    ("lib.stack([lib.ones(1).expand(2**62), lib.ones(1).expand(2**62)])", STORAGE + "[2, 4611686018427387904]",
     False),
]

# Legal sizes that no allocator can serve: PyTorch's allocator error, with the byte count.
# The child's address space is capped, so these fail the same way on any machine.
ALLOCATOR = "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes"
ALLOCATION_CASES = [
    ("lib.empty(2**62, dtype=lib.uint8)", ALLOCATOR.format(2**62)),
    ("lib.zeros(2**40)", ALLOCATOR.format(2**42)),
    ("lib.ones(2**31, dtype=lib.uint8)", ALLOCATOR.format(2**31)),
    ("lib.zeros_like(lib.ones(1).expand(2**40))", ALLOCATOR.format(2**42)),
    ("lib.ones(1).expand(2**29, 4).contiguous()", ALLOCATOR.format(2**33)),
    ("lib.ones(1).expand(2**30) + 1", ALLOCATOR.format(2**32)),
]

RUNNER = """
    import json, sys
    import {lib} as lib
    for expr in json.loads(sys.stdin.read()):
        try:
            eval(expr)
            outcome = ["no error", ""]
        except Exception as e:
            outcome = [type(e).__name__, str(e)]
        print(json.dumps([expr, outcome]), flush=True)
"""


def outcomes(lib, exprs, memory_limit=None):
    """{expression: [exception class name, message]} from one child running all of `exprs`."""
    p = run_isolated(RUNNER.format(lib=lib), timeout=300, memory_limit=memory_limit, stdin=json.dumps(exprs))
    assert p.returncode == 0, f"{lib} child died (rc={p.returncode}) after:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return dict(json.loads(line) for line in p.stdout.splitlines() if line.startswith("["))


@pytest.fixture(scope="module")
def ember_outcomes():
    return outcomes("ember", [c[0] for c in CASES])


@pytest.fixture(scope="module")
def torch_outcomes():
    if not torch_available():
        pytest.skip("torch is not importable")
    return outcomes("torch", [c[0] for c in CASES if c[2]])


@pytest.mark.parametrize("expr,msg,same_in_torch", CASES, ids=[c[0] for c in CASES])
def test_size_overflow_raises(ember_outcomes, expr, msg, same_in_torch):
    kind, text = ember_outcomes[expr]
    assert kind == "RuntimeError", f"{expr}: {kind} {text}"
    assert msg in text, f"{expr}: {text!r} lacks {msg!r}"


@pytest.mark.parametrize("expr,msg", [c[:2] for c in CASES if c[2]], ids=[c[0] for c in CASES if c[2]])
def test_size_overflow_matches_torch(torch_outcomes, expr, msg):
    kind, text = torch_outcomes[expr]
    assert kind == "RuntimeError" and msg in text, f"torch: {expr}: {kind} {text}"


@pytest.fixture(scope="module")
def allocation_outcomes():
    return outcomes("ember", [c[0] for c in ALLOCATION_CASES], memory_limit=GIB)


@pytest.mark.parametrize("expr,msg", ALLOCATION_CASES, ids=[c[0] for c in ALLOCATION_CASES])
def test_failed_allocation_raises_allocator_error(allocation_outcomes, expr, msg):
    kind, text = allocation_outcomes[expr]
    assert kind == "RuntimeError" and msg in text, f"{expr}: {kind} {text}"


def test_failed_allocation_matches_torch():
    if not torch_available():
        pytest.skip("torch is not importable")
    # torch loads more than ember, so its cap is larger; the request is larger still.
    exprs = ["lib.empty(2**62, dtype=lib.uint8)", "lib.zeros_like(lib.ones(1).expand(2**40))"]
    got = outcomes("torch", exprs, memory_limit=8 * GIB)
    for expr, msg in zip(exprs, [ALLOCATOR.format(2**62), ALLOCATOR.format(2**42)]):
        kind, text = got[expr]
        assert kind == "RuntimeError" and msg in text, f"torch: {expr}: {kind} {text}"


def test_failed_allocation_leaves_the_allocator_usable():
    p = run_isolated("""
        import ember
        before = ember._C._cpu_cache_stats()
        try:
            ember.empty(2**31, dtype=ember.uint8)
        except RuntimeError as e:
            assert "can't allocate memory" in str(e), e
        else:
            raise AssertionError("a 2 GiB tensor under a 1 GiB cap was allocated")
        # The failed request is not counted as allocated, and the next one works.
        assert ember._C._cpu_cache_stats() == before, (ember._C._cpu_cache_stats(), before)
        assert ember.ones(2**20).sum().item() == 2**20
        print("OK")
    """, memory_limit=GIB)
    assert p.returncode == 0 and "OK" in p.stdout, f"rc={p.returncode}\n{p.stdout}\n{p.stderr[-2000:]}"


def test_large_int64_arange_steps_exactly():
    # end - start + step passes int64 here: the count is computed without overflowing.
    assert ember.arange(-2**63, 2**63 - 1, 2**62).tolist() == [-2**63, -2**62, 0, 2**62]
    assert ember.arange(2**63 - 1, -2**63, -2**62).tolist() == [2**63 - 1, 2**62 - 1, -1, -2**62 - 1]


def test_slice_step_past_the_end_keeps_one_element():
    t = ember.arange(4.)
    for step in (2**62, 2**63 - 1):
        s = t[::step]
        assert s.shape == (1,) and s.tolist() == [0.0]
        assert ember.slice(t, 0, 1, None, step).tolist() == [1.0]


def test_empty_dims_never_overflow_strides():
    # A zero-size dim makes numel 0, but strides are still products of the other sizes.
    t = ember.empty(2**62, 0)
    assert t.shape == (2**62, 0) and t.numel() == 0
    assert ember.ones(2**31, 0).expand(2**31, 2**31, 0).numel() == 0
    assert ember.eye(2**32, 0).shape == (2**32, 0)


def test_split_and_chunk_sizes_near_int64_max():
    # The piece counts are ceil(n / size) without computing n + size - 1.
    assert [p.tolist() for p in ember.ones(3).chunk(2**63 - 1)] == [[1.0], [1.0], [1.0]]
    assert [p.shape for p in ember.ones(3).split(2**63 - 1)] == [(3,)]
    # Sizes whose sum wraps around to the dim size are still refused.
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 3"):
        ember.ones(3).split([2**63 - 1, 2**63 - 1, 5])
