"""The nn modules, one file per topic as torch.nn.modules; nn/__init__ re-exports them."""
from .module import Module  # noqa: F401  (first: every other module subclasses it)
from .container import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401

__all__ = ["Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
