"""ember.load is safe by default, as torch.load since 2.6: weights_only=True refuses any global
outside its allowlist (and runs nothing), add_safe_globals/safe_globals extend it, the
TORCH_FORCE_*_WEIGHTS_ONLY_LOAD variables override as in PyTorch, and damaged files (bad names,
truncation, random byte flips) raise a clear exception instead of crashing."""
import io
import os
import pickle
import random
import warnings
import zipfile

import pytest

import ember
from ember import serialization


class _RunsShell:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


@pytest.fixture(autouse=True)
def _no_leftover_safe_globals(monkeypatch):
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def _saved(obj):
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


def test_os_system_pickle_is_refused_and_nothing_runs(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    data = _saved({"w": ember.ones(2), "evil": _RunsShell(marker)})
    assert b"cposix\nsystem\n" in zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl")
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(io.BytesIO(data))
    msg = str(info.value)
    assert msg.startswith("Weights only load failed.") and "weights_only" in msg
    assert "Trying to load unsupported GLOBAL posix.system whose module posix is blocked." in msg
    # blocked even when the user allowlists it, and under the force-weights-only variable
    with serialization.safe_globals([os.system]):
        with pytest.raises(pickle.UnpicklingError, match="whose module posix is blocked"):
            ember.load(io.BytesIO(data))
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError, match="posix is blocked"):
        ember.load(io.BytesIO(data), weights_only=False)
    assert not marker.exists()


def test_unknown_global_names_it_with_torchs_hint():
    data = _saved([Point(1, 2)])
    with pytest.raises(pickle.UnpicklingError) as info:
        ember.load(io.BytesIO(data))
    full = f"{__name__}.Point"
    msg = str(info.value)
    assert f"Unsupported global: GLOBAL {full} was not an allowed global by default." in msg
    assert f"Please use `torch.serialization.add_safe_globals([{full}])` or the " in msg
    assert "(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument" in msg
    builtin = _saved([eval])
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL eval was not an allowed global"):
        ember.load(io.BytesIO(builtin))


def test_add_safe_globals_and_context_manager():
    data = _saved({"p": Point(3, 4), "t": ember.arange(3)})
    serialization.add_safe_globals([Point])
    assert serialization.get_safe_globals() == [Point]
    out = ember.load(io.BytesIO(data))
    assert type(out["p"]) is Point and (out["p"].x, out["p"].y) == (3, 4)
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    with serialization.safe_globals([(Point, f"{__name__}.Point")]):
        assert ember.load(io.BytesIO(data))["p"].y == 4
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        ember.load(io.BytesIO(data))
    assert serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == [f"{__name__}.Point"]


def test_weights_only_false_loads_arbitrary_objects():
    model = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.ReLU())
    data = _saved({"model": model, "p": Point(5, 6)})
    out = ember.load(io.BytesIO(data), weights_only=False)
    assert type(out["model"][0]) is ember.nn.Linear and out["p"].x == 5
    assert ember.equal(out["model"][0].weight, model[0].weight)


