"""python -m codegen --ops ops.yaml --derivatives derivatives.yaml --out DIR [--cuda] [--list-kernels]"""
import argparse
import sys

from .errors import SpecError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    ap.add_argument("--ops", required=True)
    ap.add_argument("--derivatives", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shards", type=int, default=4, help="files for op entries and bindings")
    ap.add_argument("--list-kernels", action="store_true",
                    help="only print the op names that get a kernels/<name>.cpp (for CMake)")
    ap.add_argument("--cuda", action="store_true", help="also write the CUDA kernels and registration")
    args = ap.parse_args(argv)
    from .gen import generate, kernel_names
    from .model import load_model
    try:
        model = load_model(args.ops, args.derivatives)
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.list_kernels:
        print(";".join(kernel_names(model)))
        return 0
    written = generate(model, args.out, args.shards, args.cuda)
    print(f"codegen: {len(model.ops)} ops, {written} files changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
