"""Turns ops.yaml into the lists of test cases that tests/test_ops.py parametrises over."""
import zlib
from dataclasses import dataclass, field

import numpy as np

from .dtypes import is_floating
from .gradcheck import differentiable_inputs
from .run import reference
from .rules import compute_dtype
from .samples import GENERATORS, Arg, generate
from .spec import ALL_DTYPES, differentiable, returns_several, run_dtypes

GRADCHECK_MAX_ELEMENTS = 30
GRADCHECK_MAX_SAMPLES = 8


def rng_for(tag):
    return np.random.default_rng(zlib.crc32(tag.encode()))


@dataclass
class Case:
    id: str
    op: object
    dtype: str
    sample: object = None
    ref: object = None
    compute: str = None           # undeclared-dtype cases: the dtype the call would compute in
    reason: str = None            # skipped ops

    def __repr__(self):
        return self.id


@dataclass
class Cases:
    forward: list = field(default_factory=list)
    inplace: list = field(default_factory=list)
    out: list = field(default_factory=list)
    grad: list = field(default_factory=list)
    gradgrad: list = field(default_factory=list)  # grad cases of ops with a second derivative
    undeclared: list = field(default_factory=list)
    skipped: list = field(default_factory=list)


def _testable(op):
    t = op.test
    return "skip" not in t and "ref" in t and bool(op.sig.returns) and (
        "cases" in t or t.get("samples") in GENERATORS)


def _grad_eligible(sample, ref):
    if sample.mixed or ref.error is not None or ref.bug is not None:
        return False
    diff = differentiable_inputs(sample)
    n = sum(a.values.size for a in diff.values())
    if not diff or n == 0 or n > GRADCHECK_MAX_ELEMENTS:
        return False
    if any(a.dtype != "float64" for _, a in sample.args_of_role() if a.dtype != "bool"):
        return False
    floats = [o for o, d in zip(ref.outputs, ref.dtypes) if is_floating(d)]
    return any(o.size for o in floats) and all(np.all(np.isfinite(o)) for o in floats)


def _spread(items, n):
    """At most n of items, evenly spread (the samples go from plain to broadcast to non-contiguous)."""
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def collect(spec):
    cases = Cases()
    for op in spec.ops:
        if "skip" in op.test:
            cases.skipped.append(Case(op.full_name, op, None, reason=str(op.test.get("skip") or "")))
            continue
        if not _testable(op):
            continue                   # the lint test reports why
        declared = set(run_dtypes(op))
        grad = []
        single = not returns_several(op)
        for dtype in run_dtypes(op):
            for s in generate(op, dtype, rng_for, spec.overloads(op.name)):
                ref = reference(op, s)
                if ref.compute is not None and ref.compute not in declared:
                    continue           # e.g. a mixed-dtype sample that would compute outside the set
                case = Case(f"{op.full_name}-{dtype}-{s.name}", op, dtype, s, ref)
                cases.forward.append(case)
                if ref.error is not None:
                    continue
                if "inplace" in op.derive and isinstance(s.inputs.get("a"), Arg) and single:
                    cases.inplace.append(case)
                if "out" in op.derive and s.out_ok and single:
                    cases.out.append(case)
                if dtype == "float64" and differentiable(op) and op.test.get("grad", True) \
                        and _grad_eligible(s, ref):
                    grad.append(case)
        grad = _spread(grad, GRADCHECK_MAX_SAMPLES)
        cases.grad += grad
        if "no_gradgrad" not in op.test:
            cases.gradgrad += grad
        if op.dtypes:
            for dtype in ALL_DTYPES:
                s = generate(op, dtype, rng_for, spec.overloads(op.name))[0]
                compute = compute_dtype(op, s)
                if compute not in declared:
                    cases.undeclared.append(Case(f"{op.full_name}-{dtype}", op, dtype, s, compute=compute))
    return cases