def test_environment_overrides(monkeypatch):
    data = _saved(Point(1, 2))
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
        assert ember.load(io.BytesIO(data)).y == 2
    with pytest.raises(pickle.UnpicklingError):  # an explicit weights_only=True wins over it
        ember.load(io.BytesIO(data), weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(RuntimeError, match="Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD`"):
        ember.load(io.BytesIO(data))
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    with pytest.raises(pickle.UnpicklingError):
        ember.load(io.BytesIO(data), weights_only=False)


def test_pickle_module_with_weights_only_is_refused():
    data = _saved(ember.ones(1))
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        ember.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    assert ember.equal(ember.load(io.BytesIO(data), pickle_module=pickle), ember.ones(1))  # implies False


def _zip_with(records):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, payload in records:
            z.writestr(name, payload)
    return buf.getvalue()


def test_entry_with_parent_component_is_refused():
    good = zipfile.ZipFile(io.BytesIO(_saved(ember.ones(2))))
    records = [(n, good.read(n)) for n in good.namelist()] + [("archive/../../etc/evil", b"x")]
    with pytest.raises(RuntimeError, match=r"unsafe record name 'archive/../../etc/evil'"):
        ember.load(io.BytesIO(_zip_with(records)))


def test_storage_key_outside_data_is_not_found():
    good = _saved(ember.ones(2))
    z = zipfile.ZipFile(io.BytesIO(good))
    pkl = z.read("archive/data.pkl").replace(b"X\x01\x00\x00\x000", b"X\x04\x00\x00\x00../0")
    records = [(n, pkl if n.endswith("data.pkl") else z.read(n)) for n in z.namelist()]
    with pytest.raises(RuntimeError, match="data/../0: file not found"):
        ember.load(io.BytesIO(_zip_with(records)))


def test_truncated_files_raise_clear_errors():
    data = _saved({"w": ember.arange(1000.0)})
    for cut in (0, 1, 10, 100, 300, len(data) // 2, len(data) - 30, len(data) - 1):
        with pytest.raises((RuntimeError, pickle.UnpicklingError, EOFError)):
            ember.load(io.BytesIO(data[:cut]))
    with pytest.raises(RuntimeError, match="failed finding central directory"):
        ember.load(io.BytesIO(data[:len(data) // 2]))


def test_damaged_data_pkl_and_sizes():
    data = _saved({"w": ember.arange(10.0)})
    z = zipfile.ZipFile(io.BytesIO(data))
    pkl = z.read("archive/data.pkl")
    for bad_pkl, pattern in [(pkl[:40], "truncated"), (b"\x80\x02]K\x01K\x02s.", "Can only SETITEM for dict"),
                             (b"\x80\x02}q\x00(K\x01e.", "extend lists"),
                             (pkl.replace(b"K\n", b"K\x0b", 1), "record has 40 bytes, its pickle expects 44")]:
        records = [(n, bad_pkl if n.endswith("data.pkl") else z.read(n)) for n in z.namelist()]
        with pytest.raises((pickle.UnpicklingError, RuntimeError, EOFError), match=pattern):
            ember.load(io.BytesIO(_zip_with(records)))


def test_not_a_checkpoint():
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(io.BytesIO(b"hello world, not a checkpoint"))
    with pytest.raises(EOFError):
        ember.load(io.BytesIO(b""))
    with pytest.raises(FileNotFoundError):
        ember.load("/nonexistent/dir/x.pt")


def test_random_damage_never_crashes(long_mode):
    model = ember.nn.Linear(4, 3)
    data = _saved({"sd": model.state_dict(), "misc": [1, 2.5, "a", {3}, b"b"], "v": ember.arange(6).reshape(2, 3).t()})
    rng = random.Random(1234)
    outcomes = {}
    for _ in range(2000 if long_mode else 400):
        damaged = bytearray(data)
        kind = rng.random()
        if kind < 0.6:
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        elif kind < 0.8:
            damaged = damaged[:rng.randrange(len(damaged))]
        else:
            at = rng.randrange(len(damaged))
            damaged[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a flipped protocol byte warns, as in torch
                ember.load(io.BytesIO(bytes(damaged)))
            outcome = "loaded"
        except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError) as e:
            outcome = type(e).__name__
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("RuntimeError", 0) > 0 and outcomes.get("UnpicklingError", 0) > 0


def test_damaged_pickles_raise_unpickling_or_runtime_errors(long_mode):
    # Flips aimed at data.pkl (and anywhere in a legacy-format file) reach the unpickler itself.
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.BatchNorm1d(3))
    opt = ember.optim.Adam(model.parameters())
    model(ember.randn(2, 4)).sum().backward()
    opt.step()
    obj = {"sd": model.state_dict(), "opt": opt.state_dict(), "misc": [1, 2.5, "a", {3}, b"zz", (1, 2)]}
    zipped = _saved(obj)
    legacy = io.BytesIO()
    ember.save(obj, legacy, _use_new_zipfile_serialization=False)
    pkl_size = zipfile.ZipFile(io.BytesIO(zipped)).getinfo("archive/data.pkl").file_size
    rng = random.Random(7)
    failures = {}
    for i in range(1000 if long_mode else 300):
        damaged = bytearray(legacy.getvalue() if i % 2 else zipped)
        lo, hi = (0, len(damaged)) if i % 2 else (64, 64 + pkl_size)  # data.pkl's bytes start at 64
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(lo, hi)] = rng.randrange(256)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ember.load(io.BytesIO(bytes(damaged)))
        except (RuntimeError, pickle.UnpicklingError, EOFError, ValueError) as e:
            failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
    assert failures.get("UnpicklingError", 0) > 100
