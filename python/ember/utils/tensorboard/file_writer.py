"""FileWriter: appends Event protos to one event file of a log directory, as torch.utils.tensorboard's.

It writes in the calling thread, in TFRecord framing (length, masked CRC-32C of it, data, masked
CRC-32C of the data; tensorboardX computes the checksums): an event is in the file's buffer when
add_event returns, so flush() is exact. tensorboardX's own writer queues events to a thread whose
flush does not wait for the queue."""
from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from typing import Any, Optional

from tensorboardX.proto import event_pb2  # type: ignore[import-untyped,import-not-found]
from tensorboardX.record_writer import masked_crc32c  # type: ignore[import-untyped,import-not-found]

Event = event_pb2.Event

__all__ = ["FileWriter"]

_file_ids = itertools.count()  # file names stay unique within a process, as PyTorch's


class FileWriter:
    """Writes protocol buffers to event files to be consumed by TensorBoard."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        self._log_dir = str(log_dir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._filename_suffix = filename_suffix
        self._open()

    def _open(self) -> None:
        os.makedirs(self._log_dir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
                f"{next(_file_ids)}{self._filename_suffix}")
        self._file = open(os.path.join(self._log_dir, name), "wb")
        self._pending = 0
        self._last_flush = time.time()
        self._closed = False
        self._write(Event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, event: Any) -> None:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        self._file.write(header + struct.pack("<I", masked_crc32c(header)) + data +
                         struct.pack("<I", masked_crc32c(data)))
        self._pending += 1
        if self._pending >= self._max_queue or time.time() - self._last_flush >= self._flush_secs:
            self.flush()

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self._log_dir

    def add_event(self, event: Any, step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        """Adds an event, stamped with `walltime` (default now) and `step` when given."""
        if self._closed:
            raise RuntimeError("FileWriter: the event file is closed (call reopen() first)")
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self._write(event)

    def add_summary(self, summary, global_step: Optional[int] = None, walltime: Optional[float] = None) -> None:
        """Adds a Summary proto as an event at `global_step`."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime: Optional[float] = None) -> None:
        """Adds a GraphDef proto (or a (GraphDef, RunMetadata) pair as add_graph makes)."""
        if isinstance(graph_profile, tuple):
            graph, run_metadata = graph_profile
        else:
            graph, run_metadata = graph_profile, None
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)
        if run_metadata is not None:
            tagged = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
            self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self) -> None:
        """Writes the buffered events to disk."""
        if not self._closed:
            self._file.flush()
            self._pending = 0
            self._last_flush = time.time()

    def close(self) -> None:
        """Flushes and closes the event file."""
        if not self._closed:
            self.flush()
            self._file.close()
            self._closed = True

    def reopen(self) -> None:
        """Opens a new event file in the same directory after close()."""
        if self._closed:
            self._open()
