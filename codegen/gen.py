"""Renders the model into the build tree. Files are written only when their
content changes, so an edit to one op recompiles only what depends on it."""
import ast
import re
import zlib
from pathlib import Path

import jinja2

from . import expr
from .cpp import args_list, literal, param_type, params_decl, return_type, value_type
from .formula import GEOMETRY, emit_formulas, geometry_members
from .forward import forward_plan
from .python import docs_text, param_spec, pyi_files, python_groups

DTYPE_ENUM = {"bool": "Bool", "uint8": "UInt8", "int8": "Int8", "int16": "Int16", "int32": "Int32",
              "int64": "Int64", "float16": "Float16", "bfloat16": "BFloat16", "float32": "Float32",
              "float64": "Float64"}
DTYPE_CPP = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
             "int64": "int64_t", "float16": "Half", "bfloat16": "BFloat16", "float32": "float",
             "float64": "double"}
TEMPLATES = Path(__file__).parent / "templates"


def shard_of(op, shards):
    return zlib.crc32(op.name.encode()) % shards


# Where generated or hand-written C++ names an op: qualified (`dispatch::add`,
# `ember::sum`, `cpu::mm_cpu`) or called unqualified inside namespace ember.
QUALIFIED_NAME = re.compile(r"\b(?:ember|dispatch|native|cpu|cuda)::(\w+)")
PLAIN_CALL = re.compile(r"(?<![\w.:>])(\w+)\s*\(")
COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
OP_INCLUDES = "// @op-includes@\n"


class OpHeaders:
    """Which ember/ops/<name>.h a piece of C++ needs: the ops whose functions,
    dispatch tables or kernels it names."""

    def __init__(self, ops):
        # An op's own name wins over another op's derived name (dropout_ is an op and dropout's in-place form).
        self.header_of = {op.cpp_name: op.name for op in ops}
        for op in ops:
            names = [op.cpp_name + "_", op.cpp_name + "_out", op.cpp_name + "_fn"]
            names += list(op.kernels.values()) if op.kind == "kernel" else []
            for n in names:
                self.header_of.setdefault(n, op.name)

    def used(self, text):
        text = COMMENT_OR_STRING.sub(" ", text)
        tokens = set(QUALIFIED_NAME.findall(text)) | set(PLAIN_CALL.findall(text))
        return sorted({self.header_of[t] for t in tokens if t in self.header_of})

    def include_lines(self, text):
        return "".join(f'#include "ember/ops/{name}.h"\n' for name in self.used(text))


def camel(name):
    return "".join(part.capitalize() for part in name.strip("_").split("_"))


def node_name(op):
    if op.derivative and op.derivative.name:
        return op.derivative.name
    return camel(op.name) + "Backward" + ("1" if op.sig.overload else "0")


def node_struct(model, op):
    """The C++ type of an op's node: its name, unless ops share that name (selu's and elu's
    EluBackward0, as PyTorch's), then the name and the op."""
    name = node_name(op)
    shared = sum(1 for o in model.ops if o.derivative and node_name(o) == name) > 1
    return name + camel(op.cpp_name) if shared else name


def trailing_default_params(params):
    """C++ default arguments only for the trailing run of defaulted params."""
    n = len(params)
    while n > 0 and params[n - 1].has_default:
        n -= 1
    return n


def decl(name, ret, params):
    first = trailing_default_params(params)
    parts = []
    for i, p in enumerate(params):
        s = f"{param_type(p.type)} {p.name}"
        if i >= first:
            s += f" = {literal(p.default, p.type)}"
        parts.append(s)
    return f"{ret} {name}({', '.join(parts)})"


def dtype_array(dtypes):
    return ", ".join(f"ScalarType::{DTYPE_ENUM[d]}" for d in dtypes)


