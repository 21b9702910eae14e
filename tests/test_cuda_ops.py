"""Every operator in ops.yaml on the GPU: the cases of tests/test_ops.py (every
declared dtype; broadcast, 0-d, empty and non-contiguous inputs; in-place and
out=; float64 gradcheck and gradgradcheck) with every tensor made on the device, checked against
the same NumPy references, results required on the device. Skipped without a GPU."""
import pytest

import ember
from harness.collect import collect, rng_for
from harness.gradcheck import gradcheck, gradgradcheck
from harness.run import check_forward, check_inplace, check_out, check_undeclared
from harness.spec import load_spec
from harness.tensors import on_device

HAS_GPU = ember.cuda.is_available()
CASES = collect(load_spec()) if HAS_GPU else None   # collecting costs seconds: only with a GPU

pytestmark = [pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU"),
              pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")]


def cases(kind):
    items = getattr(CASES, kind) if CASES else []
    return pytest.mark.parametrize("case", items, ids=[c.id for c in items])


@pytest.fixture(autouse=True)
def tensors_on_the_gpu():
    with on_device("cuda"):
        yield


@cases("forward")
def test_forward_cuda(case):
    check_forward(case.op, case.sample, case.ref)


@cases("inplace")
def test_inplace_cuda(case):
    check_inplace(case.op, case.sample, case.ref)


@cases("out")
def test_out_cuda(case):
    check_out(case.op, case.sample, case.ref)


@cases("grad")
def test_gradcheck_cuda(case):
    gradcheck(case.op, case.sample, rng_for("grad|" + case.id))


@cases("gradgrad")
def test_gradgradcheck_cuda(case):
    gradgradcheck(case.op, case.sample, rng_for("gradgrad|" + case.id))


@cases("undeclared")
def test_undeclared_dtype_cuda(case):
    assert check_undeclared(case.op, case.sample, case.dtype, case.compute, False) is None
