"""Forward-mode derivatives (the tangent of an op's output) from derivatives.yaml.

A pointwise op derives its tangent from its reverse formulas: when each input's
formula is linear in `grad` and elementwise (grad times values of the primals),
substituting that input's tangent, broadcast to the output's shape, for `grad`
and summing over the inputs that have a tangent gives the output's tangent.
Every other differentiable op declares `forward:`, a formula over the tangents
`<arg>_t`. Linearity is verified here, not assumed (docs/SPEC.md, section 6).
"""
import ast
from dataclasses import dataclass

from .errors import SpecError
from .formula import (BINARY_OPS, COMPARE_OPS, GEOMETRY, HELPERS, TENSOR, Emitter, FormulaError, formula_scope,
                      geometry_members)

ZERO, CONST, LINEAR, NONLINEAR = "zero", "constant", "linear", "nonlinear"

# Callables linear in their Tensor arguments: groups of parameters in which each is jointly
# linear while its other Tensor arguments hold no tangent (mul: in self, or in other, not both).
_ALONE = [("self",)]
LINEAR_IN = {
    "add": [("self", "other")], "sub": [("self", "other")], "neg": _ALONE, "true_divide": _ALONE,
    "mul": [("self",), ("other",)], "where": [("self", "other")],
    "sum": _ALONE, "mean": _ALONE, "clone": _ALONE, "contiguous": _ALONE, "to": _ALONE, "index": _ALONE,
    "mm": [("self",), ("mat2",)], "bmm": [("self",), ("mat2",)], "dot": [("self",), ("tensor",)],
    "mv": [("self",), ("vec",)], "matmul": [("self",), ("other",)],
    "view": _ALONE, "reshape": _ALONE, "permute": _ALONE, "transpose": _ALONE, "t": _ALONE,
    "unsqueeze": _ALONE, "squeeze": _ALONE, "expand": _ALONE, "flatten": _ALONE, "select": _ALONE,
    "slice": _ALONE, "narrow": _ALONE, "gather": _ALONE, "scatter_add": [("self", "src")],
    "cumsum": _ALONE, "flip": _ALONE, "diagonal": _ALONE, "_diagonal_backward": [("grad",)],
    "unfold": _ALONE, "_unfold_backward": [("grad",)], "as_strided": _ALONE, "_as_strided_backward": [("grad",)],
    "cumprod": _ALONE, "_cumprod_backward": [("grad",)], "_cumprod_jvp": [("tangent",)],  # scans (issue 11)
    "_conv_forward": [("input", "bias"), ("weight",)], "_conv_backward_input": [("grad_output",), ("weight",)],
    "_conv_backward_weight": [("grad_output",), ("input",)], "im2col": _ALONE, "col2im": _ALONE,  # conv (issue 11)
    "_layer_norm_jvp": [("input_t",)], "_batch_norm_jvp": [("input_t",)],  # norm (issue 11)
    "_batch_norm_param_jvp": [("param_t",)], "embedding": [("weight",)], "_embedding_backward": [("grad",)],
    "scatter": [("self", "src")], "_scatter_reduce_jvp": [("self_t", "src_t")], "_logcumsumexp_jvp": [("tangent",)],  # index2 (issue 11)
    "_max_pool_backward": [("grad_output",)], "_max_pool_gather": _ALONE,  # pool (issue 11)
    "avg_pool2d": _ALONE, "_avg_pool2d_backward": [("grad_output",)], "_upsample": _ALONE,
    "_upsample_backward": [("grad_output",)], "_threshold_backward": [("grad_output",)],
    "_linalg_solve": [("B",)], "_linalg_cholesky_jvp": [("A_t",)], "_linalg_slogdet_jvp": [("A_t",)],  # lapack (issue 11)
    "_linalg_eigh_jvp": [("A_t",)], "_linalg_qr_jvp": [("A_t",)], "_linalg_svd_jvp": [("A_t",)],
    "linalg_solve_triangular": [("B",)], "_linalg_solve_triangular_jvp": [("A_t",)],  # op-gaps (issue 12)
    "_linalg_lu_factor_ex_jvp": [("A_t",)], "_geqrf_backward": [("grad",)],
    "nll_loss_nd": [("self",)], "_nll_loss_backward": [("grad_output",)],  # losses-classification (issue 11)
    "_apply_loss_reduction": _ALONE, "_binary_cross_entropy_backward": [("grad_output",)],
    "_binary_cross_entropy_target_backward": [("grad_output",)],
    "reflection_pad1d": _ALONE, "reflection_pad2d": _ALONE, "reflection_pad3d": _ALONE,  # padpool (issue 11)
    "replication_pad1d": _ALONE, "replication_pad2d": _ALONE, "replication_pad3d": _ALONE,
    "_pad_edge_backward": [("grad_output",)], "max_unpool2d": [("self",)], "upsample_bicubic2d": _ALONE,
    "_upsample_bicubic2d_backward": [("grad_output",)],
    "_gelu_erf_backward": [("grad_output",)],  # model speed (issue 12)
    "_sdpa_flash_jvp": [("query_t", "key_t", "value_t")],  # sdpa (issue 11)
    "_rnn_fused_jvp": [("input_t", "hx_t", "cx_t", "w_ih_t", "w_hh_t", "b_ih_t", "b_hh_t", "w_hr_t")],  # rnn (issue 12)
    # helpers (formula.HELPERS)
    "rounded_div_backward": [("grad",)], "maybe_multiply": [("grad",)], "sum_to": [("grad",)], "sum_over": _ALONE, "expand_reduced": [("grad",)],
    "prod_backward": [("grad",)], "select_extreme_backward": [("grad",)], "index_reduction_backward": [("grad",)],
    "vector_norm_backward": [("grad",)], "select_backward": [("grad",)], "slice_backward": [("grad",)],
    "index_backward": [("grad",)], "index_put": [("self", "values")], "index_values_backward": [("grad",)],
}
ZERO_FUNCTIONS = {"zeros_like"}          # zero whatever their argument
ELEMENTWISE_HELPERS = {"zeros_like", "ones_like", "rounded_div_backward", "clamp_mask", "maybe_multiply"}


