"""ember.utils.safetensors: safetensors.torch's API for ember tensors. Every dtype round trips bit for
bit (bfloat16 never through float32), shared tensors are refused by save_file and deduplicated by
save_model, and files cross to and from safetensors.torch (that part skips without torch)."""
import io
import json
import struct

import numpy as np
import pytest

import ember

st = pytest.importorskip("safetensors")
from ember.utils import safetensors as est  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
         "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64"}


def _tensor(dtype_name, shape=(3, 5), seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 30
    if dtype_name == "bool":
        return ember.tensor(values > 0)
    return ember.tensor(values.tolist()).to(getattr(ember, dtype_name))


def _bytes(t):
    return bytes(memoryview(t.contiguous().untyped_storage()))


def _header(raw):
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), 8 + n


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_every_dtype_bit_exact_and_header(dtype_name, tmp_path):
    t = _tensor(dtype_name)
    est.save_file({"t": t}, tmp_path / "t.safetensors")
    raw = (tmp_path / "t.safetensors").read_bytes()
    header, start = _header(raw)
    assert header["t"] == {"dtype": CODES[dtype_name], "shape": [3, 5], "data_offsets": [0, 15 * t.element_size()]}
    assert raw[start:] == _bytes(t)  # the raw little-endian bytes, unchanged
    out = est.load_file(tmp_path / "t.safetensors")["t"]
    assert out.dtype == t.dtype and out.shape == t.shape and _bytes(out) == _bytes(t)


def test_bfloat16_keeps_every_bit_pattern():
    patterns = np.arange(0, 65536, 7, dtype=np.uint16)  # includes NaN payloads and subnormals
    t = ember.from_numpy(patterns.astype(np.int16)).to(ember.int16)
    bf = ember._C._tensor_from_storage(t.untyped_storage(), 0, (len(patterns),), (1,), ember.bfloat16)
    out = est.load(est.save({"bf": bf}))["bf"]
    assert _bytes(out) == patterns.tobytes()


def test_bytes_api_metadata_and_many_tensors():
    tensors = {"b": ember.arange(6.0).reshape(2, 3), "a": ember.tensor([1, 2, 3]), "s": ember.tensor(2.5),
               "e": ember.zeros(0, 4)}
    data = est.save(tensors, metadata={"format": "pt", "k": "v"})
    assert isinstance(data, bytes)
    header, _ = _header(data)
    assert header["__metadata__"] == {"format": "pt", "k": "v"}
    out = est.load(data)
    assert sorted(out) == ["a", "b", "e", "s"]
    for k, v in tensors.items():
        assert ember.equal(out[k], v) and out[k].shape == v.shape


def test_safe_open_keys_metadata_slices(tmp_path):
    emb = ember.arange(40.0).reshape(10, 4)
    path = tmp_path / "m.safetensors"
    est.save_file({"emb": emb, "bias": ember.ones(3, dtype=ember.bfloat16)}, path, metadata={"who": "me"})
    for framework in ("ember", "pt"):
        with est.safe_open(path, framework=framework, device="cpu") as f:
            assert f.keys() == ["bias", "emb"] and f.metadata() == {"who": "me"}
            assert ember.equal(f.get_tensor("emb"), emb)
            s = f.get_slice("emb")
            assert s.get_shape() == [10, 4] and s.get_dtype() == "F32"
            np.testing.assert_array_equal(s[2:5].numpy(), emb[2:5].numpy())
            np.testing.assert_array_equal(s[1:9:3, 1:3].numpy(), emb[1:9:3, 1:3].numpy())
            np.testing.assert_array_equal(s[7].numpy(), emb[7].numpy())
            np.testing.assert_array_equal(s[:, 2].numpy(), emb[:, 2].numpy())
            with pytest.raises(st.SafetensorError, match="does not contain tensor nope"):
                f.get_tensor("nope")
    with pytest.raises(ValueError, match="framework 'tf' is invalid"):
        est.safe_open(path, framework="tf")


def test_save_file_refuses_shared_and_non_contiguous(tmp_path):
    w = ember.ones(4, 4)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        est.save_file({"a": w, "b": w}, tmp_path / "x.safetensors")
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        est.save_file({"a": w, "b": w[1]}, tmp_path / "x.safetensors")
    est.save_file({"a": w[0].contiguous(), "b": w[1:].contiguous()}, tmp_path / "x.safetensors")
    base = ember.arange(8.0)
    est.save_file({"lo": base[:4], "hi": base[4:]}, tmp_path / "y.safetensors")  # disjoint parts of one storage
    assert ember.equal(est.load_file(tmp_path / "y.safetensors")["hi"], base[4:])
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        est.save_file({"t": w.t()[:, :2]}, tmp_path / "z.safetensors")
    with pytest.raises(ValueError, match="Key `n` is invalid, expected torch.Tensor"):
        est.save({"n": 1})
    with pytest.raises(ValueError, match="Expected a dict of"):
        est.save([w])


