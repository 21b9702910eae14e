"""SummaryWriter with torch.utils.tensorboard's API. tensorboardX (the library PyTorch's writer was
made from) encodes the summaries; ember's FileWriter writes them. Ember tensors go in as NumPy arrays."""
from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional, cast

from tensorboardX import embedding, summary as tbx, utils as tbx_utils  # type: ignore[import-untyped,import-not-found]
from tensorboardX.proto import event_pb2  # type: ignore[import-untyped,import-not-found]

from . import _summary
from ._summary import to_numpy
from .file_writer import FileWriter

__all__ = ["SummaryWriter"]


def _default_bins():
    """TensorBoard's default histogram edges: +-1e-12 growing by 10% to 1e20, and 0 (as PyTorch's)."""
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


class SummaryWriter:
    """Writes entries directly to event files in the log_dir to be consumed by TensorBoard."""

    def __init__(self, log_dir: Optional[str] = None, comment: str = "", purge_step: Optional[int] = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        """Creates a SummaryWriter writing to `log_dir` (default runs/CURRENT_DATETIME_HOSTNAME`comment`)."""
        if not log_dir:
            import socket
            from datetime import datetime
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname()
                                   + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: Optional[FileWriter] = None
        self.all_writers: Optional[Dict[str, FileWriter]] = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _writer_for(self, log_dir: str) -> FileWriter:
        return FileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> FileWriter:
        """The FileWriter of log_dir (made anew after close())."""
        if self.all_writers is None or self.file_writer is None:
            writer = self._writer_for(self.log_dir)
            self.file_writer, self.all_writers = writer, {writer.get_logdir(): writer}
            if self.purge_step is not None:
                most_recent_step, self.purge_step = self.purge_step, None
                start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
                writer.add_event(event_pb2.Event(step=most_recent_step, file_version="brain.Event:2"))
                writer.add_event(event_pb2.Event(step=most_recent_step, session_log=start))
        return self.file_writer

    def get_logdir(self) -> str:
        """The directory the event files are written to."""
        return self.log_dir

    def _add(self, summary, global_step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_hparams(self, hparam_dict: Dict[str, Any], metric_dict: Dict[str, Any],
                    hparam_domain_discrete: Optional[Dict[str, list]] = None, run_name: Optional[str] = None,
                    global_step: Optional[int] = None) -> None:
        """Adds a set of hyperparameters and their metrics (in log_dir/`run_name`) to compare in TensorBoard."""
        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w_hp:
            for s in (exp, ssi, sei):
                w_hp._add(s, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_scalar(self, tag: str, scalar_value: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, new_style: bool = False, double_precision: bool = False) -> None:
        """Adds scalar data (a number or a one-element tensor); `new_style` writes it as a tensor summary."""
        self._add(_summary.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Dict[str, Any], global_step: Optional[int] = None,
                    walltime: Optional[float] = None) -> None:
        """Adds many scalars to one plot: each tag goes to its own run, log_dir/main_tag_tag."""
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        writers = cast(Dict[str, FileWriter], self.all_writers)
        for tag, value in tag_scalar_dict.items():
            run = os.path.join(log_dir, main_tag.replace("/", "_") + "_" + tag)
            if run not in writers:
                writers[run] = self._writer_for(run)
            writers[run].add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None) -> None:
        """Adds a whole tensor (read back with the tensor plugin)."""
        self._add(_summary.tensor(tag, tensor), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: Optional[int] = None, bins: Any = "tensorflow",
                      walltime: Optional[float] = None, max_bins: Optional[int] = None) -> None:
        """Adds a histogram of `values`; `bins` is 'tensorflow' or a NumPy `histogram` bins argument."""
        bins = self.default_bins if isinstance(bins, str) and bins == "tensorflow" else to_numpy(bins)
        self._add(tbx.histogram(tag, to_numpy(values), bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float, sum_squares: float,
                          bucket_limits: Any, bucket_counts: Any, global_step: Optional[int] = None,
                          walltime: Optional[float] = None) -> None:
        """Adds a histogram from its statistics and bucket counts (bucket_limits: the right edges)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summary = tbx.histogram_raw(tag, min, max, num, sum, sum_squares, to_numpy(bucket_limits),
                                    to_numpy(bucket_counts))
        self._add(summary, global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                  walltime: Optional[float] = None, dataformats: str = "CHW") -> None:
        """Adds an image (float in [0, 1] or uint8 in [0, 255]; `dataformats` CHW, HWC, HW, ...)."""
        self._add(tbx.image(tag, to_numpy(img_tensor), dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Optional[int] = None,
                   walltime: Optional[float] = None, dataformats: str = "NCHW") -> None:
        """Adds a batch of images, shown as one grid."""
        self._add(tbx.image(tag, to_numpy(img_tensor), dataformats=dataformats), global_step, walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any, global_step: Optional[int] = None,
                             walltime: Optional[float] = None, rescale: float = 1, dataformats: str = "CHW",
                             labels: Optional[list] = None) -> None:
        """Adds an image with boxes (N x 4: xmin, ymin, xmax, ymax) drawn on it, labelled by `labels`."""
        if isinstance(labels, str):
            labels = [labels]
        if labels is not None and len(labels) != box_tensor.shape[0]:
            labels = None  # as PyTorch: mismatched labels are dropped
        summary = tbx.image_boxes(tag, to_numpy(img_tensor), to_numpy(box_tensor), rescale=rescale,
                                  dataformats=dataformats, labels=labels)
        self._add(summary, global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: Optional[int] = None, close: bool = True,
                   walltime: Optional[float] = None) -> None:
        """Adds a matplotlib figure (or a list of them) as an image."""
        dataformats = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, tbx_utils.figure_to_image(figure, close), global_step, walltime, dataformats=dataformats)

    def add_video(self, tag: str, vid_tensor: Any, global_step: Optional[int] = None, fps: float = 4,
                  walltime: Optional[float] = None) -> None:
        """Adds a video (N, T, C, H, W) as an animated GIF (needs moviepy)."""
        import importlib.util
        if importlib.util.find_spec("moviepy") is None:  # tensorboardX would print a note and log an empty value
            raise ImportError("add_video needs the moviepy package: pip install moviepy")
        self._add(tbx.video(tag, to_numpy(vid_tensor), fps), global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: Optional[int] = None, sample_rate: int = 44100,
                  walltime: Optional[float] = None) -> None:
        """Adds audio (1, L) with values in [-1, 1]."""
        self._add(_summary.audio(tag, snd_tensor, sample_rate), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """Adds text (markdown)."""
        self._add(tbx.text(tag, text_string), global_step, walltime)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Adds the graph of one forward pass of `model` on `input_to_model` (a tensor or a tuple of them),
        recorded op by op (`use_strict_trace`, a JIT tracing option in PyTorch, has no effect)."""
        from ._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose))

    def add_embedding(self, mat: Any, metadata: Optional[list] = None, label_img: Any = None,
                      global_step: Optional[int] = None, tag: str = "default",
                      metadata_header: Optional[list] = None) -> None:
        """Adds embedding projector data: `mat` (N, D), one label (or row of `metadata_header`) per point,
        `label_img` (N, C, H, W) sprite images."""
        mat, label_img = to_numpy(mat), to_numpy(label_img)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{_encode(tag)}"
        save_path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        os.makedirs(save_path, exist_ok=True)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            embedding.make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            embedding.make_sprite(label_img, save_path)
        embedding.make_mat(mat, save_path)
        embedding.append_pbtxt(metadata, label_img, self._get_file_writer().get_logdir(), subdir, global_step, tag)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: Optional[int] = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: Optional[float] = None) -> None:
        """Adds a precision-recall curve of `predictions` (probabilities) against binary `labels`."""
        summary = tbx.pr_curve(tag, to_numpy(labels), to_numpy(predictions), num_thresholds, to_numpy(weights))
        self._add(summary, global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: Optional[int] = None, num_thresholds: int = 127, weights: Any = None,
                         walltime: Optional[float] = None) -> None:
        """Adds a precision-recall curve from its counts."""
        counts = [to_numpy(c) for c in (true_positive_counts, false_positive_counts, true_negative_counts,
                                        false_negative_counts, precision, recall)]
        self._add(tbx.pr_curve_raw(tag, *counts, num_thresholds, to_numpy(weights)), global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags: list, category: str = "default",
                                          title: str = "untitled") -> None:
        """Adds a custom-scalars chart of the scalars `tags`, one line each."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list, category: str = "default", title: str = "untitled") -> None:
        """Adds a custom-scalars chart of a value and its lower and upper bounds (three tags)."""
        if len(tags) != 3:
            raise AssertionError("tags should be a list of 3 tags: the value, its lower and its upper bound")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_custom_scalars(self, layout: Dict[str, Dict[str, list]]) -> None:
        """Adds the layout of the custom-scalars plugin: {category: {title: [chart type, [tags]]}}."""
        self._add(tbx.custom_scalars(layout))

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: Optional[dict] = None, global_step: Optional[int] = None,
                 walltime: Optional[float] = None) -> None:
        """Adds a 3-d mesh or point cloud: `vertices` (B, N, 3), `colors` (B, N, 3), `faces` (B, F, 3)."""
        summary = tbx.mesh(tag, to_numpy(vertices), to_numpy(colors), to_numpy(faces), config_dict)
        self._add(summary, global_step, walltime)

    def flush(self) -> None:
        """Writes the pending events of every event file to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flushes and closes the event files (a later add_* opens new ones)."""
        for writer in (self.all_writers or {}).values():
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()


def _encode(rawstr: str) -> str:
    """A tag as a directory name, escaped as PyTorch does (%, / and backslash as %xx)."""
    for c in ("%", "/", "\\"):
        rawstr = rawstr.replace(c, f"%{ord(c):02x}")
    return rawstr