@dataclass
class Kind:
    cls: str                 # ZERO, CONST, LINEAR or NONLINEAR in the tangents
    elementwise: bool = True  # every step applied to a tangent acts element by element
    why: str = ""            # what makes it NONLINEAR


class Linearity:
    """How an expression depends on `names` (the tangents, or `grad`)."""

    def __init__(self, model, names):
        self.model, self.names = model, set(names)

    def __call__(self, n):
        if isinstance(n, ast.Expression):
            return self(n.body)
        if isinstance(n, ast.Constant):
            zero = type(n.value) in (int, float) and n.value == 0
            return Kind(ZERO if zero else CONST)
        if isinstance(n, ast.Name):
            return Kind(LINEAR if n.id in self.names else CONST)
        if isinstance(n, ast.UnaryOp):
            if isinstance(n.op, ast.UAdd):
                return self(n.operand)
            return self.call("neg" if isinstance(n.op, ast.USub) else "logical_not", [n.operand], {})
        if isinstance(n, ast.BinOp):
            return self.call(BINARY_OPS[type(n.op)], [n.left, n.right], {})
        if isinstance(n, ast.Compare):
            return self.call(COMPARE_OPS[type(n.ops[0])], [n.left, n.comparators[0]], {})
        if isinstance(n, ast.BoolOp):
            name = "logical_and" if isinstance(n.op, ast.And) else "logical_or"
            kinds = [self(v) for v in n.values]
            return self._combine(name, {f"arg{i}": (k, True) for i, k in enumerate(kinds)})
        if isinstance(n, ast.Call):
            kwargs = {k.arg: k.value for k in n.keywords}
            if isinstance(n.func, ast.Attribute):
                return self.call(n.func.attr, [n.func.value] + list(n.args), kwargs)
            if n.func.id in GEOMETRY:
                return Kind(CONST)
            return self.call(n.func.id, list(n.args), kwargs)
        return Kind(NONLINEAR, why=f"unsupported expression {ast.dump(n)}")

    def _signatures(self, name):
        if name in HELPERS:
            return [HELPERS[name]]
        return [op.sig for op in self.model.overloads(name)]

    def call(self, name, args, kwargs):
        for sig in self._signatures(name):
            positional = [p for p in sig.params if not p.kw_only]
            if len(args) > len(positional) or any(not sig.param(k) for k in kwargs):
                continue
            given = dict(zip((p.name for p in positional), args)) | kwargs
            if any(not p.has_default and p.name not in given for p in sig.params):
                continue
            bound = {p: (self(node), sig.param(p).type.base == "Tensor") for p, node in given.items()}
            return self._combine(name, bound)
        return Kind(NONLINEAR, why=f"unknown function or arguments: {name}()")

    def _combine(self, name, bound):
        """`bound`: parameter -> (Kind of its argument, whether it is a Tensor parameter)."""
        if name in ZERO_FUNCTIONS:
            return Kind(ZERO)
        for p, (kind, _) in bound.items():
            if kind.cls == NONLINEAR:
                return kind
        linear = [p for p, (kind, is_tensor) in bound.items() if kind.cls == LINEAR]
        if not linear:
            return Kind(CONST)
        if any(not bound[p][1] for p in linear):
            return Kind(NONLINEAR, why=f"{name}() takes a tangent as a number")
        for group in LINEAR_IN.get(name, []):
            if set(linear) <= set(group) and all(bound[p][0].cls == ZERO for p in group if p in bound and p not in linear):
                elementwise = all(bound[p][0].elementwise for p in linear) and self._elementwise(name)
                return Kind(LINEAR, elementwise)
        if len(linear) > 1:
            return Kind(NONLINEAR, why=f"{name}() is not linear in {' and '.join(linear)} together")
        partners = [q for g in LINEAR_IN.get(name, []) if linear[0] in g for q in g if q != linear[0] and q in bound]
        unless = f" unless {' and '.join(partners)} is zero" if partners else ""
        return Kind(NONLINEAR, why=f"{name}() is not linear in {linear[0]}{unless}")

    def _elementwise(self, name):
        return name in ELEMENTWISE_HELPERS or any(op.kind == "pointwise" for op in self.model.overloads(name))


