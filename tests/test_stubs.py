"""ember's type stubs: the generated _C/*.pyi declare every attribute of _C.TensorBase
and of the module, ember.Tensor's Python methods are annotated, and mypy checks a
typed program using ember (and reports a wrong one)."""
import ast
import importlib.util
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember
from ember import _C

STUBS = Path(ember.__file__).parent / "_C"

GOOD = """\
    import numpy as np

    import ember
    from ember import Tensor


    class MyTensor(ember.Tensor):
        def doubled(self) -> Tensor:
            return self * 2


    def loss(w: Tensor, x: Tensor) -> Tensor:
        return ((x @ w - 1.0) ** 2).sum()


    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = ember.zeros(2, requires_grad=True)
    y = ember.ones(2, 3, dtype=ember.float64).view(3, 2).t()
    z = ember.add(x, 2) * 3 + x.sum(0) - x.T
    z += 1
    flags = (z > 0) & (z != 3)
    size: ember.Size = z.shape
    n: int = z.shape[0] + z.size(1) + z.dim() + len(z) + z.ndim
    loss(w, x).backward()
    grad = w.grad
    assert grad is not None
    array: np.ndarray = grad.numpy()
    values = x.tolist()
    norm = ember.linalg.vector_norm(x, 2, dim=1)
    value: float = norm[0].item() + float(norm.sum())
    model: ember.nn.Module = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU())
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    mine = MyTensor._make_subclass(MyTensor, x, False)
    view: MyTensor = x.as_subclass(MyTensor)
    twice = mine.doubled()
    with ember.no_grad():
        w.sub_(0.1 * grad)
    rows = [row.add_(1) for row in x]
    text: str = repr(x) + str(x.dtype.itemsize) + x.device.type
    leaf: bool = x.is_leaf and x.requires_grad and x.grad_fn is None
    best = x.max(1)
    indices: Tensor = best.indices + ember.min(x, 0).values
"""

# Each line is wrong; mypy names each one.
BAD = """\
    import ember

    t = ember.ones(2)
    t.shape + "x"
    t.no_such_method()
    ember.linalg.vector_norm("x")
    n: int = t.grad
"""


def mypy_available():
    return importlib.util.find_spec("mypy") is not None


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory):
    """One mypy run over the good program, the bad one and the ember package itself."""
    if not mypy_available():
        pytest.skip("mypy is not installed (pip install '.[test]')")
    d = tmp_path_factory.mktemp("mypy")
    (d / "good.py").write_text(textwrap.dedent(GOOD))
    (d / "bad.py").write_text(textwrap.dedent(BAD))
    # mypy finds ember where this interpreter does (sys.path), wherever the test runs from.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(ember.__file__).parent.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    output = ""
    for targets in (["good.py", "bad.py"], ["-p", "ember"]):
        p = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(d / "cache"), "--no-color-output",
                            "--show-error-codes", *targets], cwd=d, capture_output=True, text=True, env=env)
        output += p.stdout + p.stderr
    return output


def errors_in(output, name):
    return [line for line in output.splitlines() if line.startswith(name + ":") and ": error:" in line]


def test_the_typed_program_runs():
    ns = {}
    exec(compile(textwrap.dedent(GOOD), "good.py", "exec"), ns)
    assert type(ns["view"]).__name__ == "MyTensor" and ns["n"] == 10 and ns["indices"].tolist() == [3.0, 4.0]


def test_mypy_accepts_a_typed_program(mypy_run):
    assert "Cannot find implementation or library stub" not in mypy_run, mypy_run
    assert not errors_in(mypy_run, "good.py"), mypy_run


def test_mypy_reports_wrong_uses(mypy_run):
    lines = {int(e.split(":")[1]) for e in errors_in(mypy_run, "bad.py")}
    assert lines == {4, 5, 6, 7}, mypy_run
    assert '"Tensor" has no attribute "no_such_method"' in mypy_run


def test_ember_itself_type_checks_against_its_stubs(mypy_run):
    ember_errors = [line for line in mypy_run.splitlines() if ": error:" in line and "ember" in line.split(":")[0]]
    assert not ember_errors, mypy_run


def stub_names(tree):
    """Names a stub module defines at top level, and the members of each class."""
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets)
        elif isinstance(node, ast.ImportFrom):
            top.update(a.asname or a.name for a in node.names)
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    members.add(item.target.id)
            classes[node.name] = members
    return top, classes


def test_stub_declares_every_attribute():
    top, classes = stub_names(ast.parse((STUBS / "__init__.pyi").read_text()))
    runtime = {n for n in dir(_C) if not (n.startswith("__") and n.endswith("__"))}
    assert runtime - top == set(), "not in _C/__init__.pyi"
    # What TensorBase itself defines (slots, getsets, methods), and nothing it lacks.
    own = set(_C.TensorBase.__dict__) - {"__doc__", "__module__", "__dictoffset__", "__weaklistoffset__"}
    assert own - classes["TensorBase"] == set(), "TensorBase members missing from the stub"
    assert classes["TensorBase"] - set(dir(_C.TensorBase)) == set(), "stub members TensorBase lacks"
    for cls in ("dtype", "device", "Generator", "UntypedStorage", "Node"):
        runtime = {n for n in dir(getattr(_C, cls)) if not n.startswith("__") or n in getattr(_C, cls).__dict__}
        runtime -= set(dir(object)) - set(getattr(_C, cls).__dict__)
        runtime.discard("_pybind11_conduit_v1_")  # pybind11's own hook on the classes it binds
        # device's ordering comparisons exist (its richcompare slot) but return NotImplemented: not declared.
        unordered = {"__lt__", "__le__", "__gt__", "__ge__"} if cls == "device" else set()
        assert runtime - classes[cls] - unordered - {"__doc__", "__module__", "__init__", "__new__"} == set(), cls


def test_namespace_stubs_match_the_tables():
    for path, table in _C._op_modules.items():
        tree = ast.parse((STUBS / (table.__name__.rsplit(".", 1)[1] + ".pyi")).read_text())
        top, _ = stub_names(tree)
        declared_all = next(ast.literal_eval(n.value) for n in tree.body
                            if isinstance(n, ast.Assign) and n.targets[0].id == "__all__")
        assert declared_all == table.__all__, path
        assert set(table.__all__) <= top, path


def test_python_methods_are_annotated():
    for name, fn in vars(ember.Tensor).items():
        if not inspect.isfunction(fn):
            continue   # TensorBase's methods (typed by the stub) and class attributes
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, name
        for p in list(sig.parameters.values())[1:]:
            assert p.annotation is not inspect.Parameter.empty, f"{name}({p.name})"
