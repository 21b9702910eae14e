"""The Python surface: binding groups (overloads sharing a Python name), the
argument specs the C++ parser walks, the `_C/*.pyi` stubs and the op reference."""
import keyword
from dataclasses import dataclass, field

from .cpp import literal, value_type
from .signature import NO_DEFAULT, Param, Type

ARG_TYPE = {"Tensor": "Tensor", "int": "Int", "float": "Float", "bool": "Bool", "str": "Str",
            "Scalar": "Scalar", "ScalarType": "ScalarType", "Device": "Device", "Generator": "Generator"}


def arg_type_code(t):
    if t.base == "Tensor" and t.is_list:
        return "OptTensorList" if t.elem_optional else "TensorList"
    if t.base == "int" and t.is_list:
        return "IntList"
    return ARG_TYPE[t.base]


def converter(t):
    base = {"Tensor": "tensor", "int": "int", "float": "double", "bool": "bool", "str": "str",
            "Scalar": "scalar", "ScalarType": "dtype", "Device": "device", "Generator": "generator"}[t.base]
    if t.is_list:
        base = ("opt_tensor_list" if t.elem_optional else "tensor_list") if t.base == "Tensor" else "int_list"
    if t.optional and t.base != "Generator":
        base = "opt_" + base
    return "arg_" + base


def py_default(p):
    v = p.default
    if v is None:
        return "None"
    if isinstance(v, str):
        return repr(v)
    return str(v)


def display_param(p, rename_self):
    name = "input" if (rename_self and p.name == "self") else p.name
    s = f"{p.type} {name}"
    if p.has_default:
        s += f"={py_default(p)}"
    return s


@dataclass
class Overload:
    op: object
    form: str          # function | method | inplace_method
    params: list       # the params Python passes (receiver excluded)
    display: str
    body: str = ""
    allow_number: set = field(default_factory=set)
    has_out: bool = False
    inplace: bool = False


def public_name(op):
    """The name of an op's function in its `python_module:`: without the `<last component>_` prefix
    (linalg_vector_norm is ember.linalg.vector_norm, as in PyTorch); a name without it is kept."""
    prefix = op.python_module.rsplit(".", 1)[-1] + "_"
    if op.python_module and op.name.startswith(prefix) and len(op.name) > len(prefix):
        return op.name[len(prefix):]
    return op.name


def module_table(path):
    """The _C submodule holding the functions of ember namespace `path` ("" is ember itself)."""
    return "_" + path.replace(".", "_") if path else "_VariableFunctions"


@dataclass
class Group:
    pyname: str
    form: str
    overloads: list
    doc: str
    module: str = ""        # the ember namespace of a function ("" is ember itself)
    public_name: str = ""   # its name there

    @property
    def cname(self):
        return f"py_{self.form}_{self.pyname}"


def _out_param():
    return Param("out", Type("Tensor", optional=True), None, kw_only=True)


def _display(name, params, rename_self):
    parts, kw = [], False
    for p in params:
        if p.kw_only and not kw:
            parts.append("*")
            kw = True
        parts.append(display_param(p, rename_self))
    return f"{name}({', '.join(parts)})"


def _work(op):
    """The C++ estimate of an op's work for releasing the GIL (run_op in
    python_support.h), or None when the op never releases it: views cost
    nothing, whatever their size, and an op without tensors or sizes is small."""
    if op.kind == "view":
        return None
    terms = [f"work_of({p.name})" for p in op.sig.params if p.type.base == "Tensor"]
    if op.kind == "factory":
        terms += [f"work_of_size({p.name})" for p in op.sig.params if p.name == "size" and p.type.is_list]
    return " + ".join(terms) or None


def _released(work, call):
    """`call` (a C++ expression or statement) run through run_op when the op can release the GIL."""
    if work is None:
        return call
    if call.endswith(";"):
        return f"run_op({work}, [&] {{ {call} }});"
    return f"run_op({work}, [&] {{ return {call}; }})"