class OpGen:
    """Everything the templates need about one op, spelled in C++."""

    def __init__(self, model, op):
        self.op, self.model = op, model
        sig = op.sig
        self.name, self.cpp = op.name, op.cpp_name
        self.params = sig.params
        self.ret = return_type(sig)
        self.params_decl = params_decl(sig.params)
        self.args = args_list(sig.params)
        self.tensor_params = [p for p in sig.params if p.type.is_tensor]
        self.scalar_params = [p for p in sig.params if p.type.base == "Scalar"]
        self.decl = decl(f"{self.cpp}", self.ret, sig.params)
        self.has_inplace = "inplace" in op.derive
        self.has_out = "out" in op.derive
        self.inplace_decl = decl(f"{self.cpp}_", "Tensor", sig.params) if self.has_inplace else None
        out_param = "const Tensor& out"
        self.out_decl = (f"Tensor {self.cpp}_out({out_param}" + (", " + params_decl(sig.params) if sig.params else "")
                         + ")") if self.has_out else None
        self.out_args = "out" + (", " + self.args if self.args else "")
        self.dtypes = dtype_array(op.dtypes)
        self.num_dtypes = len(op.dtypes)
        self.node = self._node() if op.derivative else None
        # Forward AD: the dual path of the op and of its derived in-place form ("absent" when no_forward:).
        self.fw = self._forward(False) if op.derivative else None
        self.fw_inplace = self._forward(True) if op.derivative and self.has_inplace and op.kind == "pointwise" else None
        self.device_expr = self._device_expr()

    def traced_entry(self, variant):
        """One C++ entry point with its trace hook: `variant` is "" (the op), "inplace" or "out".
        The entry checks trace::enabled() and runs `<fn>_untraced` (the body) or, when a handler
        is installed, `<fn>_traced`, which reports the call under PyTorch's names for it."""
        op, params = self.op, self.params
        name, overload, fn, ret = op.name, op.sig.overload, self.cpp, self.ret
        params_text, args = self.params_decl, self.args
        trace_params = [(p.name, p.kw_only) for p in params]
        if variant == "inplace":
            name, fn, ret = name + "_", fn + "_", "Tensor"
        elif variant == "out":   # PyTorch's add.out: `out` is the last, keyword-only parameter
            overload = overload + "_out" if overload else "out"
            fn, ret = fn + "_out", "Tensor"
            params_text = "const Tensor& out" + (", " + params_text if params_text else "")
            args = self.out_args
            trace_params.append(("out", True))
        returns = len(op.sig.returns) if variant == "" else 1
        outputs = [f"std::get<{i}>(result__)" for i in range(returns)] if returns != 1 else ["result__"]
        return {
            "fn": fn, "ret": ret, "void": ret == "void", "params": params_text, "args": args, "name": name,
            "overload": overload,
            "trace_params": ", ".join(f'{{"{n}", {"true" if kw else "false"}}}' for n, kw in trace_params),
            "num_params": len(trace_params),
            "trace_args": ", ".join(n for n, _ in trace_params),
            "trace_outputs": ", ".join(outputs),
        }

    def autocast(self):
        """The op's autocast wrapper: per device type, the C++ call of the entry with its arguments cast
        by the policy (PyTorch's autocast_mode.h WrapFunction_), or None without `autocast:`."""
        if not self.op.autocast:
            return None
        plain = ", ".join(f"&{p.name}" for p in self.tensor_params)
        lists = ", ".join(f"&{p.name}" for p in self.params if p.type.is_tensor_list)
        cases = []
        for device, policy in self.op.autocast.items():
            enum = f"DeviceType::{device.upper()}"
            to = {"lower": f"autocast::dtype({enum})", "fp32": "ScalarType::Float32",
                  "promote": f"autocast::promote_type({enum}, {{ {plain} }}, {{ {lists} }})"}.get(policy)
            if policy == "banned":  # PyTorch's binary_cross_entropy under CUDA autocast
                call = f'autocast::banned("{self.name}")'
            elif policy == "fp32_set_opt_dtype":  # dtype=None turns float32 when the first tensor is eligible
                first = self.tensor_params[0].name if self.tensor_params else None
                args = ", ".join("dtype ? dtype : std::optional<ScalarType>(ScalarType::Float32)" if p.name == "dtype"
                                 else p.name for p in self.params)
                call = f"autocast::eligible({first}, {enum}) ? {self.cpp}({args}) : {self.cpp}({self.args})"
            else:
                args = ", ".join(f"autocast::cast(to__, {p.name}, {enum})" if p.type.base == "Tensor" else p.name
                                 for p in self.params)
                call = f"{self.cpp}({args})"
            cases.append({"device": enum, "to": to, "call": call, "banned": policy == "banned"})
        return {"tensors": plain, "lists": lists, "cases": cases}

    def overlap_checks(self, written, op_name, internal=True):
        """C++ statements checking that `written` does not overlap itself (when `internal`)
        or partly overlap a tensor argument, as PyTorch's in-place and out= writes do."""
        inputs = [p for p in self.params if p.type.base == "Tensor" and p.name != written]
        lists = [p.name for p in inputs if p.type.is_tensor_list]
        plain = [p.name for p in inputs if not p.type.is_tensor_list]
        checks = []
        if internal:
            ptrs = ", ".join(f"&{n}" for n in plain)
            checks.append(f'check_write_overlap({written}, {{ {ptrs} }}, "{op_name}");')
        else:
            checks += [f'check_no_partial_overlap({written}, {n}, "{op_name}");' for n in plain]
        checks += [f'check_no_partial_overlap({written}, {n}, "{op_name}");' for n in lists]
        return checks

    def out_overlap_checks(self):
        """The checks of a derived non-pointwise out=: no internal overlap; with `out_overlap: partial`
        no input sharing part of out's memory (PyTorch's TensorIterator ops), with `any` none at all (cat)."""
        if self.op.out_overlap == "partial":
            return self.overlap_checks("out", self.name)
        inputs = [p.name for p in self.params if p.type.base == "Tensor"] if self.op.out_overlap == "any" else []
        return ([f'check_no_internal_overlap(out, "{self.name}");']
                + [f'check_no_overlap(out, {n}, "{self.name}");' for n in inputs])

    def args_cloning_self(self, cond):
        """The call arguments, with `self` passed as a clone when C++ `cond` holds."""
        return ", ".join(f"{cond} ? ember::clone(self) : self" if p.name == "self" else p.name for p in self.params)

    def any_requires_grad(self):
        """C++: grad mode is on and a tensor argument requires grad."""
        plain = ", ".join(f"&{p.name}" for p in self.tensor_params)
        terms = [f"autograd::any_requires_grad({{ {plain} }})"]
        terms += [f"autograd::any_requires_grad({p.name})" for p in self.params if p.type.is_tensor_list]
        return " || ".join(terms)

    def _device_expr(self):
        for p in self.params:
            if p.type.is_tensor and p.type.base == "Tensor" and not p.type.optional:
                return f"{p.name}.device()"
            if p.type.is_tensor_list:
                return f"first_device({p.name}, \"{self.name}\")"
        return "Device()"

    # ------------------------------------------------------------ autograd
    def _forward(self, inplace):
        plan = forward_plan(self.model, self.op, inplace=inplace or self.op.is_inplace)
        if plan is None:
            return {"absent": True}
        returns = [r.name for r in self.op.sig.returns]
        guard = lambda t: " || ".join(f"has_{g}_t" for g in t.guard) or "true"  # noqa: E731
        plan.update({
            "absent": False,
            "self_guard": " || ".join(guard(t) for t in plan["terms"] if t.reads_self),
            "inplace": inplace or self.op.is_inplace,
            "returns": returns,
            "may_alias": self.op.kind == "view",
            "tangent_ptrs": ", ".join(f"&{t}_t" for t in plan["tangents"]),
            "terms": [{"cpp": t.cpp, "zeros": t.zeros, "guard": guard(t)} for t in plan["terms"]],
        })
        return plan

    def _node(self):
        op = self.op
        formulas, used, shapes, groups = emit_formulas(self.model, op)
        diff = [p for p in op.sig.params if p.name in formulas]
        ret_names = [r.name for r in op.sig.returns]
        saved_inputs, saved_outputs, values = [], [], []
        for name in sorted(used, key=lambda n: ([p.name for p in op.sig.params] + ret_names).index(n)):
            p = op.sig.param(name)
            users = [i for i, d in enumerate(diff) if name in _names_in(op.derivative.formulas[d.name])]
            cond = " || ".join(f"node->should_compute({i})" for i in users) or "true"
            if p is None:
                saved_outputs.append({"name": name, "cond": cond, "is_output": name == ret_names[0],
                                      "index": ret_names.index(name)})
            elif p.type.is_tensor:
                saved_inputs.append({"name": name, "cond": cond})
            else:
                values.append({"name": name, "type": value_type(p.type)})
        return {
            "name": node_name(op),
            "name_if_given": [{"arg": a, "name": n} for a, n in op.derivative.name_if_given.items()],
            "struct": node_struct(self.model, op),
            "diff": [{"name": d.name, "index": i, "formula": formulas[d.name], "is_list": d.type.is_list}
                     for i, d in enumerate(diff)],
            "groups": [{"var": g["var"], "cpp": g["cpp"],
                        "cond": " || ".join(f"should_compute({[d.name for d in diff].index(a)})" for a in g["args"])}
                       for g in groups],
            "saved_inputs": saved_inputs,
            "saved_outputs": saved_outputs,
            "fields": values,
            "shapes": geometry_members(shapes),
            "requires": ", ".join(f"&{d.name}" for d in diff if not d.type.is_list),
        }

    # ------------------------------------------------------------ pointwise
    def pointwise(self):
        op = self.op
        inputs = self.tensor_params
        bool_input = next((i for i, p in enumerate(inputs) if op.cast.get(p.name) == "bool"), -1)
        names = {p.name: p.name for p in inputs + self.scalar_params}
        body = expr.scalar_cpp(op.scalar, names)
        nonzero = nonnegative = None
        if op.nonzero:
            nonzero = 1 + [p.name for p in inputs].index(op.nonzero)
        if op.nonnegative:   # a tensor input by operand index, a Scalar argument by name
            tensor_names = [p.name for p in inputs]
            nonnegative = (1 + tensor_names.index(op.nonnegative) if op.nonnegative in tensor_names
                           else op.nonnegative)
        members = []
        inits = []
        for p in self.scalar_params:
            if p.type.optional:
                members.append(f"math::Opt<M> {p.name};")
                inits.append(f"math::Opt<opmath_t<T>>{{{p.name} ? checked_scalar<T, opmath_t<T>>(*{p.name}) : opmath_t<T>(), {p.name}.has_value()}}")
            else:
                members.append(f"M {p.name};")
                inits.append(f"checked_scalar<T, opmath_t<T>>({p.name})")
        in_types = ["bool" if i == bool_input else "T" for i in range(len(inputs))]
        specials = [{
            "functor": f"{self.cpp}_special{i}",
            "text": case.scalar_text,
            "body": expr.scalar_cpp(case.scalar, names),
            "when": expr.scalar_cpp(case.when, {p.name: f"f.{p.name}" for p in self.scalar_params}),
            "enums": [DTYPE_ENUM[d] for d in case.dtypes],
        } for i, case in enumerate(op.special)]
        return {
            "promote": {"common": "Common", "float": "Float", "bool": "Bool"}[op.promote],
            "bool_input": bool_input,
            "out_type": "bool" if op.promote == "bool" else "T",
            "inputs": [{"name": p.name, "type": t} for p, t in zip(inputs, in_types)],
            "members": members,
            "inits": ", ".join(inits),
            "body": body,
            "specials": specials,
            "specials_of": {DTYPE_ENUM[d]: [sp for sp in specials if DTYPE_ENUM[d] in sp["enums"]] for d in op.dtypes},
            "copy_members": ", ".join(f"f.{p.name}" for p in self.scalar_params),
            "input_ptrs": ", ".join(f"&{p.name}" for p in inputs),
            "promote_scalars": ", ".join(
                (f"{p.name} ? &*{p.name} : nullptr" if p.type.optional else f"&{p.name}")
                for p in self.scalar_params if p.name in self.op.promote_scalars),
            "scalar_params": params_decl(self.scalar_params),
            "scalar_args": args_list(self.scalar_params),
            "dtypes_cpp": [(DTYPE_ENUM[d], DTYPE_CPP[d]) for d in op.dtypes],
            "nonzero": nonzero,
            "nonnegative": nonnegative,
            "require_one_of": op.require_one_of,
            "same_dtype": [{"name": n, "any_0d": rule == "unless_0d"} for n, rule in op.same_dtype.items()],
        }

    # ------------------------------------------------------------ reduction
    def reduction(self):
        op = self.op
        red = op.reduce
        init = red["init"]
        init_cpp = {"lowest": "lowest_value<T>()", "highest": "highest_value<T>()"}.get(str(init), f"T({init})")
        compute = [d for d in op.dtypes if d not in ("float16", "bfloat16")]
        if any(d in op.dtypes for d in ("float16", "bfloat16")) and "float32" not in compute:
            compute.append("float32")
        if red["result"] == "long_for_integral":
            compute = [d for d in compute if d not in ("bool", "uint8", "int8", "int16", "int32")]
            if "int64" not in compute:
                compute.append("int64")
        if red["result"] == "bool":
            compute = ["bool"]
        dim = op.sig.param("dim")
        dtype = op.sig.param("dtype")
        return {
            "init": init_cpp,
            "combine": expr.scalar_cpp(red["combine"], {"a": "a", "b": "b"}),
            "result": {"same": "Same", "long_for_integral": "LongForIntegral", "bool": "Bool"}[red["result"]],
            "require_nonempty": "true" if str(init) in ("lowest", "highest") else "false",
            "dim": "reduce_dims_arg(dim)" if dim else "std::nullopt",
            "keepdim": "keepdim" if op.sig.param("keepdim") else "false",
            "dtype": "dtype" if dtype else "std::nullopt",
            "compute_cpp": [(DTYPE_ENUM[d], DTYPE_CPP[d]) for d in compute],
        }

    # ------------------------------------------------------------ python
    def kernel_decl(self, fname):
        return f"{self.ret} {fname}({params_decl(self.params)})"


