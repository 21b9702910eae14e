"""The examples a new user runs (examples/), each in a short version: they must train
(the loss falls, the accuracy rises well above chance) and write what they promise."""
import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from child_process import child_env

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_digits_learns_and_saves_its_plot(tmp_path, capsys):
    pytest.importorskip("sklearn")
    plot = tmp_path / "digits.png"
    accuracy = load_example("digits").main(["--epochs", "4", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert "DigitsCNN(\n  (conv1): Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))" in out
    assert accuracy > 0.85, out  # 10 classes: chance is 0.1; 30 epochs reach about 0.98
    assert "test accuracy" in out
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("model", ["lstm", "gpt"])
def test_char_lm_learns_to_spell(model, capsys):
    pytest.importorskip("english_words")
    loss = load_example("char_lm").main(["--model", model, "--steps", "60", "--report-every", "30",
                                         "--batch-size", "16", "--block-size", "16"])
    out = capsys.readouterr().out
    vocab_size = int(out.split("vocabulary of ")[1].split()[0])
    assert vocab_size == 27  # the boundary and a-z
    assert loss < math.log(vocab_size) - 0.4, out  # below what uniform guessing scores
    assert out.count("samples: ") == 2


def test_hogwild_trains_one_shared_model_from_two_processes():
    pytest.importorskip("sklearn")
    out = subprocess.run([sys.executable, str(EXAMPLES / "hogwild.py"), "--epochs", "3", "--log-interval", "20"],
                         capture_output=True, text=True, timeout=600, env=child_env())
    assert out.returncode == 0, out.stderr
    assert "parameters in shared memory: True" in out.stdout
    workers = {line.split("\t")[0] for line in out.stdout.splitlines() if "\tTrain Epoch: 3 " in line}
    assert len(workers) == 2 and str(os.getpid()) not in workers  # both processes trained
    correct, total = map(int, re.search(r"Accuracy: (\d+)/(\d+)", out.stdout).groups())
    # The parent never trained: what it scores, the workers wrote into its shared weights. Chance is 0.1.
    assert total == 450 and correct / total > 0.7, out.stdout
