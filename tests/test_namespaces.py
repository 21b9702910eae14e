"""ember's Python namespaces: the ops of each `python_module:` in its submodule, and
ember.__all__ as the explicit list of public names."""
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    import torch
except ImportError:
    torch = None

# Public ember names PyTorch has no top-level function for (aten ops PyTorch keeps out of `torch.*`).
EMBER_ONLY = {"slice", "index"}
# Kernels PyTorch keeps in torch._C._nn without a torch.nn.functional function of their name (F.pad reaches them).
NN_ONLY = {f"{kind}_pad{n}d" for kind in ("reflection", "replication") for n in (1, 2, 3)} | {
    "upsample_bicubic2d", "upsample_nearest1d", "upsample_nearest2d", "upsample_linear1d", "upsample_bilinear2d",
    "upsample_nearest3d", "upsample_trilinear3d"}


def test_linalg_functions_come_from_their_table():
    x = ember.tensor([3.0, 4.0])
    assert ember.linalg.vector_norm(x).item() == 5.0
    assert ember.linalg.vector_norm(x, 1).item() == 7.0
    assert "vector_norm" in ember.linalg.__all__ and "inv" in ember.linalg.__all__
    # As PyTorch: the function keeps the op's name, which errors name; there is no torch.linalg_vector_norm.
    assert ember.linalg.vector_norm.__name__ == "linalg_vector_norm"
    assert not hasattr(ember, "linalg_vector_norm")
    if torch is not None:
        assert not hasattr(torch, "linalg_vector_norm") and hasattr(torch.linalg, "vector_norm")
    with pytest.raises(TypeError, match=r"^linalg_vector_norm\(\): argument"):
        ember.linalg.vector_norm(1)


def test_namespace_tables_match_the_spec():
    from codegen.model import PYTHON_MODULES, load_model
    from codegen.python import public_name
    model = load_model(ROOT / "ops.yaml", ROOT / "derivatives.yaml")
    assert set(ember._C._op_modules) == {""} | set(PYTHON_MODULES)
    for path, table in ember._C._op_modules.items():
        ops = [op for op in model.ops if op.python_module == path and "function" in op.variants]
        # A function-only op's derived in-place form is a function too (torch.selu_, torch._C._nn.elu_),
        # as are those `inplace_variants:` lists (torch.sin_).
        expected = {public_name(op) for op in ops} | {
            public_name(op) + "_" for op in ops if "inplace" in op.derive
            and "function" in (op.inplace_variants or (["function"] if op.variants == ["function"] else []))}
        assert set(table.__all__) == expected, path
        assert sys.modules[table.__name__] is table  # importable, as PyTorch's torch._C._linalg
        if path == "nn":
            # As torch._C._nn: ember.nn.functional wraps these in Python functions of the same names.
            # An in-place form is either F's own function or reached by F's `inplace=True`.
            functional = ember.nn.functional
            for name in (n for n in table.__all__ if not n.startswith("_")):
                if name in NN_ONLY:
                    assert torch is None or (hasattr(torch._C._nn, name) and not hasattr(torch.nn.functional, name))
                    continue
                base = name.rstrip("_")
                wrapper = getattr(functional, {"log_sigmoid": "logsigmoid", "im2col": "unfold", "col2im": "fold", "cross_entropy_loss": "cross_entropy",
                                           "nll_loss_nd": "nll_loss", "nll_loss2d": "nll_loss"}.get(base, base))
                if name.endswith("_") and not hasattr(functional, name):
                    assert "inplace" in inspect.signature(wrapper).parameters, name
            continue
        module = ember
        for part in filter(None, path.split(".")):
            module = getattr(module, part)
        for name in table.__all__:
            if name in ember.functional.__all__ and not path:
                # As torch.functional over _VF: a Python function (varargs, sublists, as_tuple) calling the op.
                assert getattr(module, name) is getattr(ember.functional, name), name
            elif name in ember._PRIVATE_OPS and not path:
                assert not hasattr(module, name), name  # as torch's PRIVATE_OPS (unique_dim)
            elif getattr(getattr(module, name, None), "__module__", None) == "ember._tuple_out":
                # The tuple out= forms (frexp, linalg.lu_factor, ...: python/ember/_tuple_out.py) call the op.
                assert getattr(module, name).__name__ in (name, f"linalg_{name}"), f"{path}.{name}"
            elif not name.startswith("_"):
                assert getattr(module, name) is getattr(table, name), f"{path}.{name}"
        if path:
            assert module.__all__ == [n for n in table.__all__ if not n.startswith("_")]


def test_all_is_explicit_and_complete():
    names = ember.__all__
    assert len(names) == len(set(names))
    assert all(not n.startswith("_") for n in names)
    for n in names:
        assert hasattr(ember, n), n
    public = {n for n in dir(ember) if not n.startswith("_") and not inspect.ismodule(getattr(ember, n))}
    assert public == set(names)
    for helper in ("_ctypes", "_os", "_load_blas", "_name", "cfloat"):
        assert not hasattr(ember, helper), helper
    for n in ("add", "sum", "zeros", "Tensor", "tensor", "float32", "float", "no_grad", "manual_seed", "Size"):
        assert n in names, n
    assert "vector_norm" not in names and "_div_trunc" not in names


