"""Checks that the `test:` entries of ops.yaml say something the harness can run.

The rest of each entry, derivatives.yaml included, codegen's model checks as it loads.
"""
from .samples import GENERATORS

# Keys a `test:` entry may use; anything else is a typo the lint test reports.
TEST_KEYS = {"samples", "cases", "ref", "kwargs", "domain_a", "domain_b", "distinct",
             "specials", "tol", "dtypes", "grad", "no_gradgrad", "skip"}
CASE_KEYS = {"shape", "args", "kwargs", "noncontig"}
DOMAINS = {"positive", "nonzero", "small", "distinct", "near_one", "away_from_bounds", "open_unit", "above_one"}


def lint(spec):
    problems = []
    for op in spec.ops:
        where = f"ops.yaml:{op.line}: {op.full_name}"
        t = op.test
        if not t:
            problems.append(f"{where}: no test: entry (give one, or `skip:` with a reason)")
            continue
        if "skip" in t:
            if not isinstance(t["skip"], str) or not t["skip"].strip():
                problems.append(f"{where}: test: skip: needs a reason")
            continue
        if not op.sig.returns:   # the harness compares results with its ref
            problems.append(f"{where}: an op returning nothing (`-> ()`) has no result to compare: give `skip:` "
                            "naming the test of what it writes")
            continue
        unknown = set(t) - TEST_KEYS
        if unknown:
            problems.append(f"{where}: unknown test keys {sorted(unknown)}")
        if ("samples" in t) == ("cases" in t):
            problems.append(f"{where}: test: needs exactly one of samples: and cases:")
        if "samples" in t and t["samples"] not in GENERATORS:
            problems.append(f"{where}: unknown sample generator {t['samples']!r}")
        if t.get("samples", "").startswith("reduction") and t["samples"] != "reduction_all" and op.sig.param("dim") is None:
            problems.append(f"{where}: samples: {t['samples']} needs a `dim` parameter")
        if not isinstance(t.get("ref"), str):
            problems.append(f"{where}: test: needs a ref: expression")
        else:
            try:
                compile(t["ref"], where, "eval")
            except SyntaxError as e:
                problems.append(f"{where}: ref does not parse: {e}")
        for key in ("domain_a", "domain_b"):
            if key in t and t[key] not in DOMAINS:
                problems.append(f"{where}: unknown {key} {t[key]!r}")
        for kw in t.get("kwargs") or []:
            if not isinstance(kw, dict):
                problems.append(f"{where}: kwargs: must be a list of mappings")
                continue
            for k in kw:
                if op.sig.param(k) is None:
                    problems.append(f"{where}: kwargs names {k!r}, which is not a parameter")
        for case in t.get("cases") or []:
            if not isinstance(case, dict) or set(case) - CASE_KEYS:
                problems.append(f"{where}: a case may only use {sorted(CASE_KEYS)}: {case!r}")
        if "dtypes" in t and op.dtypes:
            problems.append(f"{where}: test: dtypes: is ignored, the op declares dtypes:")
        if "no_gradgrad" in t and (not isinstance(t["no_gradgrad"], str) or not t["no_gradgrad"].strip()):
            problems.append(f"{where}: no_gradgrad: needs the reason the op has no second derivative")
        tol = t.get("tol") or {}
        if not isinstance(tol, dict):
            problems.append(f"{where}: tol: must be a mapping")
    return problems