def _body(op, ov, has_out, inplace):
    lines = []
    call_args = []
    work = _work(op)
    for i, p in enumerate(ov.params):
        conv = converter(p.type)
        extra = ", true" if p.name in ov.allow_number else ""
        default = literal(p.default, p.type) if p.has_default else None
        if p.type.base == "Device" and p.type.optional and p.default is None:
            default = "default_factory_device()"  # set_default_device / `with ember.device(...)`
        vt = value_type(p.type)
        if default is None:
            lines.append(f"{vt} {p.name} = {conv}(parsed[{i}]{extra});")
        else:
            lines.append(f"{vt} {p.name} = parsed[{i}] ? {conv}(parsed[{i}]{extra}) : {default};")
    for p in op.sig.params:
        call_args.append(p.name)
    args = ", ".join(call_args)
    if has_out:
        n = len(ov.params)
        lines.append(f"if (parsed[{n}] && parsed[{n}] != Py_None) {{")
        lines.append(f"  Tensor out = arg_tensor(parsed[{n}]);")
        out_work = None if work is None else f"{work} + work_of(out)"
        lines.append("  " + _released(out_work, f"ember::{op.cpp_name}_out(out{', ' + args if args else ''});"))
        lines.append(f"  Py_INCREF(parsed[{n}]); return parsed[{n}];")
        lines.append("}")
    call = _released(work, f"ember::{op.cpp_name}({args})")
    if op.returns_nothing:   # `-> ()`: None, as PyTorch's (its method forms too)
        lines.append(_released(work, f"ember::{op.cpp_name}({args});"))
        if op.is_foreach_inplace and ov.form == "function":
            # PyTorch's bindings return an in-place _foreach_ op's `self` (the list passed), its stubs None.
            lines.append("Py_INCREF(parsed[0]); return parsed[0];")
        else:
            lines.append("Py_RETURN_NONE;")
    elif inplace:
        name = op.cpp_name if op.is_inplace else op.cpp_name + "_"
        lines.append(_released(work, f"ember::{name}({args});"))
        if ov.form == "method":
            lines.append("Py_INCREF(self_obj); return self_obj;")
        else:
            i = [p.name for p in ov.params].index("self")
            lines.append(f"Py_INCREF(parsed[{i}]); return parsed[{i}];")
    elif len(op.sig.returns) > 1:
        lines.append(f"return wrap_tuple({call}, {'nullptr' if op.plain_tuple else 'return_type_' + op.cpp_name});")
    elif ov.form == "method" and op.returns_tensor:
        # `x.to(x.dtype) is x`, as in PyTorch: an op returning its receiver returns the same object.
        lines.append(f"return wrap_same({call}, self_obj);")
    elif op.returns_tensor and "self" in [p.name for p in ov.params] and "self" not in ov.allow_number:
        # Likewise `ember.positive(x) is x`, `ember.zero_(x) is x`.
        lines.append(f"return wrap_same({call}, parsed[{[p.name for p in ov.params].index('self')}]);")
    else:
        lines.append(f"return wrap({call});")
    return "\n      ".join(lines)


def python_groups(model, ops):
    """Binding groups for `ops`, in first-appearance order."""
    groups = {}
    for op in ops:
        forms = []
        if "function" in op.variants:
            forms.append(("function", op.name, False))
        if "method" in op.variants and op.sig.param("self"):
            forms.append(("method", op.name, op.is_inplace))
        if "inplace" in op.derive and op.sig.param("self"):
            # A function-only op's in-place form is a function too (torch.selu_, torch._C._nn.elu_);
            # `inplace_variants:` gives others both forms, as PyTorch's torch.sin_.
            default = ["function"] if op.variants == ["function"] else ["method"]
            forms += [(form, op.name + "_", True) for form in op.inplace_variants or default]
        for form, pyname, inplace in forms:
            params = [p for p in op.sig.params if not (form == "method" and p.name == "self")]
            has_out = "out" in op.derive and not inplace
            shown = params + ([_out_param()] if has_out else [])
            ov = Overload(op, form, params, _display(pyname, shown, form == "function"))
            # A Python number only where PyTorch takes one (a Scalar overload or its wrapped numbers):
            # maximum(t, 2) raises TypeError, as there.
            ov.allow_number = {n for n in op.numbers if n in {p.name for p in params}}
            ov.spec_params = shown
            ov.has_out, ov.inplace = has_out, inplace
            key = (form, pyname)
            if key not in groups:
                module = op.python_module if form == "function" else ""
                public = public_name(op) + pyname[len(op.name):] if module else pyname
                groups[key] = Group(pyname, form, [], op.doc, module, public)
            groups[key].overloads.append(ov)
    for g in groups.values():
        # pow(t, 2) is pow.Tensor_Scalar, not pow with a wrapped number: a Tensor
        # parameter takes no number when another overload has a Scalar of that name.
        scalar_names = {p.name for ov in g.overloads for p in ov.params if p.type.base == "Scalar"}
        for ov in g.overloads:
            ov.allow_number -= scalar_names
            ov.body = _body(ov.op, ov, ov.has_out, ov.inplace)
    return list(groups.values())


