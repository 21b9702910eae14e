"""Issue 12: a real PyTorch script runs unchanged on ember. tests/scripts/pytorch_mnist_like.py (plain
`import torch`) runs in a subprocess where a sitecustomize makes every `torch[.x]` import resolve to
`ember[.x]`; its printed lines equal the real torch run's (numbers to 5 significant digits). Without
torch: the ember run's lines against the expected structure and a falling loss."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).parent / "scripts" / "pytorch_mnist_like.py"
ARGS = ["--epochs", "2", "--log-interval", "2"]
NUMBER = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?")

# Installed as sitecustomize.py: `import torch`, `import torch.nn.functional as F`, `from torch.optim
# import ...` give the ember modules themselves (their own __spec__ kept).
SHIM = textwrap.dedent('''
    import importlib, importlib.abc, importlib.util, sys

    class TorchIsEmber(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname == "torch" or fullname.startswith("torch."):
                return importlib.util.spec_from_loader(fullname, self)
            return None

        def create_module(self, spec):
            module = importlib.import_module("ember" + spec.name[len("torch"):])
            self.original_spec = module.__spec__
            return module

        def exec_module(self, module):
            module.__spec__ = self.original_spec

    sys.meta_path.insert(0, TorchIsEmber())
''')


def _run(python_path, check_ember):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in python_path if p))
    code = "import runpy, sys; sys.argv = [sys.argv[1]] + sys.argv[2:]; "
    if check_ember:  # the shim really is in place: the script's torch is ember
        code += "import torch, ember; assert torch is ember and torch.nn.functional is ember.nn.functional; "
    code += "runpy.run_path(sys.argv[0], run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code, str(SCRIPT), *ARGS], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.fixture(scope="module")
def ember_lines(tmp_path_factory):
    shim = tmp_path_factory.mktemp("torch_is_ember")
    (shim / "sitecustomize.py").write_text(SHIM)
    return _run([str(shim), os.environ.get("PYTHONPATH", "")], check_ember=True)


def _numbers(line):
    return [float(x) for x in NUMBER.findall(line)]


def test_script_output_matches_torch(ember_lines):
    pytest.importorskip("torch")
    torch_lines = _run([os.environ.get("PYTHONPATH", "")], check_ember=False)
    assert len(ember_lines) == len(torch_lines), "\n".join(ember_lines)
    for number, (ours, theirs) in enumerate(zip(ember_lines, torch_lines), 1):
        # The one naming difference: ember's dtypes print as ember.float32 (PyTorch's as torch.float32).
        ours = ours.replace("ember.float32", "torch.float32")
        assert NUMBER.sub("#", ours) == NUMBER.sub("#", theirs), f"line {number}: {ours!r} != {theirs!r}"
        np.testing.assert_allclose(_numbers(ours), _numbers(theirs), rtol=1e-5, atol=1e-6,
                                   err_msg=f"line {number}: {ours!r} != {theirs!r}")


def test_script_runs_on_ember_and_learns(ember_lines):
    assert ember_lines[0] == "train: (256, 1, 12, 12) ember.float32 labels: [0, 3, 6, 9, 2, 5, 8, 1, 4, 7]"
    assert ember_lines[1:3] == ["Net(", "  (conv1): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1))"]
    assert "parameters: 9818" in ember_lines
    losses = [_numbers(line)[-1] for line in ember_lines if line.startswith("Train Epoch")]
    assert len(losses) == 8 and losses[-1] < losses[0] < 2.5
    accuracy = [line for line in ember_lines if line.startswith("Test set")]
    assert len(accuracy) == 2
    assert [line for line in ember_lines if line.startswith("lr:")] == ["lr: [0.034999999999999996]",
                                                                         "lr: [0.024499999999999997]"]
    assert "num_batches_tracked: 16" in ember_lines