def differentiable_inputs(op):
    """The arguments with a reverse formula: the ones whose tangents the forward formula reads."""
    return [p.name for p in op.sig.params if p.name in op.derivative.formulas]


def _terms(node, negate=False):
    """A top-level sum split into its terms (a term whose tangents are all absent is zero)."""
    if isinstance(node, ast.Expression):
        return _terms(node.body, negate)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _terms(node.left, negate) + _terms(node.right, negate != isinstance(node.op, ast.Sub))
    return [ast.UnaryOp(ast.USub(), node) if negate else node]


class _Substitute(ast.NodeTransformer):
    def __init__(self, name, by):
        self.name, self.by = name, by

    def visit_Name(self, n):
        return ast.copy_location(ast.Name(self.by, ast.Load()), n) if n.id == self.name else n


def derivable(model, op):
    """None when `op` derives its forward derivative from its reverse formulas, else why not."""
    if op.kind != "pointwise":
        return f"{op.full_name} is {op.kind}: only pointwise ops derive it from their reverse formulas"
    for arg, tree in op.derivative.formulas.items():
        kind = Linearity(model, {"grad"})(tree)
        if kind.cls not in (ZERO, LINEAR):
            why = kind.why or "it does not depend on grad"
            return f"the formula for '{arg}' is not linear in grad ({why})"
        if not kind.elementwise:
            return f"the formula for '{arg}' does not act on grad element by element"
    return None


@dataclass
class Term:
    cpp: str
    guard: list     # the tangents any of which makes the term non-zero
    zeros: list     # tangents the term reads that become zeros when absent
    reads_self: bool = False  # an in-place op's term reads self before the write


def forward_plan(model, op, inplace=False):
    """What the dual path of `op` (its in-place form when `inplace`) computes: the tangent
    variables, the terms of the output's tangent in C++, and whether they read `self`
    before the write. None for an op declaring `no_forward:`."""
    d = op.derivative
    if d.no_forward:
        return None
    diff = differentiable_inputs(op)
    if any(op.sig.param(t).type.is_list for t in diff):
        raise FormulaError("forward derivatives of Tensor[] arguments are not supported")
    scope = {k: v for k, v in formula_scope(op).items() if k != "grad"}
    first_return = op.sig.returns[0].name
    result_cpp = "self" if inplace else first_return
    if inplace:   # as in the reverse formulas: `self` is the input, the return is self after the write
        scope["self"] = ("self_before__", scope["self"][1])
        scope[first_return] = ("self", TENSOR)
    if d.forward is not None:
        trees = _terms(d.forward)
        for t in diff:
            scope[f"{t}_t"] = (f"{t}_t", TENSOR)
        derived = False
    else:
        trees = [_Substitute("grad", f"{arg}_t").visit(ast.parse(ast.unparse(d.formulas[arg]), mode="eval"))
                 for arg in diff]
        for t in diff:
            scope[f"{t}_t"] = (f"forward_ad::expand_like({t}_t, {result_cpp})", TENSOR)
        derived = True
    terms, reads_self, shapes = [], False, set()
    for i, tree in enumerate(trees):
        em = Emitter(model, scope)
        cpp, ty = em.emit(tree)
        if not ty or not ty.is_tensor:
            raise FormulaError(f"the forward formula must give a Tensor, not {ty}")
        used = [t for t in diff if f"{t}_t" in em.used]
        guard = [diff[i]] if derived else used
        terms.append(Term(cpp, guard, [] if derived else used, inplace and "self" in em.used))
        reads_self |= "self" in em.used
        shapes |= em.shapes
    return {"tangents": diff, "terms": terms, "reads_self": reads_self and inplace, "derived": derived,
            "shapes": geometry_members(shapes)}


def check_forward(model, file):
    """Every differentiable op has a forward derivative: derived, declared (linear in the
    tangents), or `no_forward:` with a reason."""
    for op in model.ops:
        d = op.derivative
        if d is None or d.no_forward:
            continue
        if d.forward is not None:
            names = {f"{t}_t" for t in differentiable_inputs(op)}
            try:
                for term in _terms(d.forward):
                    kind = Linearity(model, names)(term)
                    if kind.cls not in (ZERO, LINEAR):
                        raise FormulaError(f"not linear in the tangents ({kind.why or 'a term without one'}): "
                                           f"{ast.unparse(term)}")
                forward_plan(model, op)
            except FormulaError as e:
                raise SpecError(file, d.forward_line, f"{op.full_name}.forward: {e}") from None
            continue
        why = derivable(model, op)
        if why:
            raise SpecError(file, d.line, f"{op.full_name}: no forward derivative: {why}; declare `forward:` "
                            "(the output's tangent) or `no_forward:` (why not)")
