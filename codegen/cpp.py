"""How spec types and values are spelled in C++."""
from .signature import Type

_VALUE = {"int": "int64_t", "float": "double", "bool": "bool", "str": "std::string", "Scalar": "Scalar",
          "ScalarType": "ScalarType", "Device": "Device", "Generator": "Generator*"}


def value_type(t: Type):
    """The C++ type that holds a value of `t` (node fields, locals)."""
    if t.base == "Tensor":
        return "TensorList" if t.is_list else "Tensor"
    if t.base == "Generator":
        return "Generator*"
    base = "IntList" if t.is_list else _VALUE[t.base]
    return f"std::optional<{base}>" if t.optional else base


def param_type(t: Type):
    """The C++ parameter type for `t`."""
    v = value_type(t)
    if v in ("int64_t", "double", "bool", "ScalarType", "Device", "Generator*") or v.startswith("std::optional<int64_t") \
            or v in ("std::optional<double>", "std::optional<bool>", "std::optional<ScalarType>", "std::optional<Device>"):
        return v
    return f"const {v}&"


def return_type(sig):
    rets = sig.returns
    if not rets:   # `-> ()`
        return "void"
    if len(rets) == 1:
        return value_type(rets[0].type)
    return "std::tuple<" + ", ".join(value_type(r.type) for r in rets) + ">"


def literal(value, t: Type):
    if value is None:
        return "Tensor()" if t.base == "Tensor" else ("nullptr" if t.base == "Generator" else "std::nullopt")
    if t.is_list:
        items = value if isinstance(value, list) else [value]
        return "IntList{" + ", ".join(str(int(v)) for v in items) + "}"
    if t.base == "bool":
        return "true" if value else "false"
    if t.base == "str":
        return '"' + value + '"'
    if t.base == "Scalar":
        if isinstance(value, bool):
            return f"Scalar({'true' if value else 'false'})"
        return f"Scalar(int64_t({value}))" if isinstance(value, int) else f"Scalar({float(value)!r})"
    if t.base == "float":
        return repr(float(value))
    return f"int64_t({value})"


def default_cpp(p):
    return literal(p.default, p.type)


def params_decl(params, with_defaults=False):
    parts = []
    for p in params:
        s = f"{param_type(p.type)} {p.name}"
        if with_defaults and p.has_default:
            s += f" = {default_cpp(p)}"
        parts.append(s)
    return ", ".join(parts)


def args_list(params):
    return ", ".join(p.name for p in params)