def test_star_import_gives_exactly_all():
    p = subprocess.run([sys.executable, "-c", "from ember import *\n"
                        "print(sorted(n for n in dir() if not n.startswith('__')))"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert eval(p.stdout) == sorted(ember.__all__)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_public_names_exist_in_pytorch():
    assert {n for n in ember.__all__ if not hasattr(torch, n)} == EMBER_ONLY
    for n in ember.linalg.__all__:
        assert hasattr(torch.linalg, n), n


def test_subpackages_are_attributes_after_import_ember():
    # As `import torch` gives torch.utils, torch.linalg, torch.autograd without importing them.
    import subprocess
    import sys
    code = "import ember; print(all(hasattr(ember, m) for m in ('autograd', 'cuda', 'backends', 'linalg', 'utils')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
    assert ember.utils.trace.TraceMode is not None


# What `import ember` leaves to first use: api-gaps' Python modules, ember.func, utils.checkpoint and dlpack,
# autograd.functional and gradcheck, the graph drawing (each costs import time, most without cached bytecode).
LAZY_MODULES = ["ember._composites", "ember._factories", "ember._quantile", "ember._legacy_linalg",
                "ember._runtime_flags", "ember._typed_storage", "ember._aliases", "ember._scatter_composites",
                "ember._tensor_predicates", "ember._tensor_view_ops", "ember._type_info", "ember.func",
                "ember.utils.checkpoint", "ember.autograd.functional", "ember.autograd.gradcheck",
                "ember.autograd._graph_dot", "ember.utils.dlpack"]


def _run(code):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_import_ember_leaves_the_api_gaps_modules_to_first_use():
    out = _run("import sys, ember\nprint([m for m in " + repr(LAZY_MODULES) + " if m in sys.modules])")
    assert eval(out) == []
    # First uses load them: a function, a Tensor method (made on first access), a legacy storage, a submodule.
    code = ("import sys, ember\n"
            "t = ember.tensor([[1.0, 5.0], [3.0, 2.0]])\n"
            "assert 'quantile' not in vars(ember) and callable(vars(ember.Tensor)['quantile'].__get__)\n"
            "print(t.quantile(0.5).item(), ember.nanquantile(t, 0.5).item(), 'quantile' in vars(ember))\n"
            "print(type(vars(ember.Tensor)['quantile']).__name__, ember.Tensor.quantile.__name__)\n"
            "print(t.storage_type() is ember.FloatStorage, ember.finfo(ember.float32).eps == 2.0 ** -23)\n"
            "print(ember.func.grad(lambda x: (x * x).sum())(t).tolist(), ember.utils.checkpoint.checkpoint.__name__)\n"
            "import ember.autograd.gradcheck\n"  # the submodule loads; ember.autograd.gradcheck stays the function
            "print(ember.autograd.functional.jacobian(lambda x: x * 2, ember.ones(1)).tolist(),"
            " ember.autograd.gradcheck.__name__, ember.autograd.gradgradcheck.__name__)\n"
            "print(callable(ember.autograd.graph.to_dot) and ember.from_dlpack(t).data_ptr() == t.data_ptr(),"
            " sorted(m for m in " + repr(LAZY_MODULES) + " if m in sys.modules))\n")
    lines = _run(code).splitlines()
    assert lines[0] == "2.5 2.5 True"
    assert lines[1] == "function quantile"
    assert lines[2] == "True True"
    assert lines[3] == "[[2.0, 10.0], [6.0, 4.0]] checkpoint"
    assert lines[4] == "[[2.0]] gradcheck gradgradcheck"
    used = ["ember._quantile", "ember._typed_storage", "ember._type_info", "ember.func", "ember.utils.checkpoint",
            "ember.autograd.functional", "ember.autograd.gradcheck", "ember.autograd._graph_dot",
            "ember.utils.dlpack"]
    assert lines[5] == f"True {sorted(used)}"


def test_lazy_names_match_their_modules():
    # Each listed name exists in its module, and each public function or class a module defines is listed.
    import importlib
    listed, methods = {}, {}
    for name, where in ember._LAZY_FUNCTIONS.items():
        listed.setdefault(where, set()).add(name)
    for lazy in vars(ember._tensor_api)["_LAZY_METHODS"].values():
        methods.setdefault(lazy.module, set()).add(lazy.function)
    for where, names in ember._LAZY_MODULE_NAMES.items():
        module = importlib.import_module(f"ember.{where}")
        assert set(names.split()) == listed[where]
        for name in names.split():
            assert getattr(ember, name) is getattr(module, name), name
        defined = {n for n, v in vars(module).items() if not n.startswith("_") and getattr(v, "__module__", None)
                   == module.__name__ and (inspect.isfunction(v) or inspect.isclass(v))}
        assert defined - listed[where] <= methods.get(where, set()), where  # the rest: Tensor methods only
    for name, lazy in vars(ember._tensor_api).get("_LAZY_METHODS").items():
        assert hasattr(importlib.import_module(f"ember.{lazy.module}"), lazy.function), name
        assert inspect.isfunction(getattr(ember.Tensor, name)) and name in vars(ember.Tensor), name
