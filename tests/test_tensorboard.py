"""ember.utils.tensorboard.SummaryWriter: the event files it writes are read back (TFRecord framing
with its CRCs checked, then tensorboardX's Event protos) and their values compared with the data."""
import glob
import importlib
import io
import os
import struct
import sys

import numpy as np
import pytest

import ember

tensorboardX = pytest.importorskip("tensorboardX")
from tensorboardX.record_writer import masked_crc32c  # noqa: E402
from tensorboardX.proto.event_pb2 import Event  # noqa: E402
from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def read_events(log_dir):
    """Every Event of the event files directly in `log_dir`, in file order."""
    events = []
    for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))):
        data = open(path, "rb").read()
        pos = 0
        while pos < len(data):
            header = data[pos:pos + 8]
            (length,) = struct.unpack("<Q", header)
            assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == masked_crc32c(header)
            record = data[pos + 12:pos + 12 + length]
            assert struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])[0] == masked_crc32c(record)
            events.append(Event.FromString(record))
            pos += 16 + length
    return events


def values(log_dir, tag):
    """(step, Summary.Value) of every value logged under `tag`."""
    return [(e.step, v) for e in read_events(log_dir) if e.HasField("summary") for v in e.summary.value
            if v.tag == tag]


def decode_png(value):
    from PIL import Image
    image = value.image
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    assert pixels.shape[:2] == (image.height, image.width)
    return pixels


