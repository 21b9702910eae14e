"""Issue 12: real PyTorch scripts run unchanged on ember. Each of tests/scripts/pytorch_*.py (plain
`import torch`) runs in a subprocess where a sitecustomize makes every `torch[.x]` import resolve to
`ember[.x]`; its printed lines equal the real torch run's (numbers to 5 significant digits, or one unit
of the last printed digit). Without torch: the ember run's lines against the expected values and a
falling loss."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPTS = {"pytorch_mnist_like.py": ["--epochs", "2", "--log-interval", "2"], "pytorch_char_gpt.py": []}
NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?")

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


def _run(script, python_path, check_ember):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in python_path if p))
    code = "import runpy, sys; sys.argv = [sys.argv[1]] + sys.argv[2:]; "
    if check_ember:  # the shim really is in place: the script's torch is ember
        code += "import torch, ember; assert torch is ember and torch.nn.functional is ember.nn.functional; "
    code += "runpy.run_path(sys.argv[0], run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent / "scripts" / script), *SCRIPTS[script]], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


_ember_runs = {}


def _ember_lines(script, tmp_path_factory):
    if script not in _ember_runs:
        shim = tmp_path_factory.mktemp("torch_is_ember")
        (shim / "sitecustomize.py").write_text(SHIM)
        _ember_runs[script] = _run(script, [str(shim), os.environ.get("PYTHONPATH", "")], check_ember=True)
    return _ember_runs[script]


def _numbers(line):
    return [float(x) for x in NUMBER.findall(line)]


def _last_digit(text):
    """One unit of the last printed digit of a decimal ("0.8646" -> 1e-4; an integer must be equal)."""
    return 10.0 ** -len(text.split(".")[1]) if "." in text and "e" not in text else 0.0


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_output_matches_torch(script, tmp_path_factory):
    pytest.importorskip("torch")
    ember_lines = _ember_lines(script, tmp_path_factory)
    torch_lines = _run(script, [os.environ.get("PYTHONPATH", "")], check_ember=False)
    assert len(ember_lines) == len(torch_lines), "\n".join(ember_lines)
    for number, (ours, theirs) in enumerate(zip(ember_lines, torch_lines), 1):
        # The one naming difference: ember's dtypes print as ember.float32 (PyTorch's as torch.float32).
        ours = ours.replace("ember.float32", "torch.float32")
        where = f"{script} line {number}: {ours!r} != {theirs!r}"
        assert NUMBER.sub("#", ours) == NUMBER.sub("#", theirs), where
        for a, b in zip(NUMBER.findall(ours), NUMBER.findall(theirs)):
            assert abs(float(a) - float(b)) <= 1e-5 * abs(float(b)) + 1.01 * _last_digit(b), where


def test_mnist_like_script_runs_on_ember_and_learns(tmp_path_factory):
    ember_lines = _ember_lines("pytorch_mnist_like.py", tmp_path_factory)
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


def test_char_gpt_script_runs_on_ember_and_learns(tmp_path_factory):
    lines = _ember_lines("pytorch_char_gpt.py", tmp_path_factory)
    assert lines[0] == "vocab 28, 258 characters"
    # 10 weight matrices (the tied embedding counted once) of 28*24 + 16*24 + 2 * (24*72 + 24*24 + 24*96 + 96*24)
    assert "num decayed parameter tensors: 10, with 14,880 parameters" in lines
    assert "num non-decayed parameter tensors: 18, with 672 parameters" in lines
    steps = [line for line in lines if line.startswith("step ")]
    losses = [float(re.search(r"loss (\S+),", line).group(1)) for line in steps]
    assert len(steps) == 5 and losses[0] > 3.0 and losses[-1] < 0.6 * losses[0]
    assert steps[-1].endswith("lr 0.001000") and lines[-1].startswith("sample: 'the ")
