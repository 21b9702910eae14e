from . import _C


class Size(tuple):
    """A tensor's shape: a tuple of ints, printed as ember.Size([2, 3])."""

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


_C._set_size_type(Size)