def param_spec(p, allow_number):
    t = p.type
    return (f'{{"{p.name}", ArgType::{arg_type_code(t)}, {str(t.optional).lower()}, {str(p.kw_only).lower()}, '
            f'{str(p.has_default).lower()}, {str(allow_number).lower()}, {t.list_size or 0}}}')


# ------------------------------------------------------------------ stubs and docs
# Stub types use _int, _float, _bool: the stub declares dtypes named int, float, bool.
_PYI_TYPE = {"Tensor": "Tensor", "int": "_int", "float": "_float", "bool": "_bool", "str": "str",
             "Scalar": "Number", "ScalarType": "_dtype", "Device": "DeviceLike", "Generator": "Generator"}


def _pyi_type(t, takes_number=False):
    base = _PYI_TYPE[t.base]
    if t.is_list:
        elem = f"Optional[{base}]" if t.elem_optional else base
        base = f"Sequence[{elem}]" + (" | _int" if t.base == "int" else "")
    elif t.base == "Scalar":
        base = "Union[Number, Tensor]"   # a one-element tensor is a Scalar too
    elif takes_number:
        base = "Union[Tensor, Number]"
    if t.optional:
        base = f"Optional[{base}]"
    return base


def _pyi_return_type(op):
    """The stub class of an op returning several tensors: a NamedTuple, as its struct sequence."""
    return f"_return_{op.cpp_name}"


def _pyi_ret(op):
    sig = op.sig
    if op.returns_nothing:
        return "None"
    if len(sig.returns) > 1:
        return f"tuple[{', '.join(['Tensor'] * len(sig.returns))}]" if op.plain_tuple else _pyi_return_type(op)
    t = sig.returns[0].type
    return "tuple[Tensor, ...]" if t.is_list else "Tensor"


def _pyi_params(params, rename_self, numbers=()):
    parts, kw = [], False
    for p in params:
        if p.kw_only and not kw:
            parts.append("*")
            kw = True
        name = "input" if rename_self and p.name == "self" else p.name
        name = name + "_" if keyword.iskeyword(name) else name  # random_'s `from`, spelled as PyTorch's stubs
        s = f"{name}: {_pyi_type(p.type, p.name in numbers)}"
        if p.has_default:
            s += " = ..."
        parts.append(s)
    return parts


def _takes_varargs(params):
    """x.view(2, 3), ember.zeros(2, 3): a leading positional int[] that is the only positional
    parameter also takes its ints as arguments (PyTorch's rule: x.roll(1, 0) is shifts, dims)."""
    return (bool(params) and params[0].type.base == "int" and params[0].type.is_list and not params[0].kw_only
            and (len(params) == 1 or params[1].kw_only))


def _pyi_signatures(ov, name, rename_self):
    """The stub lines of one overload: its signature, and the varargs-sizes form where it has one."""
    params = ov.spec_params
    forms = [_pyi_params(params, rename_self, ov.allow_number)]
    if _takes_varargs(params):
        rest = _pyi_params([p for p in params[1:] if p.has_default or p.kw_only], rename_self, ov.allow_number)
        rest = [r for r in rest if r != "*"]
        forms.append([f"*{params[0].name}: _int"] + rest)
    ret = "Tensor" if ov.form == "method" and name.endswith("_") and not ov.op.returns_nothing else _pyi_ret(ov.op)
    receiver = ["self"] if ov.form == "method" else []
    return [f"def {name}({', '.join(receiver + f)}) -> {ret}: ..." for f in forms]


