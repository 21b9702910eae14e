"""ember.layout and its one value, ember.strided (torch.layout / torch.strided): ember's tensors are all dense."""


class layout:
    """The memory layout of a tensor (Tensor.layout); ember has only `ember.strided`."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name  # pickled by reference, as torch's layouts


layout.__module__ = "ember"
strided = layout("strided")
