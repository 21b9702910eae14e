"""A real parser for op signatures, e.g.
`sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor`.
"""
import re
from dataclasses import dataclass, field

BASE_TYPES = ("Tensor", "int", "float", "bool", "str", "Scalar", "ScalarType", "Device", "Generator")
NO_DEFAULT = object()

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<arrow>->)
  | (?P<number>-?\d+\.\d*(?:e-?\d+)?|-?\d+(?:e-?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<string>'[^']*'|"[^"]*")
  | (?P<punct>[()\[\],*=?.])
""", re.VERBOSE)


class SignatureError(Exception):
    pass


@dataclass(frozen=True)
class Type:
    base: str
    is_list: bool = False
    list_size: int = None      # int[1]: a single int is accepted for the list
    optional: bool = False      # the value may be None
    elem_optional: bool = False  # Tensor?[]: entries may be None

    def __str__(self):
        s = self.base + ("?" if self.elem_optional else "")
        if self.is_list:
            s += f"[{self.list_size or ''}]"
        return s + ("?" if self.optional else "")

    @property
    def is_tensor(self):
        return self.base == "Tensor" and not self.is_list

    @property
    def is_tensor_list(self):
        return self.base == "Tensor" and self.is_list


@dataclass
class Param:
    name: str
    type: Type
    default: object = NO_DEFAULT
    kw_only: bool = False

    @property
    def has_default(self):
        return self.default is not NO_DEFAULT


@dataclass
class Return:
    name: str
    type: Type


@dataclass
class Signature:
    name: str
    overload: str
    params: list = field(default_factory=list)
    returns: list = field(default_factory=list)

    @property
    def full_name(self):
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def param(self, name):
        return next((p for p in self.params if p.name == name), None)


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SignatureError(f"unexpected character {text[pos]!r} in signature")
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
    out.append(("end", ""))
    return out


class _Parser:
    def __init__(self, text):
        self.toks, self.i = _tokens(text), 0

    def peek(self, value=None):
        kind, text = self.toks[self.i]
        return text == value if value is not None else (kind, text)

    def take(self, value=None, kind=None):
        k, t = self.toks[self.i]
        if (value is not None and t != value) or (kind is not None and k != kind):
            want = repr(value) if value is not None else kind
            raise SignatureError(f"expected {want}, found {t!r}" if t else f"expected {want} at end of signature")
        self.i += 1
        return t

    def type_(self):
        base = self.take(kind="name")
        if base not in BASE_TYPES:
            raise SignatureError(f"unknown type '{base}' (known: {', '.join(BASE_TYPES)})")
        elem_opt = is_list = False
        size = None
        if self.peek("?") and self.toks[self.i + 1][1] == "[":
            self.take("?")
            elem_opt = True
        if self.peek("["):
            self.take("[")
            is_list = True
            if self.peek()[0] == "number":
                size = int(self.take())
            self.take("]")
        opt = False
        if self.peek("?"):
            self.take("?")
            opt = True
        if is_list and base not in ("Tensor", "int"):
            raise SignatureError(f"lists of '{base}' are not supported")
        if elem_opt and base != "Tensor":
            raise SignatureError("only Tensor?[] may have optional entries")
        return Type(base, is_list, size, opt, elem_opt)

    def default(self):
        kind, text = self.peek()
        if text == "[":
            self.take("[")
            items = []
            while not self.peek("]"):
                items.append(self.default())
                if not self.peek("]"):
                    self.take(",")
            self.take("]")
            return items
        self.i += 1
        if kind == "number":
            return float(text) if any(c in text for c in ".e") else int(text)
        if kind == "string":
            return text[1:-1]
        if kind == "name" and text in ("None", "True", "False"):
            return {"None": None, "True": True, "False": False}[text]
        raise SignatureError(f"bad default value {text!r}")

    def signature(self):
        name = self.take(kind="name")
        overload = ""
        if self.peek("."):
            self.take(".")
            overload = self.take(kind="name")
        self.take("(")
        params, kw_only, seen = [], False, set()
        while not self.peek(")"):
            if self.peek("*"):
                self.take("*")
                kw_only = True
            else:
                ty = self.type_()
                pname = self.take(kind="name")
                if pname in seen:
                    raise SignatureError(f"duplicate argument '{pname}'")
                seen.add(pname)
                default = NO_DEFAULT
                if self.peek("="):
                    self.take("=")
                    default = self.default()
                    _check_default(pname, ty, default)
                elif params and params[-1].has_default and not kw_only:
                    raise SignatureError(f"argument '{pname}' without a default follows one with a default")
                params.append(Param(pname, ty, default, kw_only))
            if not self.peek(")"):
                self.take(",")
        self.take(")")
        self.take("->")
        returns = []
        if self.peek("("):
            self.take("(")
            while not self.peek(")"):
                ty = self.type_()
                returns.append(Return(self.take(kind="name"), ty))
                if not self.peek(")"):
                    self.take(",")
            self.take(")")
        else:
            ty = self.type_()
            returns = [Return("result", ty)]
        self.take(kind="end")
        return Signature(name, overload, params, returns)

def _check_default(name, ty, value):
    bad = SignatureError(f"bad default {value!r} for argument '{name}' of type {ty}")
    if value is None:
        if not ty.optional:
            raise SignatureError(f"default None for argument '{name}' needs an optional type ({ty}?)")
        return
    if ty.is_list:
        if ty.base == "int" and isinstance(value, list) and all(type(v) is int for v in value):
            return
        if ty.base == "int" and ty.list_size == 1 and type(value) is int:
            return
        raise bad
    ok = {
        "int": lambda v: type(v) is int,
        "float": lambda v: type(v) in (int, float),
        "bool": lambda v: type(v) is bool,
        "str": lambda v: type(v) is str,
        "Scalar": lambda v: type(v) in (int, float, bool),
    }.get(ty.base, lambda v: False)
    if not ok(value):
        raise bad


def parse_signature(text):
    """Parses a `func:` string; raises SignatureError with a message on bad input."""
    return _Parser(text).signature()
