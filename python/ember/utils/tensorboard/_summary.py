"""The summaries ember builds itself where tensorboardX's differ from PyTorch's (new-style scalars,
tensors, WAV audio without soundfile, hparams with discrete domains), and the conversion of ember
tensors to what tensorboardX takes."""
from __future__ import annotations

import struct
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from tensorboardX import summary as _tbx_summary  # type: ignore[import-untyped,import-not-found]
from tensorboardX.proto import (  # type: ignore[import-untyped,import-not-found]
    plugin_hparams_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2)

from ... import _C

Summary, SummaryMetadata, TensorProto = summary_pb2.Summary, summary_pb2.SummaryMetadata, tensor_pb2.TensorProto


def to_numpy(x: Any) -> Any:
    """An ember tensor as a NumPy array (detached, on the CPU; bfloat16 widened to float32);
    anything else as it is."""
    if not isinstance(x, _C.TensorBase):
        return x
    x = x.detach().cpu()
    return (x.float() if x.dtype == _C.bfloat16 else x).numpy()


def to_python(x: Any) -> Any:
    """A one-element tensor or NumPy value as a Python number (hparams and metric values)."""
    x = to_numpy(x)
    return x.item() if isinstance(x, (np.ndarray, np.generic)) else x


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> Any:
    """PyTorch's scalar summary: a simple_value, or with `new_style` a tensor for the scalars plugin."""
    array = np.asarray(to_numpy(value)).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {array.size} "
                             f"and {array.ndim} dimensions.")
    value = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=value)])
    proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[value], dtype="DT_FLOAT"))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def audio(tag: str, sound: Any, sample_rate: int = 44100) -> Any:
    """PyTorch's audio summary: one channel of values in [-1, 1] (clipped beyond) as 16-bit WAV."""
    import io
    import wave

    array = np.asarray(to_numpy(sound)).squeeze()
    if abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    array = (array * np.iinfo(np.int16).max).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(array.tobytes())
    encoded = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=array.shape[-1],
                            encoded_audio_string=buffer.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=encoded)])


def _half_val(values: list) -> list:
    # As PyTorch writes half_val: each value's float32 bit pattern as an int.
    return [struct.unpack("i", struct.pack("f", v))[0] for v in values]


# ember dtype name -> (TensorProto dtype, value field, conversion of the flat value list)
_TENSOR_TYPES: Dict[str, Tuple[str, str, Callable[[list], list]]] = {
    "float16": ("DT_HALF", "half_val", _half_val), "bfloat16": ("DT_BFLOAT16", "half_val", _half_val),
    "float32": ("DT_FLOAT", "float_val", list), "float64": ("DT_DOUBLE", "double_val", list),
    "int8": ("DT_INT8", "int_val", list), "uint8": ("DT_UINT8", "int_val", list),
    "int16": ("DT_INT16", "int_val", list), "int32": ("DT_INT32", "int_val", list),
    "int64": ("DT_INT64", "int64_val", list), "bool": ("DT_BOOL", "bool_val", list),
}


def tensor(tag: str, t: Any) -> Any:
    """PyTorch's add_tensor summary: the whole tensor in a TensorProto, for the "tensor" plugin."""
    if t.numel() * t.element_size() >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    dtype, field, convert = _TENSOR_TYPES[str(t.dtype).split(".")[-1]]
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in t.shape])
    values = t.detach().cpu().flatten().tolist()
    proto = TensorProto(dtype=dtype, tensor_shape=shape, **{field: convert(values)})
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])


def hparams(hparam_dict: Dict[str, Any], metric_dict: Dict[str, Any],
            hparam_domain_discrete: Optional[Dict[str, list]] = None):
    """The experiment, session-start and session-end summaries of the hparams plugin, with PyTorch's checks
    and its `hparam_domain_discrete` (the values a parameter can take, listed in TensorBoard's filter)."""
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    hparam_dict = {k: to_python(v) for k, v in hparam_dict.items()}
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    exp, ssi, sei = _tbx_summary.hparams(hparam_dict, {k: to_python(v) for k, v in metric_dict.items()})
    if domains:
        data = plugin_hparams_pb2.HParamsPluginData.FromString(exp.value[0].metadata.plugin_data.content)
        for info in data.experiment.hparam_infos:
            for d in domains.get(info.name, ()):
                entry = info.domain_discrete.values.add()
                if isinstance(d, bool):
                    entry.bool_value = d
                elif isinstance(d, str):
                    entry.string_value = d
                else:
                    entry.number_value = d
        exp.value[0].metadata.plugin_data.content = data.SerializeToString()
    return exp, ssi, sei
