"""ops.yaml's `autocast:` key: what the codegen accepts, its errors, the generated wrapper, and that
the declared policies follow PyTorch's CPU op lists (aten/src/ATen/autocast_mode.cpp) for ember's ops."""
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen.errors import SpecError  # noqa: E402
from codegen.gen import OpGen  # noqa: E402
from codegen.model import load_model  # noqa: E402

HEADER = "dtype_sets:\n  floating: [float32, float64]\nops:\n"
MM = """\
- func: mm(Tensor self, Tensor mat2) -> Tensor
  kind: kernel
  kernels: {cpu: mm_cpu}
  dtypes: floating
  doc: Product.
"""


def load(tmp_path, body):
    (tmp_path / "ops.yaml").write_text(HEADER + textwrap.dedent(body))
    (tmp_path / "derivatives.yaml").write_text("")
    return load_model(tmp_path / "ops.yaml", tmp_path / "derivatives.yaml")


def error_of(tmp_path, body):
    with pytest.raises(SpecError) as e:
        load(tmp_path, body)
    return str(e.value)


def test_policies_per_device(tmp_path):
    assert load(tmp_path, MM + "  autocast: lower\n").ops[0].autocast == {"cpu": "lower", "cuda": "lower"}
    assert load(tmp_path, MM + "  autocast: {cpu: fp32}\n").ops[0].autocast == {"cpu": "fp32"}
    assert load(tmp_path, MM).ops[0].autocast == {}


def test_autocast_errors(tmp_path):
    assert error_of(tmp_path, MM + "  autocast: half\n") == (
        "ops.yaml:9: mm: autocast is one of lower, fp32, promote, fp32_set_opt_dtype, banned, or a mapping "
        "{cpu: POLICY, cuda: POLICY}")
    assert "autocast is one of" in error_of(tmp_path, MM + "  autocast: {tpu: lower}\n")
    assert "mm: fp32_set_opt_dtype needs a `ScalarType? dtype` argument" in error_of(
        tmp_path, MM + "  autocast: {cuda: fp32_set_opt_dtype}\n")
    inplace = MM.replace("mm(Tensor self", "mm_(Tensor self")
    assert "mm_: autocast is for out-of-place ops with tensor arguments" in error_of(
        tmp_path, inplace + "  autocast: lower\n")


def test_generated_wrapper_casts_then_reenters(tmp_path):
    model = load(tmp_path, MM + "  autocast: {cpu: lower, cuda: promote}\n")
    wrapper = OpGen(model, model.ops[0]).autocast()
    cpu, cuda = wrapper["cases"]
    assert cpu == {"device": "DeviceType::CPU", "to": "autocast::dtype(DeviceType::CPU)", "banned": False,
                   "call": "mm(autocast::cast(to__, self, DeviceType::CPU), "
                           "autocast::cast(to__, mat2, DeviceType::CPU))"}
    assert cuda["to"] == "autocast::promote_type(DeviceType::CUDA, { &self, &mat2 }, {  })"
    banned = load(tmp_path, MM + "  autocast: {cuda: banned}\n")
    (case,) = OpGen(banned, banned.ops[0]).autocast()["cases"]
    assert case["banned"] and case["call"] == 'autocast::banned("mm")'


def test_binary_cross_entropy_is_banned_under_cuda_autocast():
    model = load_model(ROOT / "ops.yaml", ROOT / "derivatives.yaml")
    assert model.by_full_name("binary_cross_entropy").autocast == {"cpu": "fp32", "cuda": "banned"}


# PyTorch's CPU lists, for the ops ember declares in ops.yaml (the rest are Python-level or absent).
CPU_LOWER = {"conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "bmm", "mm", "baddbmm", "addmm", "addbmm",
             "matmul", "conv_transpose1d", "conv_transpose2d.input", "prelu", "scaled_dot_product_attention"}
CPU_PROMOTE = {"cat", "stack", "index_copy"}
CPU_FP32_SAMPLE = {"prod", "mse_loss", "nll_loss", "cross_entropy_loss", "binary_cross_entropy", "kl_div", "cdist",
                   "linalg_inv", "linalg_svd", "huber_loss", "smooth_l1_loss", "replication_pad2d"}


def test_ops_yaml_follows_pytorch_cpu_lists():
    model = load_model(ROOT / "ops.yaml", ROOT / "derivatives.yaml")
    cpu = {op.full_name: op.autocast.get("cpu") for op in model.ops if op.autocast.get("cpu")}
    assert {n for n, p in cpu.items() if p == "lower"} == CPU_LOWER
    assert {n for n, p in cpu.items() if p == "promote"} == CPU_PROMOTE
    assert CPU_FP32_SAMPLE <= {n for n, p in cpu.items() if p == "fp32"}
    # ops PyTorch leaves alone on CPU
    for name in ("add", "relu", "softmax", "exp", "sum", "layer_norm", "log_softmax"):
        assert not any(op.autocast.get("cpu") for op in model.overloads(name)), name
