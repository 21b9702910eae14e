"""Recurrent layers, as torch.nn.modules.rnn: RNN (tanh/relu), LSTM (with an
optional projection), GRU and their one-step cells. Parameter names, shapes,
gate order (LSTM i, f, g, o; GRU r, z, n) and initialisation are PyTorch's, so a
PyTorch state_dict loads. The time loop runs in C++: each layer and direction is
one call of the fused kernel ``ember._rnn_fused`` over the whole (packed) sequence."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, List, Optional, Tuple

import numpy as np

import ember

from ..._tensor import Tensor
from .. import functional as F
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    return tensor.index_select(dim, permutation)


def _reset_uniform(module: Module, hidden_size: int) -> None:
    # PyTorch's init.uniform_(w, -1/sqrt(hidden), 1/sqrt(hidden)) for every parameter.
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    with ember.no_grad():
        for weight in module.parameters():
            weight.uniform_(-stdv, stdv)


def _final_rows(batch_sizes: List[int], reverse: bool, uniform: bool) -> Optional[np.ndarray]:
    """The packed row holding each sequence's last state (None: the last B rows, or the first
    B for the reverse direction, which ends at step 0 for every sequence)."""
    if reverse or uniform:
        return None
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    last_step = (sizes[:, None] > np.arange(sizes[0])[None, :]).sum(0) - 1
    return offsets[last_step] + np.arange(sizes[0])


class RNNBase(Module):
    r"""Base class for RNN modules (RNN, LSTM, GRU): the parameters of every layer and
    direction, argument checks, and the forward over the fused layer kernel."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size

        self._flat_weights_names: List[str] = []
        self._all_weights: List[List[str]] = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params: List[Tuple[str, Tuple[int, ...]]] = [
                    ("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    params += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for kind, shape in params:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(ember.empty(shape, **factory_kwargs)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> List[Optional[Tensor]]:
        return [getattr(self, name) if hasattr(self, name) else None for name in self._flat_weights_names]

    def flatten_parameters(self) -> None:
        """A no-op: ember's kernel reads the parameters where they are (PyTorch packs them for cuDNN)."""

    def reset_parameters(self) -> None:
        _reset_uniform(self, self.hidden_size)

    def check_input(self, input: Tensor, batch_sizes: Optional[Tensor]) -> None:
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _state_size(self, input: Tensor, batch_sizes: Optional[Tensor], width: int) -> Tuple[int, int, int]:
        # (layers * directions, batch, width): the shape of h_0 (width = proj_size or hidden_size) or c_0.
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, width)

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        return self._state_size(input, batch_sizes, self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: Tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Optional[Tensor]) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Optional[Tensor]):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    @property
    def all_weights(self) -> List[List[Parameter]]:
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    # ------------------------------------------------------------------ the layers' loop
    def _layer_weights(self, index: int):
        names = self._all_weights[index]
        w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
        b_ih = getattr(self, names[2]) if self.bias else None
        b_hh = getattr(self, names[3]) if self.bias else None
        w_hr = getattr(self, names[-1]) if self.proj_size > 0 else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _run_layers(self, rows: Tensor, batch_sizes: List[int], hx: Tensor, cx: Optional[Tensor]):
        """rows: (sum(batch_sizes), input_size), time-major packed. Returns the last layer's
        (rows, D * hidden) output and the final h (and c) of every layer and direction."""
        lstm = self.mode == "LSTM"
        hout = self.proj_size if self.proj_size > 0 else self.hidden_size
        num_directions = 2 if self.bidirectional else 1
        uniform = all(n == batch_sizes[0] for n in batch_sizes)
        B = batch_sizes[0]
        last_np = {d: _final_rows(batch_sizes, d == 1, uniform) for d in range(num_directions)}
        last = {d: None if v is None else ember.from_numpy(v).to(rows.device) for d, v in last_np.items()}
        h_n, c_n = [], []
        layer_input = rows
        for layer in range(self.num_layers):
            outputs = []
            for d in range(num_directions):
                index = layer * num_directions + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(index)
                states, _ = ember._rnn_fused(layer_input, hx[index], cx[index] if cx is not None else None,
                                             w_ih, w_hh, b_ih, b_hh, w_hr, batch_sizes, self.mode, d == 1)
                last_rows = last[d]
                if last_rows is not None:
                    final = states.index_select(0, last_rows)
                else:  # forward: the last B rows; reverse: the first B
                    final = states[-B:] if d == 0 else states[:B]
                outputs.append(states[:, :hout] if lstm else states)
                h_n.append(final[:, :hout] if lstm else final)
                if lstm:
                    c_n.append(final[:, hout:])
            layer_input = outputs[0] if num_directions == 1 else ember.cat(outputs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, ember.stack(h_n), ember.stack(c_n) if lstm else None

    def _forward(self, input, hx, name: str):
        """The forward shared by RNN, LSTM and GRU; hx is a tensor, or (h0, c0) for an LSTM."""
        lstm = self.mode == "LSTM"
        num_directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        orig_input = input
        is_batched = True
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch_size = int(batch_sizes[0])
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                kind = " tensor" if self.mode.startswith("RNN") else ""
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{kind} instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            if hx is not None:
                want = 3 if is_batched else 2
                label = "batched 3-D" if is_batched else "unbatched 2-D"
                if lstm and (hx[0].dim() != want or hx[1].dim() != want):
                    raise RuntimeError(f"For {label} input, hx and cx should also be {want}-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                if not lstm and hx.dim() != want:
                    raise RuntimeError(f"For {label} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
                if not is_batched:
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1)) if lstm else hx.unsqueeze(1)
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
        if hx is None:
            shape = (self.num_layers * num_directions, max_batch_size)
            h0 = ember.zeros(shape + (real_hidden,), dtype=input.dtype, device=input.device)
            hx = (h0, ember.zeros(shape + (self.hidden_size,), dtype=input.dtype, device=input.device)) if lstm else h0
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)

        if batch_sizes is not None:
            rows, sizes = input, [int(n) for n in batch_sizes.tolist()]
        else:
            seq = input.transpose(0, 1) if self.batch_first else input
            T, B = seq.size(0), seq.size(1)
            rows, sizes = seq.reshape(T * B, seq.size(2)), [B] * T
        h_in, c_in = (hx[0], hx[1]) if lstm else (hx, None)
        out_rows, h_n, c_n = self._run_layers(rows, sizes, h_in, c_in)
        hidden: Any = (h_n, c_n) if lstm else h_n

        if batch_sizes is not None:
            return PackedSequence(out_rows, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        output = out_rows.reshape(T, B, out_rows.size(1))
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1)) if lstm else hidden.squeeze(1)
        return output, hidden


