"""ember.save / ember.load in PyTorch's zip format: round trips of every dtype, shared storages,
views, state_dicts and containers, checked against NumPy values; files torch.save writes load in
ember and files ember writes load in torch.load(weights_only=True) (those parts skip without torch)."""
import io
import os
import pathlib
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _tensor(dtype_name, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 50
    if dtype_name == "bool":
        return ember.tensor(values > 0)
    return ember.tensor(values.tolist()).to(getattr(ember, dtype_name))


def _bytes(t):
    """The raw bytes of a tensor's elements (bfloat16 compared bit for bit, never through float)."""
    return bytes(memoryview(t.contiguous().untyped_storage()))[
        t.storage_offset() * t.element_size():(t.storage_offset() + t.numel()) * t.element_size()]


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_every_dtype_round_trips_bit_exact(dtype_name):
    t = _tensor(dtype_name)
    out = _roundtrip(t)
    assert out.dtype == t.dtype and out.shape == t.shape and not out.requires_grad
    assert _bytes(out) == _bytes(t)


def test_views_share_one_storage_saved_once(tmp_path):
    base = ember.arange(24.0).reshape(4, 6)
    obj = {"base": base, "row": base[1], "col": base[:, 2], "t": base.t(), "flat": base.view(-1)[5:9]}
    path = tmp_path / "views.pt"
    ember.save(obj, path)
    with zipfile.ZipFile(path) as z:
        data_records = [n for n in z.namelist() if "/data/" in n]
    assert data_records == ["views/data/0"]  # one storage, written once
    out = ember.load(path)
    storage = out["base"].untyped_storage()
    assert all(v.untyped_storage() is storage for v in out.values())
    assert out["col"].stride() == (6,) and out["col"].storage_offset() == 2
    assert not out["t"].is_contiguous()
    np.testing.assert_array_equal(out["t"].numpy(), np.arange(24.0).reshape(4, 6).T)
    np.testing.assert_array_equal(out["flat"].numpy(), [5.0, 6.0, 7.0, 8.0])
    out["base"][1, 2] = -1.0  # the views see a write through the base
    assert out["row"][2].item() == -1.0 and out["col"][1].item() == -1.0


def test_same_tensor_twice_loads_as_one_object():
    t = ember.ones(3)
    out = _roundtrip([t, t, {"again": t}])
    assert out[0] is out[1] is out[2]["again"]


def test_zip_layout_is_torchs(tmp_path):
    path = tmp_path / "model.v1.pt"
    ember.save({"w": ember.ones(5)}, path)
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        assert names == ["model.v1/data.pkl", "model.v1/.format_version", "model.v1/.storage_alignment",
                         "model.v1/byteorder", "model.v1/data/0", "model.v1/version",
                         "model.v1/.data/serialization_id"]
        assert z.testzip() is None  # CRCs are right
        assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
        assert z.read("model.v1/version") == b"3\n" and z.read("model.v1/.storage_alignment") == b"64"
        assert z.read("model.v1/byteorder") == b"little" and z.read("model.v1/.format_version") == b"1"
        assert len(z.read("model.v1/.data/serialization_id")) == 40
        raw = path.read_bytes()
        for info in infos:  # every record's data starts on a 64-byte boundary
            name_len, extra_len = np.frombuffer(raw[info.header_offset + 26:info.header_offset + 30], "<u2")
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0
    buf = io.BytesIO()
    ember.save(1, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


def test_pickle_names_torchs_globals():
    buf = io.BytesIO()
    ember.save({"x": ember.ones(2, dtype=ember.float16), "d": ember.int64}, buf)
    pkl = zipfile.ZipFile(buf).read("archive/data.pkl")
    assert b"ctorch._utils\n_rebuild_tensor_v2\n" in pkl and b"ctorch\nHalfStorage\n" in pkl
    assert b"ctorch\nint64\n" in pkl and b"ember" not in pkl
    assert pkl[:2] == b"\x80\x02"  # protocol 2, torch's default


def test_containers_and_python_values_round_trip():
    obj = {"list": [1, 2.5, "s", None, True], "tuple": (1, (2, 3)), "set": {1, 2}, "bytes": b"\x00\xff",
           "bytearray": bytearray(b"ab"), "complex": 1 + 2j, "big": 2 ** 70, "neg": -5, "nested": {"a": [{"b": 1}]},
           "dtype": ember.bfloat16, "device": ember.device("cpu"), "size": ember.Size([2, 3]),
           "od": OrderedDict([("z", 1), ("a", 2)]), "nan": float("inf")}
    out = _roundtrip(obj)
    assert out == obj
    assert type(out["od"]) is OrderedDict and list(out["od"]) == ["z", "a"]
    assert isinstance(out["size"], ember.Size) and out["dtype"] is ember.bfloat16


def test_requires_grad_and_non_leaf():
    leaf = ember.ones(3, requires_grad=True)
    out = _roundtrip({"leaf": leaf, "nonleaf": leaf * 2})
    assert out["leaf"].requires_grad and out["leaf"].is_leaf
    assert out["nonleaf"].requires_grad and out["nonleaf"].is_leaf  # saved as a leaf, as PyTorch's
    np.testing.assert_array_equal(out["nonleaf"].detach().numpy(), [2.0, 2.0, 2.0])


def test_parameter_and_tensor_attributes():
    p = ember.nn.Parameter(ember.arange(3.0))
    frozen = ember.nn.Parameter(ember.ones(2), requires_grad=False)
    tagged = ember.zeros(2)
    tagged.note = "hello"
    out = _roundtrip([p, frozen, tagged])
    assert type(out[0]) is ember.nn.Parameter and out[0].requires_grad
    assert type(out[1]) is ember.nn.Parameter and not out[1].requires_grad
    np.testing.assert_array_equal(out[0].detach().numpy(), [0.0, 1.0, 2.0])
    assert out[2].note == "hello"


def test_module_state_dict_and_optimizer_state_dict():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.BatchNorm1d(3), ember.nn.Linear(3, 2))
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    model(ember.randn(5, 4)).sum().backward()
    opt.step()
    sd, osd = model.state_dict(), opt.state_dict()
    out = _roundtrip({"model": sd, "opt": osd, "epoch": 3})
    assert type(out["model"]) is OrderedDict and list(out["model"]) == list(sd)
    assert out["model"]._metadata == sd._metadata  # module versions travel with the state_dict
    for k in sd:
        assert ember.equal(out["model"][k], sd[k]), k
    clone = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.BatchNorm1d(3), ember.nn.Linear(3, 2))
    clone.load_state_dict(out["model"])
    x = ember.randn(2, 4)
    model.eval(), clone.eval()
    assert ember.equal(model(x), clone(x))
    assert out["opt"]["param_groups"] == osd["param_groups"]
    for i, state in osd["state"].items():
        for k, v in state.items():
            assert ember.equal(out["opt"]["state"][i][k], v)
    opt2 = ember.optim.Adam(clone.parameters(), lr=0.01)
    opt2.load_state_dict(out["opt"])


