"""ember.load(mmap=True): tensor data is mapped from the file (copy-on-write, as torch's MAP_PRIVATE),
not read. Checked by where the tensors' memory lives (/proc/self/maps) and by resident memory, never
by time (tools/bench.py measures that)."""
import io
import os

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _mapped_file_of(address):
    """The path of the file mapped at `address` in this process, or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= address < hi:
                return parts[5] if len(parts) > 5 else None
    return None


@pytest.fixture
def big_file(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {f"w{i}": ember.from_numpy(rng.standard_normal(1_000_000).astype(np.float32)) for i in range(12)}
    tensors["view"] = tensors["w0"][10:20]
    tensors["half"] = ember.arange(100.0).to(ember.bfloat16)
    path = tmp_path / "big.pt"
    ember.save(tensors, path)
    return path, tensors


def test_mmap_tensors_live_in_the_file_mapping(big_file):
    path, tensors = big_file
    out = ember.load(path, mmap=True)
    for name, t in out.items():
        assert _mapped_file_of(t.data_ptr()) == str(path), name
        assert ember.equal(t, tensors[name]), name
    assert out["view"].untyped_storage() is out["w0"].untyped_storage()
    assert out["view"].data_ptr() == out["w0"].data_ptr() + 10 * 4
    full = ember.load(path)
    assert _mapped_file_of(full["w1"].data_ptr()) != str(path)


_RSS_CHILD = """
import os, sys, ember
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
ember.load(sys.argv[1], mmap=True)  # imports the loading machinery (megabytes of modules) before measuring
before = rss(); mapped = ember.load(sys.argv[1], mmap=True); after_map = rss()
full = ember.load(sys.argv[1]); after_full = rss()
assert ember.equal(mapped["w5"], full["w5"])  # touching mapped pages reads them on demand
print(after_map - before, after_full - after_map)
"""


def test_mmap_does_not_read_the_data(big_file):
    # In a fresh process: memory the test process freed earlier would hide the full read's growth.
    import subprocess
    import sys
    path, _ = big_file
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(path)], capture_output=True, text=True,
                         check=True, env=dict(os.environ))
    mapped_growth, full_growth = map(int, out.stdout.split())
    size = os.path.getsize(path)
    assert mapped_growth < 0.1 * size < 0.8 * size < full_growth


def test_mmap_is_copy_on_write(big_file):
    path, tensors = big_file
    out = ember.load(path, mmap=True)
    out["w2"][0] = 123.0
    assert out["w2"][0].item() == 123.0
    again = ember.load(path)
    assert ember.equal(again["w2"], tensors["w2"])  # the file is unchanged


def test_mapping_outlives_the_load_call(big_file):
    path, tensors = big_file
    w3 = ember.load(path, mmap=True)["w3"]  # the dict is gone; the storage keeps the mapping
    import gc
    gc.collect()
    assert ember.equal(w3, tensors["w3"])


def test_mmap_argument_errors(tmp_path):
    buf = io.BytesIO()
    ember.save(ember.ones(2), buf)
    buf.seek(0)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        ember.load(buf, mmap=True)
    legacy = tmp_path / "legacy.pt"
    ember.save(ember.ones(2), legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        ember.load(legacy, mmap=True)


def test_mmap_with_map_location_and_empty_tensors(tmp_path):
    path = tmp_path / "small.pt"
    ember.save({"e": ember.zeros(0), "a": ember.arange(5)}, path)
    out = ember.load(path, mmap=True, map_location="cpu")
    assert out["e"].shape == (0,) and out["a"].tolist() == [0, 1, 2, 3, 4]


def test_map_shared_writes_reach_the_file(tmp_path):
    import mmap
    from ember import serialization
    path = tmp_path / "shared.pt"
    ember.save({"w": ember.zeros(4)}, path)
    assert serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
    with serialization.set_default_mmap_options(mmap.MAP_SHARED):
        assert serialization.get_default_mmap_options() == mmap.MAP_SHARED
        w = ember.load(path, mmap=True)["w"]
    assert serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
    w[1] = 7.0
    del w
    assert ember.load(path)["w"].tolist() == [0.0, 7.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="expected mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got 12345"):
        serialization.set_default_mmap_options(12345)