class RNN(RNNBase):
    r"""Applies a multi-layer Elman RNN with tanh or ReLU non-linearity to an input sequence:
    :math:`h_t = \tanh(x_t W_{ih}^T + b_{ih} + h_{t-1}W_{hh}^T + b_{hh})`.

    Args: input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx: Optional[Tensor] = None):
        return self._forward(input, hx, "RNN")


class LSTM(RNNBase):
    r"""Applies a multi-layer long short-term memory (LSTM) RNN to an input sequence
    (gates i, f, g, o; with ``proj_size > 0`` the hidden state is projected by ``weight_hr``).

    Args: input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None.
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        return self._state_size(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden, batch_sizes: Optional[Tensor]) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation: Optional[Tensor]):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        return self._forward(input, hx, "LSTM")


class GRU(RNNBase):
    r"""Applies a multi-layer gated recurrent unit (GRU) RNN to an input sequence (gates r, z, n:
    :math:`h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}`).

    Args: input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None.
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Optional[Tensor] = None):
        return self._forward(input, hx, "GRU")


# ---------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Base class of the one-step cells: weight_ih, weight_hh, bias_ih, bias_hh."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        _reset_uniform(self, self.hidden_size)

    def _step(self, name: str, input: Tensor, states, mode: str):
        """One step of the fused kernel; `states` is hx, or (hx, cx) for the LSTM cell."""
        lstm = mode == "LSTM"
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if states is not None:
            for idx, value in enumerate(states if lstm else (states,)):
                if value.dim() not in (1, 2):
                    which = f"hx[{idx}]" if lstm else "hidden"
                    raise ValueError(f"{name}: Expected {which} to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        B = input.size(0)
        if states is None:
            zeros = ember.zeros(B, self.hidden_size, dtype=input.dtype, device=input.device)
            states = (zeros, zeros) if lstm else zeros
        elif not is_batched:
            states = (states[0].unsqueeze(0), states[1].unsqueeze(0)) if lstm else states.unsqueeze(0)
        for idx, value in enumerate(states if lstm else (states,)):
            if value.size(0) != B:
                raise RuntimeError(f"Input batch size {B} doesn't match hidden{idx} batch size {value.size(0)}")
            if value.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{idx} has inconsistent hidden_size: got {value.size(1)}, expected "
                                   f"{self.hidden_size}")
        hx, cx = (states[0], states[1]) if lstm else (states, None)
        out, _ = ember._rnn_fused(input, hx, cx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, None,
                                  [B], mode, False)
        H = self.hidden_size
        result: Any = (out[:, :H], out[:, H:]) if lstm else out
        if not is_batched:
            result = (result[0].squeeze(0), result[1].squeeze(0)) if lstm else result.squeeze(0)
        return result


class RNNCell(RNNCellBase):
    r"""An Elman RNN cell with tanh or ReLU non-linearity:
    :math:`h' = \tanh(W_{ih} x + b_{ih} + W_{hh} h + b_{hh})`."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step("RNNCell", input, hx, "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU")


class LSTMCell(RNNCellBase):
    r"""A long short-term memory (LSTM) cell; returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        return self._step("LSTMCell", input, hx, "LSTM")


class GRUCell(RNNCellBase):
    r"""A gated recurrent unit (GRU) cell."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        return self._step("GRUCell", input, hx, "GRU")
