"""The core calls down only (docs/ARCHITECTURE.md, "Layers"): aten/src/core and
every header it includes, directly or not, compile from aten/ alone, without a
generated header (ember/ops/<name>.h, ember/ops.h, ember/functors/) and
without the op layer's hand-written headers. The core reaches device kernels
through its own dispatch table (ember/dispatch.h), never through an op."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
GENERATED = ("ember/ops/", "ember/ops.h", "ember/functors/")
# Hand-written headers of the layers above the core: the op entries' support and signatures,
# the derivative helpers, the registration of the generated tables.
ABOVE_CORE = ("ember/op_support.h", "ember/op_signatures.h", "ember/autograd_helpers.h", "ember/register_kernels.h")


def core_sources(root):
    core = root / "aten" / "src" / "core"
    return sorted(p for p in core.iterdir() if p.suffix in (".cpp", ".h"))


def resolve(include, including, root):
    for base in (including.parent, root / "aten" / "include"):
        candidate = base / include
        if candidate.is_file():
            return candidate
    return None


def layering_violations(root):
    """One line per include in the core's closure that leaves the core, with the chain that reaches it."""
    problems = []
    seen = set()
    stack = [(src, [src.relative_to(root).as_posix()]) for src in core_sources(root)]
    while stack:
        path, chain = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        for include in INCLUDE.findall(path.read_text()):
            reach = " -> ".join(chain + [include])
            if include.startswith(GENERATED):
                problems.append(f"{reach}: a generated op header (the core calls no op)")
            elif include in ABOVE_CORE:
                problems.append(f"{reach}: a header of a layer above the core")
            else:
                target = resolve(include, path, root)
                if target is None:
                    problems.append(f"{reach}: not in aten/ (the core compiles without generated files)")
                else:
                    stack.append((target, chain + [include]))
    return sorted(problems)


def test_core_includes_no_op_layer_header():
    problems = layering_violations(ROOT)
    assert not problems, "the core includes headers from above it:\n" + "\n".join(problems)


def test_core_sources_exist():
    names = {p.name for p in core_sources(ROOT)}
    assert {"tensor.cpp", "iterator.cpp", "reduce.cpp", "index_plan.cpp", "dispatch.cpp"} <= names


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_layering_check_names_direct_and_transitive_includes(tmp_path):
    write_tree(tmp_path, {
        "aten/src/core/a.cpp": '#include "ember/ops/copy_.h"\n#include <vector>\n',
        "aten/src/core/b.cpp": '#include "ember/tensor.h"\n',
        "aten/include/ember/tensor.h": '#pragma once\n#include "ember/helper.h"\n',
        "aten/include/ember/helper.h": '#include "ember/op_support.h"\n#include "ember/missing.h"\n',
        "aten/include/ember/op_support.h": '#include "ember/ops/to.h"\n',
    })
    assert layering_violations(tmp_path) == [
        "aten/src/core/a.cpp -> ember/ops/copy_.h: a generated op header (the core calls no op)",
        "aten/src/core/b.cpp -> ember/tensor.h -> ember/helper.h -> ember/missing.h: not in aten/ "
        "(the core compiles without generated files)",
        "aten/src/core/b.cpp -> ember/tensor.h -> ember/helper.h -> ember/op_support.h: a header of a layer "
        "above the core",
    ]


def test_layering_check_passes_a_clean_core(tmp_path):
    write_tree(tmp_path, {
        "aten/src/core/a.cpp": '#include "ember/tensor.h"\n#include "local.h"\n',
        "aten/src/core/local.h": '#pragma once\n#include "ember/tensor.h"\n',
        "aten/include/ember/tensor.h": '#pragma once\n',
    })
    assert layering_violations(tmp_path) == []
