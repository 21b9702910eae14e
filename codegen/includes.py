"""python -m codegen.includes [--check] FILE...: sets the `#include "ember/ops/<name>.h"`
lines of each hand-written C++ file that has any (or the umbrella ember/ops.h) to the
ops it names (OpHeaders' rule), so a file recompiles only when an op it calls
changes. --check only reports files whose lines differ (exit 1)."""
import argparse
import re
import sys
from pathlib import Path

from .gen import OpHeaders
from .model import load_model

ROOT = Path(__file__).resolve().parent.parent
OP_INCLUDE = re.compile(r'^#include "ember/ops(?:/\w+)?\.h"\n', re.M)


def wanted_text(text, headers):
    """`text` with its op includes replaced by the computed ones, placed where the first was."""
    found = OP_INCLUDE.search(text)
    if not found:
        return text
    body = OP_INCLUDE.sub("", text)
    return body[:found.start()] + headers.include_lines(body) + body[found.start():]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m codegen.includes", description=__doc__)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    model = load_model(ROOT / "ops.yaml", ROOT / "derivatives.yaml")
    headers = OpHeaders(model.ops)
    bad = []
    for f in map(Path, args.files):
        text = f.read_text()
        want = wanted_text(text, headers)
        if want != text:
            if args.check:
                bad.append(f"{f}: op includes should be {', '.join(headers.used(OP_INCLUDE.sub('', text)))}")
            else:
                f.write_text(want)
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