class _Tied(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = ember.nn.Embedding(5, 3)
        self.head = ember.nn.Linear(3, 5, bias=False)
        self.head.weight = self.emb.weight  # tied


def test_save_model_dedups_tied_weights_and_load_model(tmp_path):
    ember.manual_seed(0)
    model = _Tied()
    path = tmp_path / "tied.safetensors"
    with pytest.raises(RuntimeError, match="share memory"):
        est.save_file(model.state_dict(), path)
    est.save_model(model, path)
    with est.safe_open(path, "ember") as f:
        assert f.keys() == ["emb.weight"] and f.metadata() == {"head.weight": "emb.weight"}
    other = _Tied()
    missing, unexpected = est.load_model(other, path)
    assert not missing and not unexpected
    assert ember.equal(other.emb.weight, model.emb.weight) and other.head.weight is other.emb.weight
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "weight"'):
        est.load_model(ember.nn.Linear(3, 5, bias=False), path)
    missing, unexpected = est.load_model(ember.nn.Linear(3, 5, bias=False), path, strict=False)
    assert missing == {"weight"} and "emb.weight" in unexpected


def test_state_dict_round_trip_into_fresh_module(tmp_path):
    ember.manual_seed(1)
    model = ember.nn.Sequential(ember.nn.Conv2d(2, 4, 3), ember.nn.BatchNorm2d(4), ember.nn.Flatten(),
                                ember.nn.Linear(4 * 4 * 4, 3))
    model(ember.randn(2, 2, 6, 6))  # moves the BatchNorm running stats
    est.save_file(model.state_dict(), tmp_path / "m.safetensors")
    fresh = ember.nn.Sequential(ember.nn.Conv2d(2, 4, 3), ember.nn.BatchNorm2d(4), ember.nn.Flatten(),
                                ember.nn.Linear(4 * 4 * 4, 3))
    fresh.load_state_dict(est.load_file(tmp_path / "m.safetensors"))
    model.eval(), fresh.eval()
    x = ember.randn(3, 2, 6, 6)
    assert ember.equal(model(x), fresh(x))
    assert fresh[1].num_batches_tracked.item() == 1 and fresh[1].num_batches_tracked.dtype == ember.int64


def test_damaged_files_raise_safetensor_error(tmp_path):
    data = est.save({"a": ember.arange(10.0)})
    path = tmp_path / "bad.safetensors"
    for bad in (data[:5], data[:-4], b"\xff" * 8 + data[8:], data[:8] + b"[" + data[9:]):
        path.write_bytes(bad)
        with pytest.raises(st.SafetensorError):
            est.load_file(path)
        with pytest.raises(st.SafetensorError):
            est.load(bad)


def test_missing_package_names_it(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_safetensors(name, *args, **kwargs):
        if name == "safetensors":
            raise ImportError("No module named 'safetensors'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_safetensors)
    with pytest.raises(ImportError, match="needs the `safetensors` package: pip install safetensors"):
        est.save({"a": ember.ones(1)})


# ------------------------------------------------------------------ safetensors.torch interop
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_cross_with_safetensors_torch(dtype_name, tmp_path):
    torch = pytest.importorskip("torch")
    import safetensors.torch as stt
    t = _tensor(dtype_name, (4, 3), seed=2)
    est.save_file({"t": t}, tmp_path / "e.safetensors", metadata={"m": "1"})
    from_ember = stt.load_file(tmp_path / "e.safetensors")["t"]
    assert from_ember.dtype == getattr(torch, dtype_name)
    assert from_ember.contiguous().view(torch.uint8).numpy().tobytes() == _bytes(t)
    g = torch.Generator().manual_seed(4)
    tt = (torch.randn(3, 6, generator=g) * 20).to(getattr(torch, dtype_name))
    stt.save_file({"t": tt, "u": tt[1:].clone()}, tmp_path / "t.safetensors")
    out = est.load_file(tmp_path / "t.safetensors")
    assert _bytes(out["t"]) == tt.view(torch.uint8).numpy().tobytes()
    assert est.load(stt.save({"t": tt}))["t"].shape == (3, 6)
    assert stt.load(est.save({"t": t}))["t"].shape == (4, 3)


def test_torch_model_to_ember_model_via_safetensors(tmp_path):
    torch = pytest.importorskip("torch")
    import safetensors.torch as stt
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    stt.save_model(tmodel, tmp_path / "t.safetensors")
    emodel = ember.nn.Sequential(ember.nn.Linear(5, 4), ember.nn.Tanh(), ember.nn.Linear(4, 2))
    est.load_model(emodel, tmp_path / "t.safetensors")
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(emodel(ember.tensor(x)).detach().numpy(), tmodel(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    est.save_model(emodel, tmp_path / "e.safetensors")
    tmodel2 = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    stt.load_model(tmodel2, tmp_path / "e.safetensors")
    assert torch.equal(tmodel2[0].weight, tmodel[0].weight)


def test_torch_load_reads_safetensors_path(tmp_path):
    est.save_file({"w": ember.arange(3.0)}, tmp_path / "w.safetensors")
    assert ember.equal(ember.load(str(tmp_path / "w.safetensors"))["w"], ember.arange(3.0))
    assert isinstance(io.BytesIO(est.save({"w": ember.ones(1)})).getvalue(), bytes)
