"""Checks that the `test:` entries of ops.yaml (and derivatives.yaml) say something the harness can run."""
from .rules import REDUCE_RESULTS
from .samples import GENERATORS
from .spec import CASE_KEYS, DOMAINS, TEST_KEYS


def lint(spec):
    problems = list(spec.errors)
    names = {op.full_name: op for op in spec.ops}
    for op in spec.ops:
        where = f"ops.yaml:{op.line}: {op.full_name}"
        if op.reduce and op.reduce.get("result") not in REDUCE_RESULTS:
            problems.append(f"{where}: reduce: result: {op.reduce.get('result')!r} is not one of {REDUCE_RESULTS}")
        if op.promote not in (None, "common", "float", "bool"):
            problems.append(f"{where}: promote: {op.promote!r} is not common, float or bool")
        t = op.test
        if t is None:
            problems.append(f"{where}: no test: entry (give one, or `skip:` with a reason)")
            continue
        if "skip" in t:
            if not isinstance(t["skip"], str) or not t["skip"].strip():
                problems.append(f"{where}: test: skip: needs a reason")
            continue
        unknown = set(t) - TEST_KEYS
        if unknown:
            problems.append(f"{where}: unknown test keys {sorted(unknown)}")
        if ("samples" in t) == ("cases" in t):
            problems.append(f"{where}: test: needs exactly one of samples: and cases:")
        if "samples" in t and t["samples"] not in GENERATORS:
            problems.append(f"{where}: unknown sample generator {t['samples']!r}")
        if t.get("samples", "").startswith("reduction") and t["samples"] != "reduction_all" and op.param("dim") is None:
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
                if op.param(k) is None:
                    problems.append(f"{where}: kwargs names {k!r}, which is not a parameter")
        for case in t.get("cases") or []:
            if not isinstance(case, dict) or set(case) - CASE_KEYS:
                problems.append(f"{where}: a case may only use {sorted(CASE_KEYS)}: {case!r}")
        if "dtypes" in t and op.dtypes is not None:
            problems.append(f"{where}: test: dtypes: is ignored, the op declares dtypes:")
        tol = t.get("tol") or {}
        if not isinstance(tol, dict):
            problems.append(f"{where}: tol: must be a mapping")
    for name, keys in spec.derivative_keys.items():
        op = names.get(name)
        if op is None:
            problems.append(f"derivatives.yaml: {name}: no such op in ops.yaml")
            continue
        params = {p.name for p in op.params if p.is_tensor or p.is_tensor_list}
        for k in keys - {"op", "name", "result", "output_differentiability"}:
            if k not in params:
                problems.append(f"derivatives.yaml: {name}: {k!r} is not a tensor input of the op")
    return problems