def test_path_pathlike_and_file_objects(tmp_path):
    t = ember.arange(4)
    ember.save(t, str(tmp_path / "a.pt"))
    ember.save(t, pathlib.Path(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as f:
        ember.save(t, f)
    for name in "abc":
        assert ember.equal(ember.load(tmp_path / f"{name}.pt"), t)
        with open(tmp_path / f"{name}.pt", "rb") as f:
            assert ember.equal(ember.load(f), t)
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like object"):
        ember.save(t, 5)


def test_storage_with_two_dtypes_is_refused():
    x = ember.zeros(4)
    as_int = ember._C._tensor_from_storage(x.untyped_storage(), 0, (4,), (1,), ember.int32)  # x.view(int32)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        ember.save([x, as_int], io.BytesIO())


def test_bare_untyped_storage_round_trips():
    s = ember.arange(4, dtype=ember.uint8).untyped_storage()
    out = _roundtrip(s)
    assert type(out) is ember.UntypedStorage and bytes(memoryview(out)) == b"\x00\x01\x02\x03"


def test_empty_tensors_and_scalars():
    out = _roundtrip([ember.zeros(0), ember.zeros(2, 0, 3), ember.tensor(7.5)])
    assert out[0].shape == (0,) and out[1].shape == (2, 0, 3) and out[2].shape == () and out[2].item() == 7.5


def test_map_location_forms(tmp_path):
    path = tmp_path / "m.pt"
    ember.save({"a": ember.ones(2), "b": ember.arange(3)}, path)
    for loc in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, b"cpu"):
        out = ember.load(path, map_location=loc)
        assert out["a"].device.type == "cpu" and ember.equal(out["b"], ember.arange(3))
    seen = []

    def remap(storage, location):
        seen.append((type(storage).__name__, location))
        return storage
    out = ember.load(path, map_location=remap)
    assert seen == [("UntypedStorage", "cpu"), ("UntypedStorage", "cpu")] and ember.equal(out["a"], ember.ones(2))
    assert ember.equal(ember.load(path, map_location=lambda s, loc: None)["a"], ember.ones(2))


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_location_without_gpu(tmp_path):
    path = tmp_path / "m.pt"
    ember.save(ember.ones(2), path)
    with pytest.raises(RuntimeError, match=r"torch.cuda.is_available\(\) is False"):
        ember.load(path, map_location="cuda:0")
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location .* \(tagged with xla:0\)"):
        ember.load(path, map_location="xla:0")


def test_legacy_format_round_trip():
    t = {"a": ember.arange(5.0), "b": ember.arange(4)[1:], "p": ember.ones(2, dtype=ember.bfloat16)}
    buf = io.BytesIO()
    ember.save(t, buf, _use_new_zipfile_serialization=False)
    assert buf.getvalue()[:2] == b"\x80\x02" and not zipfile.is_zipfile(buf)
    for weights_only in (True, False):
        out = ember.load(io.BytesIO(buf.getvalue()), weights_only=weights_only)
        assert all(ember.equal(out[k], t[k]) for k in t)
        assert out["b"].storage_offset() == 1


def test_pickle_protocol_option():
    buf = io.BytesIO()
    ember.save({"x": ember.ones(2)}, buf, pickle_protocol=4)
    buf.seek(0)
    assert ember.equal(ember.load(buf, weights_only=False)["x"], ember.ones(2))


def test_safetensors_path_dispatch(tmp_path):
    pytest.importorskip("safetensors")
    from ember.utils.safetensors import save_file
    save_file({"w": ember.arange(3.0)}, tmp_path / "w.safetensors")
    assert ember.equal(ember.load(tmp_path / "w.safetensors")["w"], ember.arange(3.0))
    with pytest.raises(RuntimeError, match="dict map_location is not supported"):
        ember.load(tmp_path / "w.safetensors", map_location={"cpu": "cpu"})


def test_import_ember_stays_lazy():
    import subprocess
    import sys
    code = "import ember, sys; print('ember.serialization' in sys.modules, 'ember._zip_records' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ}).stdout.split()
    assert out == ["False", "False"]


# ------------------------------------------------------------------ torch interop
def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_torch_loads_ember_file_weights_only(dtype_name, tmp_path):
    torch = _torch()
    t = _tensor(dtype_name, (5, 3), seed=1)
    view = t.t()
    path = tmp_path / "e.pt"
    ember.save({"t": t, "view": view, "dtype": t.dtype}, path)
    out = torch.load(path, weights_only=True)
    assert out["dtype"] == getattr(torch, dtype_name)
    assert out["t"].dtype == getattr(torch, dtype_name) and tuple(out["t"].shape) == (5, 3)
    assert out["view"].untyped_storage().data_ptr() == out["t"].untyped_storage().data_ptr()
    assert out["t"].contiguous().view(torch.uint8).numpy().tobytes() == _bytes(t)
    assert not out["view"].is_contiguous()


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_ember_loads_torch_file(dtype_name, tmp_path):
    torch = _torch()
    g = torch.Generator().manual_seed(3)
    t = (torch.randn(4, 5, generator=g) * 40).to(getattr(torch, dtype_name))
    path = tmp_path / "t.pt"
    torch.save({"t": t, "view": t[1:, ::2]}, path)
    out = ember.load(path)
    assert out["t"].dtype == getattr(ember, dtype_name)
    assert _bytes(out["t"]) == t.contiguous().view(torch.uint8).numpy().tobytes()
    assert out["view"].untyped_storage() is out["t"].untyped_storage()
    assert out["view"].stride() == (5, 2) and out["view"].storage_offset() == 5


def test_state_dicts_cross_both_ways(tmp_path):
    torch = _torch()
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9)
    tmodel(torch.randn(6, 4)).sum().backward()
    topt.step()
    torch.save({"model": tmodel.state_dict(), "opt": topt.state_dict(),
                "param": torch.nn.Parameter(torch.ones(2))}, tmp_path / "t.pt")
    loaded = ember.load(tmp_path / "t.pt")
    emodel = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.BatchNorm1d(3), ember.nn.Linear(3, 2))
    emodel.load_state_dict(loaded["model"])
    assert loaded["model"]._metadata == tmodel.state_dict()._metadata
    assert type(loaded["param"]) is ember.nn.Parameter
    eopt = ember.optim.SGD(emodel.parameters(), lr=0.1, momentum=0.9)
    eopt.load_state_dict(loaded["opt"])
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    tmodel.eval(), emodel.eval()
    np.testing.assert_allclose(emodel(ember.tensor(x)).detach().numpy(),
                               tmodel(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    # ...and back: ember's save of the same state loads in torch with weights_only=True.
    ember.save({"model": emodel.state_dict(), "opt": eopt.state_dict(),
                "param": ember.nn.Parameter(ember.ones(2))}, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt", weights_only=True)
    tmodel2 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    tmodel2.load_state_dict(back["model"])
    topt2 = torch.optim.SGD(tmodel2.parameters(), lr=0.1, momentum=0.9)
    topt2.load_state_dict(back["opt"])
    assert isinstance(back["param"], torch.nn.Parameter)
    for k, v in tmodel.state_dict().items():
        assert torch.equal(tmodel2.state_dict()[k], v), k
    assert torch.equal(topt2.state_dict()["state"][0]["momentum_buffer"],
                       topt.state_dict()["state"][0]["momentum_buffer"])


def test_torch_legacy_file_loads(tmp_path):
    torch = _torch()
    torch.save({"a": torch.arange(5.0), "b": torch.tensor([1, 2], dtype=torch.int16)}, tmp_path / "old.pt",
               _use_new_zipfile_serialization=False)
    out = ember.load(tmp_path / "old.pt")
    np.testing.assert_array_equal(out["a"].numpy(), np.arange(5.0))
    assert out["b"].dtype == ember.int16 and out["b"].tolist() == [1, 2]
    buf = io.BytesIO()
    ember.save({"a": ember.arange(3.0)}, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert torch.load(buf)["a"].tolist() == [0.0, 1.0, 2.0]


def test_tensor_attributes_and_requires_grad_reach_torch(tmp_path):
    torch = _torch()
    t = ember.ones(2, requires_grad=True)
    tagged = ember.zeros(2)
    tagged.note = 3
    ember.save([t, tagged], tmp_path / "e.pt")
    out = torch.load(tmp_path / "e.pt", weights_only=True)
    assert out[0].requires_grad and out[1].note == 3


def test_bytes_identical_to_torch_save(tmp_path):
    torch = _torch()
    (tmp_path / "e").mkdir()
    (tmp_path / "t").mkdir()
    ember.save(OrderedDict(a=ember.arange(5.0), b=ember.ones(3, dtype=ember.bfloat16), c=[ember.float16, {1, 2}]),
               tmp_path / "e" / "m.pt")
    torch.save(OrderedDict(a=torch.arange(5.0), b=torch.ones(3, dtype=torch.bfloat16), c=[torch.float16, {1, 2}]),
               tmp_path / "t" / "m.pt")
    e, t = (zipfile.ZipFile(tmp_path / d / "m.pt") for d in "et")
    for name in e.namelist():
        if not name.endswith("serialization_id"):  # an opaque id (a hash in torch, of its own making)
            assert e.read(name) == t.read(name), name
    assert [i.header_offset for i in e.infolist()] == [i.header_offset for i in t.infolist()]


def test_pickle_of_whole_module_weights_only_false(tmp_path):
    model = ember.nn.Linear(3, 2)
    ember.save(model, tmp_path / "m.pt")
    out = ember.load(tmp_path / "m.pt", weights_only=False)
    assert type(out) is ember.nn.Linear and ember.equal(out.weight, model.weight)
    assert pickle.loads(pickle.dumps(out.weight)).shape == (2, 3)


def test_zip64_fields_past_the_limit(monkeypatch, tmp_path):
    # Files past 4 GiB put sizes and offsets in zip64 fields; a lowered limit exercises that path on small files.
    from ember import _zip_records
    monkeypatch.setattr(_zip_records, "ZIP64_LIMIT", 300)
    obj = {"a": ember.arange(100.0), "b": ember.arange(7, dtype=ember.int16), "c": ember.ones(3, dtype=ember.bool)}
    path = tmp_path / "z64.pt"
    ember.save(obj, path)
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        assert z.getinfo("z64/data/0").file_size == 400 and z.getinfo("z64/version").header_offset > 300
    out = ember.load(path)
    assert all(ember.equal(out[k], obj[k]) for k in obj)
    assert ember.equal(ember.load(path, mmap=True)["a"], obj["a"])
    torch = pytest.importorskip("torch")
    back = torch.load(path, weights_only=True)
    assert back["a"].tolist() == list(np.arange(100.0)) and back["b"].dtype == torch.int16


def test_big_endian_file_is_swapped(tmp_path):
    from ember._zip_records import ZipRecordWriter
    from ember._serialization_save import _pickler_class
    values = np.array([1.5, -2.0, 3.25], dtype=">f4")  # as a big-endian machine writes them
    storages, pkl = {}, io.BytesIO()
    _pickler_class(pickle)(pkl, 2, storages).dump({"x": ember.zeros(3)})
    with open(tmp_path / "be.pt", "wb") as f:
        writer = ZipRecordWriter(f, "be")
        writer.write_record("data.pkl", pkl.getvalue())
        writer.write_record("byteorder", "big")
        writer.write_record("data/0", values.tobytes())
        writer.write_record("version", "3\n")
        writer.finish()
    assert ember.load(tmp_path / "be.pt")["x"].tolist() == [1.5, -2.0, 3.25]


def test_torch_whole_module_loads_as_ember_module(tmp_path):
    torch = _torch()
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    torch.save(tmodel, tmp_path / "whole.pt")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.container.Sequential"):
        ember.load(tmp_path / "whole.pt")
    emodel = ember.load(tmp_path / "whole.pt", weights_only=False)  # torch.nn.X is looked up as ember.nn.X
    assert type(emodel) is ember.nn.Sequential and type(emodel[0]) is ember.nn.Linear
    x = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    np.testing.assert_allclose(emodel(ember.tensor(x)).detach().numpy(), tmodel(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6)
    with ember.serialization.safe_globals([ember.nn.Sequential, ember.nn.Linear, ember.nn.ReLU]):
        assert ember.equal(ember.load(tmp_path / "whole.pt")[0].bias, emodel[0].bias)  # torch.X allowlisted as X


def test_saving_over_a_larger_or_smaller_file(tmp_path):
    path = tmp_path / "over.pt"
    path.write_bytes(b"\xab" * 100_000)  # an old, longer file: nothing of it may remain
    ember.save({"a": ember.arange(3.0)}, path)
    assert zipfile.ZipFile(path).testzip() is None and path.stat().st_size < 100_000
    assert ember.equal(ember.load(path)["a"], ember.arange(3.0))
    ember.save({"a": ember.arange(30000.0)}, path)
    assert ember.equal(ember.load(path)["a"], ember.arange(30000.0))
    ember.save({"b": ember.ones(2)}, path, _use_new_zipfile_serialization=False)
    assert ember.equal(ember.load(path)["b"], ember.ones(2))
    with pytest.raises(pickle.PicklingError):
        ember.save({"f": lambda: 1}, path)  # fails while pickling, before the file is touched
    assert ember.equal(ember.load(path)["b"], ember.ones(2))


def test_torch_dtype_ember_lacks_fails_clearly(tmp_path):
    torch = _torch()
    torch.save({"z": torch.ones(2, dtype=torch.complex64)}, tmp_path / "c.pt")
    with pytest.raises(RuntimeError, match="holds a tensor of torch.ComplexFloatStorage, a type ember does not"):
        ember.load(tmp_path / "c.pt")
    torch.save({"dtype": torch.complex64, "w": torch.ones(1)}, tmp_path / "d.pt")
    out = ember.load(tmp_path / "d.pt")  # a foreign dtype as a value loads as a marker; tensors load
    assert ember.equal(out["w"], ember.ones(1))


def test_gpu_checkpoint_maps_to_cpu(tmp_path):
    # A checkpoint saved from CUDA tensors names 'cuda:0' as each storage's location.
    buf = io.BytesIO()
    ember.save({"w": ember.arange(4.0), "b": ember.ones(2)}, buf)
    src = zipfile.ZipFile(buf)
    path = tmp_path / "gpu.pt"
    with zipfile.ZipFile(path, "w") as z:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            z.writestr(name, data)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="please use torch.load with map_location=torch.device\\('cpu'\\)"):
            ember.load(path)
    seen = []
    for loc in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda s, where: seen.append(where) or s):
        out = ember.load(path, map_location=loc)
        assert out["w"].device.type == "cpu" and out["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert seen == ["cuda:0", "cuda:0"]