def _pyi_defs(groups, form, indent="", public=False):
    """The stub lines of the groups of `form` (under their public names when `public`):
    @overload when a name has several signatures."""
    lines = []
    for g in groups:
        if g.form != form:
            continue
        name = g.public_name if public else g.pyname
        sigs = [sig for ov in g.overloads for sig in _pyi_signatures(ov, name, form == "function")]
        # A Scalar also takes a tensor: signatures taking only tensors go first, or mypy finds them
        # unreachable behind it (clamp.Tensor after clamp).
        sigs.sort(key=lambda sig: "Union[Number, Tensor]" in sig)
        for sig in sigs:
            if len(sigs) > 1:
                lines.append(indent + "@overload")
            lines.append(indent + sig)
    return lines


STUB_HEADER = ["# generated by codegen from ops.yaml; do not edit",
               "from builtins import bool as _bool, float as _float, int as _int",
               "from typing import Optional, Sequence, Union, overload", ""]


def pyi_files(model, init_template):
    """The stub package of ember._C: `_C/__init__.pyi` (init_template, a jinja template, given
    TensorBase's generated methods and the op functions by op name) and one stub per
    namespace table (`_C/_VariableFunctions.pyi`, `_C/_linalg.pyi`) with its public names."""
    groups = python_groups(model, model.ops)
    files = {}
    methods = _pyi_defs(groups, "method", "    ")
    functions = _pyi_defs(groups, "function")
    tuples = []
    for op in model.ops:
        if len(op.sig.returns) > 1 and not op.plain_tuple:
            tuples.append(f"class {_pyi_return_type(op)}(NamedTuple):")
            tuples += [f"    {r.name}: Tensor" for r in op.sig.returns]
    files["_C/__init__.pyi"] = init_template.render(methods="\n".join(methods), functions="\n".join(functions),
                                                    return_types="\n".join(tuples))
    for path in [""] + sorted({g.module for g in groups if g.module}):
        mine = [g for g in groups if g.form == "function" and g.module == path]
        names = sorted(g.public_name for g in mine)
        returned = sorted({_pyi_return_type(ov.op) for g in mine for ov in g.overloads
                           if len(ov.op.sig.returns) > 1 and not ov.op.plain_tuple})
        lines = STUB_HEADER + [f"from . import {', '.join(['DeviceLike', 'Generator', 'Number', '_dtype'] + returned)}",
                               "from .._tensor import Tensor", "", f"__all__ = {names!r}", ""]
        lines += _pyi_defs(mine, "function", public=True)
        files[f"_C/{module_table(path)}.pyi"] = "\n".join(lines) + "\n"
    return files


def docs_text(model):
    out = ["# ember op reference", "",
           "Generated from `ops.yaml` by `codegen/`; every op below exists as a function and/or",
           "Tensor method as listed, with the in-place (`op_`) and `out=` variants it derives.", ""]
    for op in model.ops:
        variants = list(op.variants) + [f"{d}" for d in op.derive]
        out.append(f"## `{op.full_name}`")
        out.append("")
        out.append(f"`{op.sig.name}({', '.join(display_param(p, True) for p in op.sig.params)})`")
        out.append("")
        out.append(op.doc)
        out.append("")
        out.append(f"- kind: {op.kind}; variants: {', '.join(variants)}")
        if op.returns_nothing:
            out.append("- returns: nothing (`-> ()`; None in Python)")
        if op.python_module:
            out.append(f"- function: `ember.{op.python_module}.{public_name(op)}`")
        if op.dtypes:
            out.append(f"- dtypes: {', '.join(op.dtypes)}")
        if op.derivative:
            out.append("- differentiable: " + ", ".join(f"`{a}`: `{t}`" for a, t in op.derivative.text.items()))
        out.append("")
    return "\n".join(out)
