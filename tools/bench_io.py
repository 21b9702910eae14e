"""Issue 13's bench rows: ember.save / ember.load of a 500 MB state_dict and the DataLoader, side by
side with torch (rows in the format of bench_rows; all_benches() takes them from here)."""
import numpy as np

from bench_rows import F32, TORCHLIKE_COLUMNS, Bench, SelfTimed


# ---------------------------------------------------------------- save / load (issue 13)
SAVE_COUNT, SAVE_NUMEL = 50, 2_500_000  # a 500 MB state_dict: 50 float32 tensors of 10 MB
SAVE_BYTES = SAVE_COUNT * SAVE_NUMEL * F32
# Every row's name holds "save" so that `--only save` runs the three.
SAVE_ROW, LOAD_ROW, MMAP_ROW = ("save 500MB state_dict (50x10MB f32)", "load 500MB save, full read",
                                "load 500MB save, mmap=True")


_BENCH_DIR = []


def _bench_dir():
    """One temporary folder for the save/load rows (each library's file is rewritten row after row), removed at
    exit: at most one 500 MB file per library on disk."""
    if not _BENCH_DIR:
        import atexit
        import shutil
        import tempfile
        _BENCH_DIR.append(tempfile.mkdtemp(prefix="ember-bench-save-"))
        atexit.register(shutil.rmtree, _BENCH_DIR[0], ignore_errors=True)
    return _BENCH_DIR[0]


def save_load_benches():
    """Issue 13: ember.save / ember.load of a 500 MB state_dict to a temporary file (in the page cache, so the
    rows measure the libraries, not the disk), each library reading its own file; mmap=True maps the file.
    Each save writes over the previous call's file, as a training loop's checkpoint does."""
    def state_dict(lib):
        lib.mod.manual_seed(0)
        return {f"layer{i}.weight": lib.mod.randn(SAVE_NUMEL) for i in range(SAVE_COUNT)}

    def build_save(lib):
        if lib.is_numpy:
            return None
        sd, path = state_dict(lib), f"{_bench_dir()}/{lib.name}.pt"
        return lambda: lib.mod.save(sd, path)

    def build_load(mmap):
        def build(lib):
            if lib.is_numpy:
                return None
            path = f"{_bench_dir()}/{lib.name}.pt"
            lib.mod.save(state_dict(lib), path)
            return lambda: lib.mod.load(path, mmap=mmap)
        return build

    section = "save / load (tmp file, page cache)"
    return [Bench(section, SAVE_ROW, "GB/s", build_save, work=SAVE_BYTES, columns=TORCHLIKE_COLUMNS),
            Bench(section, LOAD_ROW, "GB/s", build_load(False), work=SAVE_BYTES, columns=TORCHLIKE_COLUMNS),
            Bench(section, MMAP_ROW, "GB/s", build_load(True), work=SAVE_BYTES, columns=TORCHLIKE_COLUMNS)]


# ---------------------------------------------------------------- data loading (issue 13)
DATA_BATCH, DATA_BATCHES = 64, 16  # an epoch of 16 batches of 64


def dataloader_row_name(workers, what):
    return f"dataloader 3x32x32 b{DATA_BATCH} workers {workers} {what}"


class SyntheticImages:
    """A map-style dataset doing an image pipeline's per-item Python work: uint8 pixels from NumPy
    made float, flipped every other item, then normalized per channel as tensors."""

    def __init__(self, mod, n):
        self.mod, self.n = mod, n
        self.pixels = np.random.default_rng(0).integers(0, 256, (DATA_BATCH, 3, 32, 32), dtype=np.uint8)
        self.mean = mod.tensor([0.49, 0.48, 0.45]).view(3, 1, 1)
        self.std = mod.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)

    def __getitem__(self, i):
        image = self.pixels[i % DATA_BATCH].astype(np.float32) / 255
        if i % 2:
            image = np.ascontiguousarray(image[:, :, ::-1])
        return (self.mod.from_numpy(image) - self.mean) / self.std, i % 10

    def __len__(self):
        return self.n


def data_benches():
    """Issue 13's DataLoader: batches/s over an epoch (workers kept between epochs) and the time from
    iter() to the first batch (workers started for it), with 0 and 2 worker processes."""
    import time

    def loader(lib, workers, **kwargs):
        if lib.is_numpy:
            return None
        dataset = SyntheticImages(lib.mod, DATA_BATCH * DATA_BATCHES)
        return lib.mod.utils.data.DataLoader(dataset, batch_size=DATA_BATCH, shuffle=True, num_workers=workers,
                                             **kwargs)

    def epoch(workers):
        def build(lib):
            data = loader(lib, workers, persistent_workers=workers > 0)
            if data is None:
                return None

            def run():
                for _ in data:
                    pass
            return run
        return build

    def first_batch(workers):
        def build(lib):
            data = loader(lib, workers)
            if data is None:
                return None

            def run():
                start = time.perf_counter()
                it = iter(data)
                next(it)
                seconds = time.perf_counter() - start
                del it  # the workers' shutdown is not part of the first batch's time
                return SelfTimed(seconds)
            return run
        return build

    section = "data loading: DataLoader over a synthetic image dataset"
    rows = []
    for workers in (0, 2):
        rows.append(Bench(section, dataloader_row_name(workers, "epoch"), "batches/s", epoch(workers),
                          work=DATA_BATCHES, columns=TORCHLIKE_COLUMNS))
        rows.append(Bench(section, dataloader_row_name(workers, "first batch"), "ms", first_batch(workers),
                          columns=TORCHLIKE_COLUMNS))
    return rows
