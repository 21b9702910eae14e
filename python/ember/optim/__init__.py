"""ember.optim: optimizers (PyTorch's torch.optim)."""
from .optimizer import Optimizer
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD
from . import lr_scheduler, swa_utils

__all__ = ["Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "NAdam", "Optimizer", "RAdam", "RMSprop", "SGD"]
from .adafactor import Adafactor  # noqa: E402  (i12-extras)
from .asgd import ASGD  # noqa: E402
from .muon import Muon  # noqa: E402
from .rprop import Rprop  # noqa: E402

__all__ += ["ASGD", "Adafactor", "Muon", "Rprop"]