def _names_in(tree):
    """The names a formula reads as values (not called functions): in `strides(x)` x is read
    for its geometry only, which the node saves apart from x."""
    skip = {id(c.func) for c in ast.walk(tree) if isinstance(c, ast.Call)}
    skip |= {id(c.args[0]) for c in ast.walk(tree)
             if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in GEOMETRY and c.args}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in skip}


class Writer:
    def __init__(self, out):
        self.out, self.changed = Path(out), 0

    def write(self, rel, text):
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.read_text() == text:
            return
        path.write_text(text)
        self.changed += 1

    def prune(self, rel_dir, keep):
        """Removes generated files of `rel_dir` not in `keep` (an op that left ops.yaml)."""
        for path in (self.out / rel_dir).glob("*.*"):
            if path.name not in keep:
                path.unlink()
                self.changed += 1


KERNEL_KINDS = ("pointwise", "reduction")


def kernel_names(model):
    """The op names whose kernels are generated (kernels/<name>.cpp), in ops.yaml order."""
    return list(dict.fromkeys(op.name for op in model.ops if op.kind in KERNEL_KINDS))


def generate(model, out, shards, cuda):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.filters["cpp_param"] = param_type
    env.filters["addr"] = lambda name: "&" + name
    env.filters["squote"] = lambda name: f"'{name}'"
    env.filters["param_spec"] = param_spec
    env.filters["cstring"] = lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    gens = [OpGen(model, op) for op in model.ops]
    w = Writer(out)

    headers = OpHeaders(model.ops)

    def render(template, rel, **ctx):
        text = f"// generated from codegen/templates/{template}; do not edit\n" + env.get_template(template).render(**ctx)
        if OP_INCLUDES in text:  # the op headers this file's own code names
            text = text.replace(OP_INCLUDES, headers.include_lines(text.replace(OP_INCLUDES, "")))
        w.write(rel, text)

    by_name = {}
    for g in gens:
        by_name.setdefault(g.op.name, []).append(g)
    for name, group in by_name.items():
        render("op.h.j2", f"ember/ops/{name}.h", name=name, ops=group)
    w.prune("ember/ops", {f"{name}.h" for name in by_name})
    render("ops.h.j2", "ember/ops.h", names=sorted(by_name))
    for k in range(shards):
        mine = [g for g in gens if shard_of(g.op, shards) == k]
        render("ops.cpp.j2", f"ops_{k}.cpp", ops=mine, shard=k)
        render("python_ops.cpp.j2", f"python_ops_{k}.cpp", groups=python_groups(model, [g.op for g in mine]), shard=k)
    # Kernels are the heaviest to compile (every dtype of every op): one file
    # per op, so an edit recompiles that op's kernels only.
    for name in kernel_names(model):
        group = [g for g in by_name[name] if g.op.kind in KERNEL_KINDS]
        called = {f for g in group if g.op.scalar is not None for f in expr.called_functions(g.op.scalar)}
        render("functors.h.j2", f"ember/functors/{name}.h", ops=group, extra_math=bool(called & expr.EXTRA_FUNCTIONS))
        render("kernels.cpp.j2", f"kernels/{name}.cpp", ops=group, name=name)
        if cuda:
            render("kernels.cu.j2", f"kernels/{name}.cu", ops=group, name=name)
    w.prune("ember/functors", {f"{n}.h" for n in kernel_names(model)})
    w.prune("kernels", {f"{n}.{ext}" for n in kernel_names(model) for ext in (("cpp", "cu") if cuda else ("cpp",))})
    render("register_cpu.cpp.j2", "register_cpu.cpp", ops=gens)
    render("python_ops_index.cpp.j2", "python_ops.cpp", shards=range(shards))
    if cuda:
        render("register_cuda.cpp.j2", "register_cuda.cpp", ops=gens)
    stubs = pyi_files(model, env.get_template("_C.pyi.j2"))
    for rel, text in stubs.items():
        w.write(rel, text)
    w.prune("_C", {Path(rel).name for rel in stubs})
    w.write("ops.md", docs_text(model))
    return w.changed
