"""ember.nn: neural-network building blocks, as torch.nn. So far the functional
interface (ember.nn.functional); modules come with the nn issue."""
from . import functional  # noqa: F401
