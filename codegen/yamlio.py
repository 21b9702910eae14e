"""YAML loading that remembers the line of every mapping and key."""
import yaml

from .errors import SpecError


class LineDict(dict):
    """A mapping from the spec with `line` (its first line) and `key_lines`."""

    line = 0
    key_lines = {}

    def line_of(self, key):
        return self.key_lines.get(key, self.line)


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader, node):
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise SpecError(loader.name, key_node.start_mark.line + 1, f"duplicate key '{key}'")
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load(path, display_name=None):
    name = display_name or str(path)
    with open(path) as f:
        text = f.read()
    loader = _Loader(text)
    loader.name = name
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise SpecError(name, mark.line + 1 if mark else 0, f"invalid YAML: {e.problem}") from None
    finally:
        loader.dispose()
