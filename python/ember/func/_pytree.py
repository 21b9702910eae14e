"""The nested containers ember.func's transforms walk: tuples, lists, dicts and
namedtuples of leaves (torch.utils._pytree's basic node types); anything else is a leaf."""
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeSpec:
    """The shape of a tree: its node type, context (dict keys, namedtuple class) and children."""

    kind: object          # None for a leaf, else tuple, list, dict or a namedtuple class
    context: object = None
    children: tuple = ()

    def __repr__(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children)) + "}"
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is tuple:
            return f"({inner},)" if len(self.children) == 1 else f"({inner})"
        return f"{self.kind.__name__}({inner})"


LEAF = TreeSpec(None)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree):
    """(leaves in order, spec)."""
    leaves = []

    def walk(node):
        if _is_namedtuple(node):
            return TreeSpec(type(node), None, tuple(walk(c) for c in node))
        if isinstance(node, (tuple, list)):
            return TreeSpec(type(node) if type(node) in (tuple, list) else tuple, None, tuple(walk(c) for c in node))
        if isinstance(node, dict):
            keys = tuple(node)
            return TreeSpec(dict, keys, tuple(walk(node[k]) for k in keys))
        leaves.append(node)
        return LEAF

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, spec):
    """The tree of `spec` holding `leaves` in order."""
    it = iter(leaves)

    def build(s):
        if s.kind is None:
            return next(it)
        children = [build(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.context, children))
        if s.kind in (tuple, list):
            return s.kind(children)
        return s.kind(*children)

    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