def test_scalars_from_tensors_numbers_and_arrays(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("loss", ember.tensor(1.5), 0)
        w.add_scalar("loss", 2.25, 1, walltime=1234.5)
        w.add_scalar("loss", np.float32(0.5), 2)
        w.add_scalar("loss", ember.tensor([[4.0]], requires_grad=True) * 2, 3)
        w.add_scalar("bf16", ember.tensor(3.0, dtype=ember.bfloat16), 0)
    logged = values(str(tmp_path), "loss")
    assert [(s, v.simple_value) for s, v in logged] == [(0, 1.5), (1, 2.25), (2, 0.5), (3, 8.0)]
    assert [e.wall_time for e in read_events(str(tmp_path)) if e.step == 1] == [1234.5]
    assert values(str(tmp_path), "bf16")[0][1].simple_value == 3.0
    assert read_events(str(tmp_path))[0].file_version == "brain.Event:2"


def test_new_style_scalars(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("f", ember.tensor(0.1), 5, new_style=True)
        w.add_scalar("d", 0.1, 6, new_style=True, double_precision=True)
        with pytest.raises(AssertionError, match="Tensor should contain one element"):
            w.add_scalar("bad", ember.ones(2), 0)
    (step, f), = values(str(tmp_path), "f")
    assert step == 5 and f.metadata.plugin_data.plugin_name == "scalars"
    assert f.tensor.dtype == 1 and f.tensor.float_val[0] == np.float32(0.1)  # DT_FLOAT
    (_, d), = values(str(tmp_path), "d")
    assert d.tensor.dtype == 2 and d.tensor.double_val[0] == 0.1  # DT_DOUBLE


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalars("train", {"a": ember.tensor(float(step)), "b": step * 10}, step)
    for tag, scale in (("a", 1), ("b", 10)):
        logged = values(str(tmp_path / f"train_{tag}"), "train")  # PyTorch's run directory: main_tag_tag
        assert [(s, v.simple_value) for s, v in logged] == [(s, s * scale) for s in range(3)]


def test_histogram_statistics_match_the_data(tmp_path):
    data = ember.randn(1000, generator=ember.Generator().manual_seed(0)) * 3 + 1
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("w", data, 7)
        w.add_histogram("fixed", ember.tensor([0.5, 1.5, 1.7, 2.5]), 0, bins=ember.tensor([0.0, 1.0, 2.0, 3.0]))
    (step, v), = values(str(tmp_path), "w")
    x = data.numpy().astype(np.float64)
    h = v.histo
    assert step == 7 and h.num == 1000 and sum(h.bucket) == 1000
    assert h.min == pytest.approx(x.min()) and h.max == pytest.approx(x.max())
    assert h.sum == pytest.approx(x.sum(), rel=1e-5) and h.sum_squares == pytest.approx((x * x).sum(), rel=1e-5)
    (_, fixed), = values(str(tmp_path), "fixed")
    counts = {limit: n for limit, n in zip(fixed.histo.bucket_limit, fixed.histo.bucket) if n}
    assert counts == {1.0: 1, 2.0: 2, 3.0: 1}  # bucket_limit: each bucket's right edge


def test_images_chw_hwc_and_batches(tmp_path):
    pixels = ember.randint(0, 256, (3, 6, 5), dtype=ember.uint8, generator=ember.Generator().manual_seed(1))
    batch = ember.randint(0, 256, (4, 3, 6, 5), dtype=ember.uint8, generator=ember.Generator().manual_seed(2))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("chw", pixels, 0)
        w.add_image("hwc", pixels.permute(1, 2, 0), 0, dataformats="HWC")
        w.add_image("float", pixels.float() / 255, 0)
        w.add_image("gray", pixels[0], 0, dataformats="HW")
        w.add_images("batch", batch, 0)
    expected = pixels.permute(1, 2, 0).numpy()
    for tag in ("chw", "hwc"):
        np.testing.assert_array_equal(decode_png(values(str(tmp_path), tag)[0][1]), expected)
    assert np.abs(decode_png(values(str(tmp_path), "float")[0][1]).astype(int) - expected).max() <= 1
    gray = decode_png(values(str(tmp_path), "gray")[0][1])
    np.testing.assert_array_equal(gray[..., 0] if gray.ndim == 3 else gray, pixels[0].numpy())
    grid = decode_png(values(str(tmp_path), "batch")[0][1])  # one row of the 4 images
    assert grid.shape == (6, 20, 3)
    for i in range(4):
        np.testing.assert_array_equal(grid[:, 5 * i:5 * (i + 1)], batch[i].permute(1, 2, 0).numpy())


def test_text(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("notes", "**loss** went down", 3)
    (step, v), = values(str(tmp_path), "notes/text_summary")
    assert step == 3 and v.tensor.string_val == [b"**loss** went down"]
    assert v.metadata.plugin_data.plugin_name == "text"


def test_hparams(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_hparams({"lr": ember.tensor(0.5), "opt": "sgd", "bs": 32}, {"hp/acc": ember.tensor(0.75)},
                      hparam_domain_discrete={"opt": ["sgd", "adam"]}, run_name="trial")
        with pytest.raises(TypeError, match=r"hparam_domain_discrete\[bs\] should be a list"):
            w.add_hparams({"bs": 32}, {}, hparam_domain_discrete={"bs": ["32"]})
    run = str(tmp_path / "trial")
    plugin = {v.tag: HParamsPluginData.FromString(v.metadata.plugin_data.content)
              for e in read_events(run) if e.HasField("summary") for v in e.summary.value if v.tag.startswith("_")}
    infos = {i.name: i for i in plugin["_hparams_/experiment"].experiment.hparam_infos}
    assert [d.string_value for d in infos["opt"].domain_discrete.values] == ["sgd", "adam"]
    assert [m.name.tag for m in plugin["_hparams_/experiment"].experiment.metric_infos] == ["hp/acc"]
    start = plugin["_hparams_/session_start_info"].session_start_info.hparams
    assert start["lr"].number_value == 0.5 and start["opt"].string_value == "sgd" and start["bs"].number_value == 32
    assert values(run, "hp/acc")[0][1].simple_value == 0.75


def test_flush_close_and_reopen(tmp_path):
    w = SummaryWriter(str(tmp_path), flush_secs=3600, purge_step=4)
    w.add_scalar("x", 1.0, 5)
    w.flush()
    assert w.file_writer.get_logdir() == str(tmp_path)
    assert [v.simple_value for _, v in values(str(tmp_path), "x")] == [1.0]  # on disk before close
    w.close()
    w.add_scalar("x", 2.0, 6)  # a closed writer opens a new event file
    w.close()
    assert sorted(v.simple_value for _, v in values(str(tmp_path), "x")) == [1.0, 2.0]
    assert len(glob.glob(str(tmp_path / "events.out.tfevents.*"))) == 2
    starts = [e for e in read_events(str(tmp_path)) if e.HasField("session_log")]
    assert starts and starts[0].step == 4  # purge_step hides later events of a crashed run
    assert w.get_logdir() == str(tmp_path) and w.file_writer is None  # closed, as PyTorch's


def test_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        w.add_scalar("x", 1.0)
    assert w.log_dir.startswith("runs" + os.sep) and w.log_dir.endswith("_lr0.1")
    assert values(str(tmp_path / w.log_dir), "x")[0][1].simple_value == 1.0


def test_pr_curve_embedding_and_mesh_write(tmp_path):
    g = ember.Generator().manual_seed(3)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_pr_curve("pr", ember.randint(0, 2, (50,), generator=g), ember.rand(50, generator=g), 1)
        w.add_embedding(ember.arange(12.0).reshape(4, 3), metadata=["a", "b", "c", "d"], tag="emb")
        w.add_mesh("mesh", ember.arange(12.0).reshape(1, 4, 3))
    (_, pr), = values(str(tmp_path), "pr")
    assert pr.metadata.plugin_data.plugin_name == "pr_curves" and pr.tensor.tensor_shape.dim[1].size == 127
    tsv = glob.glob(str(tmp_path / "*" / "emb" / "tensors.tsv"))
    assert len(tsv) == 1 and np.allclose(np.loadtxt(tsv[0]), np.arange(12.0).reshape(4, 3))
    mesh = [v for e in read_events(str(tmp_path)) if e.HasField("summary") for v in e.summary.value
            if v.metadata.plugin_data.plugin_name == "mesh"]
    assert len(mesh) == 1 and [d.size for d in mesh[0].tensor.tensor_shape.dim] == [1, 4, 3]
    assert list(mesh[0].tensor.float_val) == list(range(12))


def test_missing_tensorboardx_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import tensorboardX now raises ImportError
    for name in [m for m in sys.modules if m.startswith("ember.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match="requires the tensorboardX package.*pip install tensorboardX"):
        importlib.import_module("ember.utils.tensorboard")


def test_loading_does_not_import_torch():
    from child_process import run_isolated
    result = run_isolated("""
        import sys
        import ember.utils.tensorboard
        print("torch" in sys.modules)  # neither loaded nor left hidden (a None entry would block `import torch`)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]


def test_add_graph_records_ops_scopes_and_shapes(tmp_path):
    from tensorboardX.proto.graph_pb2 import GraphDef
    nn = ember.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.body = nn.Sequential(nn.ReLU(), nn.Linear(8, 2))

        def forward(self, x, y):
            return self.body(self.fc1(x)) * 2 + y, x.sum()

    model = Net()
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(model, (ember.randn(3, 4), ember.ones(3, 2)))
    graphs = [GraphDef.FromString(e.graph_def) for e in read_events(str(tmp_path)) if e.graph_def]
    assert len(graphs) == 1
    nodes = {n.name: n for n in graphs[0].node}
    shapes = {name: [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape] for name, n in nodes.items()}
    assert nodes["input/input.1"].op == nodes["input/input.2"].op == "IO Node"
    assert nodes["Net/Linear[fc1]/weight"].op == "prim::GetAttr" and shapes["Net/Linear[fc1]/weight"] == [[8, 4]]
    assert shapes["Net/Sequential[body]/Linear[1]/bias"] == [[2]]
    relu = [n for n in nodes.values() if n.op == "aten::relu"]
    assert len(relu) == 1 and relu[0].name.startswith("Net/Sequential[body]/ReLU[0]/")
    fc1_out = nodes[relu[0].input[0]]  # the op Linear fc1 ended with, fed by the input and fc1's parameters
    assert fc1_out.name.startswith("Net/Linear[fc1]/") and shapes[fc1_out.name] == [[3, 8]]
    feeding = set()
    stack = list(fc1_out.input)
    while stack:
        feeding.add(stack[-1])
        stack += list(nodes[stack.pop()].input)
    assert {"input/input.1", "Net/Linear[fc1]/weight", "Net/Linear[fc1]/bias"} <= feeding
    assert shapes["output/output.1"] == [[3, 2]] and shapes["output/output.2"] == [[]]
    assert nodes[nodes["output/output.2"].input[0]].op == "aten::sum"
    add = nodes[nodes["output/output.1"].input[0]]
    assert add.op.startswith("aten::add") and "input/input.2" in add.input
    assert all(i in nodes for n in nodes.values() for i in n.input)  # every edge names a node
    assert not model.fc1._forward_hooks and not model.fc1._forward_pre_hooks  # the scope hooks are gone


@pytest.mark.parametrize("dtype, field", [(ember.float32, "float_val"), (ember.float64, "double_val"),
                                          (ember.int64, "int64_val"), (ember.int32, "int_val"),
                                          (ember.uint8, "int_val"), (ember.bool, "bool_val"),
                                          (ember.float16, "half_val")])
def test_add_tensor(tmp_path, dtype, field):
    t = (ember.arange(6).reshape(2, 3) % 4).to(dtype)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_tensor("t", t.t(), 2)
    (step, v), = values(str(tmp_path), "t")
    assert step == 2 and v.metadata.plugin_data.plugin_name == "tensor"
    assert [d.size for d in v.tensor.tensor_shape.dim] == [3, 2]
    got = list(getattr(v.tensor, field))
    if field == "half_val":  # PyTorch's encoding: each value's float32 bits as an int
        got = [struct.unpack("f", struct.pack("i", i))[0] for i in got]
    assert got == t.t().flatten().tolist()


def test_boxes_figure_audio_raw_histogram_and_custom_scalars(tmp_path):
    import wave
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboardX.proto.layout_pb2 import Layout

    sound = ember.linspace(-1, 1, 101)
    figure = plt.figure(figsize=(2, 1), dpi=50)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image_with_boxes("boxes", ember.zeros(3, 16, 16), ember.tensor([[2.0, 3.0, 10.0, 12.0]]), 0)
        w.add_figure("figure", figure, 0)
        w.add_audio("audio", sound.unsqueeze(0), 0, sample_rate=8000)
        w.add_histogram_raw("raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
                            bucket_limits=ember.tensor([1.0, 2.0, 3.0]), bucket_counts=ember.tensor([1, 2, 3]),
                            global_step=4)
        w.add_custom_scalars_multilinechart(["loss/train", "loss/test"], category="Losses", title="both")
        with pytest.raises(ValueError, match="len\\(bucket_limits\\) != len\\(bucket_counts\\)"):
            w.add_histogram_raw("bad", 0, 1, 1, 1, 1, [1.0, 2.0], [1])
    boxed = decode_png(values(str(tmp_path), "boxes")[0][1])
    assert boxed[3, 2:11].any() and not boxed[7, 4:9].any()  # the top edge is drawn, the inside is not
    assert decode_png(values(str(tmp_path), "figure")[0][1]).shape[:2] == (50, 100)
    audio = values(str(tmp_path), "audio")[0][1].audio
    assert audio.sample_rate == 8000 and audio.num_channels == 1 and audio.length_frames == 101
    with wave.open(io.BytesIO(audio.encoded_audio_string)) as f:
        samples = np.frombuffer(f.readframes(101), dtype="<i2")
    np.testing.assert_allclose(samples / 32767, sound.numpy(), atol=1e-4)
    (step, raw), = values(str(tmp_path), "raw")
    assert step == 4 and (raw.histo.num, raw.histo.sum, raw.histo.sum_squares) == (6, 9.0, 19.0)
    assert list(raw.histo.bucket) == [1, 2, 3]
    (_, layout), = values(str(tmp_path), "custom_scalars__config__")
    category = Layout.FromString(layout.tensor.string_val[0]).category[0]
    assert category.title == "Losses" and list(category.chart[0].multiline.tag) == ["loss/train", "loss/test"]


def test_add_video_without_moviepy_raises(tmp_path):
    import importlib.util
    if importlib.util.find_spec("moviepy") is not None:
        pytest.skip("moviepy is installed")
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(ImportError, match="moviepy"):
            w.add_video("v", ember.rand(1, 4, 3, 8, 8))
    assert values(str(tmp_path), "v") == []


def test_events_reach_the_file_without_close(tmp_path):
    from child_process import run_isolated
    result = run_isolated(f"""
        import ember
        from ember.utils.tensorboard import SummaryWriter
        w = SummaryWriter({str(tmp_path)!r}, flush_secs=3600)
        w.add_scalar("x", ember.tensor(3.5), 1)  # never flushed nor closed: written at exit
    """)
    assert result.returncode == 0, result.stderr
    assert [(s, v.simple_value) for s, v in values(str(tmp_path), "x")] == [(1, 3.5)]
