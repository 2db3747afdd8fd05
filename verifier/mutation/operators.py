"""The mutation operators: the catalogue's bug classes, planted in the user's own source.

Each operator finds the places in a sampler's source where one bug class can be
planted (a comparison against a uniform, a residual clamped at 0, a normalisation,
a bonus row, ...) and writes the mutant with libcst, so the rest of the file
(formatting, comments) is left as it was.  Only the target function and the
module-level functions it calls (by name, transitively) are mutated.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, final

from specexact.errors import InvalidArgument, MissingDependency

try:
    import libcst as cst
    import libcst.matchers as m
    from libcst.metadata import MetadataWrapper, PositionProvider
except ImportError:  # pragma: no cover - the mutate extra is not installed
    raise MissingDependency.of("libcst", "specexact mutate") from None

__all__ = ["OPERATORS", "Mutant", "Operator", "find_mutants", "get_operators"]


@final
@dataclass(frozen=True)
class Operator:
    """One bug class as a source rewrite: ``name`` (``lt-to-le``), what it plants, and
    the catalogue rules (``specexact explain NAME``) of that class."""

    name: str
    plants: str
    rules: tuple[str, ...]
    sites: Callable[[Any, _Scope], list[tuple[cst.CSTNode, Any]]] = field(repr=False,
                                                                         compare=False)


@final
@dataclass(frozen=True)
class Mutant:
    """One mutant: its id (``M3``), the operator, the line changed (1-based, in the
    original file), the mutant's whole source and its unified diff."""

    id: str
    operator: str
    path: str
    line: int
    source: str
    diff: str

    @property
    def location(self) -> str:
        """``path:line``."""
        return f"{self.path}:{self.line}"


# --------------------------------------------------------------------------
# What the operators look at
# --------------------------------------------------------------------------

_RANDOM_CALLS = frozenset({"random", "rand", "rand_like", "uniform", "uniform_", "random_"})
_UNIFORM_NAME = re.compile(r"^u(_|\d|$)|uniform", re.IGNORECASE)
_CLAMP_CALLS = frozenset({"max", "maximum", "clamp", "clamp_", "clamp_min", "clamp_min_",
                          "clip", "relu"})
_CAP_CALLS = frozenset({"min", "minimum", "clamp", "clamp_", "clamp_max", "clamp_max_",
                        "clip"})
_SUM_CALLS = frozenset({"sum", "fsum"})
_TARGET_ROWS = re.compile(r"target|bonus", re.IGNORECASE)
_PADDING = re.compile(r"pad|placeholder|ignore|invalid", re.IGNORECASE)
_PROCESSOR = re.compile(r"process|temperature|top_?k|top_?p|min_?p|warp|penal|bias|logit",
                        re.IGNORECASE)


def _callee(node: cst.CSTNode) -> str | None:
    """The last name of a call's function: ``torch.rand(...)`` -> ``rand``."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _last_name(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _is_zero(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and node.evaluated_value == 0


def _is_one(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and node.evaluated_value == 1


def _names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in m.findall(node, m.Name()) if isinstance(n, cst.Name)}


@dataclass
class _Scope:
    """What the operators know about the functions being mutated."""

    uniforms: set[str] = field(default_factory=set)
    sums: set[str] = field(default_factory=set)
    loop_vars: list[set[str]] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    code: Callable[[cst.CSTNode], str] = field(default=lambda node: "")

    def is_uniform(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` reads a uniform as a number: a random call, or a name bound to
        one, outside any comparison (``u < a`` is a decision, not a uniform)."""
        reader = _UniformReader(self.uniforms)
        node.visit(reader)
        return reader.found

    def in_loop_var(self, node: cst.CSTNode) -> bool:
        bound = set().union(*self.loop_vars) if self.loop_vars else set()
        return bool(_names_in(node) & bound)


class _UniformReader(cst.CSTVisitor):
    def __init__(self, uniforms: set[str]) -> None:
        super().__init__()
        self.uniforms = uniforms
        self.found = False

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.found = self.found or _callee(node) in _RANDOM_CALLS

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value in self.uniforms \
            or bool(_UNIFORM_NAME.search(node.value))


def _bound_names(target: cst.BaseExpression) -> set[str]:
    return _names_in(target)


def _learn(functions: Sequence[cst.FunctionDef], scope: _Scope) -> None:
    """Names bound to uniforms and to sums, to a fixed point; the callees' counts."""
    assigns = [a for fn in functions for a in m.findall(fn, m.Assign())
               if isinstance(a, cst.Assign)]
    changed = True
    while changed:
        changed = False
        for assign in assigns:
            targets = set().union(*(_bound_names(t.target) for t in assign.targets))
            if scope.is_uniform(assign.value) and not targets <= scope.uniforms:
                scope.uniforms |= targets
                changed = True
            if _callee(assign.value) in _SUM_CALLS and not targets <= scope.sums:
                scope.sums |= targets
                changed = True
    for fn in functions:
        for call in m.findall(fn, m.Call()):
            if isinstance(call, cst.Call):
                key = scope.code(call.func)
                scope.calls[key] = scope.calls.get(key, 0) + 1


# --------------------------------------------------------------------------
# The operators' sites: (node to replace, replacement)
# --------------------------------------------------------------------------

Site = tuple[cst.CSTNode, Any]

_FLIP: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    cst.LessThan: cst.LessThanEqual, cst.GreaterThan: cst.GreaterThanEqual}
_UNFLIP: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    v: k for k, v in _FLIP.items()}


def _compare_pairs(node: cst.Comparison) -> Iterator[tuple[int, cst.BaseExpression,
                                                           cst.ComparisonTarget]]:
    left = node.left
    for i, target in enumerate(node.comparisons):
        yield i, left, target
        left = target.comparator


def _uniform_side(scope: _Scope, left: cst.BaseExpression,
                  right: cst.BaseExpression) -> str | None:
    """'left' or 'right' when exactly one side reads a uniform."""
    lu, ru = scope.is_uniform(left), scope.is_uniform(right)
    if lu == ru:
        return None
    return "left" if lu else "right"


def _swap_ops(table: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]]
              ) -> Callable[[Any, _Scope], list[Site]]:
    def sites(node: Any, scope: _Scope) -> list[Site]:
        if not isinstance(node, cst.Comparison):
            return []
        found: list[Site] = []
        for i, left, target in _compare_pairs(node):
            new_op = table.get(type(target.operator))
            if new_op is None or _uniform_side(scope, left, target.comparator) is None:
                continue
            op: Any = target.operator  # each of them has the two whitespaces
            replaced = new_op(whitespace_before=op.whitespace_before,  # type: ignore[call-arg]
                              whitespace_after=op.whitespace_after)
            comparisons = list(node.comparisons)
            comparisons[i] = target.with_changes(operator=replaced)
            found.append((node, node.with_changes(comparisons=comparisons)))
        return found
    return sites


def _clamped_difference(node: cst.CSTNode) -> tuple[cst.BinaryOperation, Any] | None:
    """For ``max(a - b, 0)``, ``torch.clamp(a - b, min=0)``, ``(a - b).clamp(min=0)``,
    ``F.relu(a - b)``: the difference and the zero bound (None for relu)."""
    name = _callee(node)
    if name not in _CLAMP_CALLS or not isinstance(node, cst.Call):
        return None
    operands: list[cst.BaseExpression] = [a.value for a in node.args]
    if isinstance(node.func, cst.Attribute) and name not in ("max", "relu"):
        operands.insert(0, node.func.value)  # the receiver of a method call
    differences = [o for o in operands if isinstance(o, cst.BinaryOperation)
                   and isinstance(o.operator, cst.Subtract)]
    if len(differences) != 1:
        return None
    if name == "relu":
        return differences[0], None
    zeros = [a for a in node.args if _is_zero(a.value)
             and (a.keyword is None or a.keyword.value == "min")]
    if len(zeros) != 1 or (name == "clamp" and zeros[0].keyword is None):
        return None
    return differences[0], zeros[0]


def _residual_to_target(node: Any, scope: _Scope) -> list[Site]:
    found = _clamped_difference(node)
    if found is None:
        return []
    return [(node, found[0].left.with_changes(lpar=(), rpar=()))]


def _clamp_floor(node: Any, scope: _Scope) -> list[Site]:
    found = _clamped_difference(node)
    if found is None or found[1] is None:
        return []
    bound: cst.Arg = found[1]
    return [(bound.value, cst.Float("1e-6"))]


def _shared_uniform(node: Any, scope: _Scope) -> list[Site]:
    # torch.rand(B, k, ...) -> torch.rand(1, ...).expand(B, k): one value for every row
    # and position.
    if isinstance(node, cst.Call) and _callee(node) == "rand":
        shape = [a for a in node.args if a.keyword is None and a.star == ""]
        if not shape or all(_is_one(a.value) for a in shape):
            return []
        rest = [a for a in node.args if a not in shape]
        one = cst.Arg(cst.Integer("1"),
                      comma=cst.MaybeSentinel.DEFAULT if not rest else
                      cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        single = node.with_changes(args=[one, *rest])
        dims = [*shape[:-1], shape[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]
        expanded = cst.Call(cst.Attribute(single, cst.Name("expand")), args=dims)
        return [(node, expanded)]
    # for ...: u = rng.random() -> the draw hoisted before the loop: one u for every pass.
    if isinstance(node, cst.For) and isinstance(node.body, cst.IndentedBlock):
        loop_names = _names_in(node.target)
        found: list[Site] = []
        for statement in node.body.body:
            if not isinstance(statement, cst.SimpleStatementLine) or \
                    len(statement.body) != 1:
                continue
            small = statement.body[0]
            if isinstance(small, cst.Assign) and _callee(small.value) in _RANDOM_CALLS \
                    and not (_names_in(small.value) & loop_names):
                body = [s for s in node.body.body if s is not statement]
                if not body:
                    continue
                loop = node.with_changes(body=node.body.with_changes(body=body))
                found.append((node, cst.FlattenSentinel(
                    [statement.with_changes(leading_lines=()), loop])))
        return found
    return []


def _bonus_off_by_one(node: Any, scope: _Scope) -> list[Site]:
    if not isinstance(node, cst.Subscript):
        return []
    name = _last_name(node.value)
    if name is None or not _TARGET_ROWS.search(name):
        return []
    found: list[Site] = []
    for i, element in enumerate(node.slice):
        index = element.slice
        if not isinstance(index, cst.Index):
            continue
        value = index.value
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) \
                and isinstance(value.expression, cst.Integer):
            shifted: cst.BaseExpression = value.with_changes(
                expression=cst.Integer(str(int(value.expression.value) + 1)))
        elif isinstance(value, (cst.Integer, cst.SimpleString)) or scope.in_loop_var(value):
            continue
        elif isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.BinaryOperation)):
            shifted = cst.BinaryOperation(value, cst.Subtract(), cst.Integer("1"))
        else:
            continue
        elements = list(node.slice)
        elements[i] = element.with_changes(slice=index.with_changes(value=shifted))
        found.append((node, node.with_changes(slice=elements)))
    return found


def _is_normaliser(node: cst.CSTNode, scope: _Scope) -> bool:
    target = node
    while isinstance(target, cst.BinaryOperation):  # r / (r.sum() + eps)
        target = target.left
    if _callee(target) in _SUM_CALLS:
        return True
    return isinstance(target, cst.Name) and target.value in scope.sums


def _normalisation_dropped(node: Any, scope: _Scope) -> list[Site]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide) \
            and _is_normaliser(node.right, scope):
        return [(node, node.left)]
    if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.DivideAssign) \
            and _is_normaliser(node.value, scope):
        return [(node, cst.Pass())]
    return []


def _processor_one_side(node: Any, scope: _Scope) -> list[Site]:
    # x = processor(x, ...) on one side only: the call replaced by its first argument,
    # where the same processor is applied more than once (target and draft).
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None:
        return []
    name = _callee(node) or ""
    if not _PROCESSOR.search(name) and not _PROCESSOR.search(scope.code(node.func)):
        return []
    if scope.calls.get(scope.code(node.func), 0) < 2:
        return []
    return [(node, node.args[0].value)]


def _padding_as_token(node: Any, scope: _Scope) -> list[Site]:
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return []
    target = node.comparisons[0]
    left, right = node.left, target.comparator

    def padding(side: cst.BaseExpression) -> bool:
        if isinstance(side, cst.UnaryOperation) and isinstance(side.operator, cst.Minus) \
                and _is_one(side.expression):
            return True
        name = _last_name(side)
        return name is not None and bool(_PADDING.search(name))

    operand = left if padding(right) else right if padding(left) else None
    if operand is None or padding(operand):
        return []
    operator = type(target.operator)
    if operator not in (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot):
        return []
    # The check neutralised, same shape: 'x == PAD' never holds, 'x != PAD' always does.
    never = operator in (cst.Equal, cst.Is)
    op: cst.BaseCompOp = cst.NotEqual() if never else cst.Equal()
    same = operand.with_changes(lpar=(), rpar=())
    return [(node, node.with_changes(left=same, comparisons=[
        cst.ComparisonTarget(op, same.deep_clone())]))]


def _capped_ratio(node: cst.CSTNode) -> tuple[cst.BinaryOperation, cst.CSTNode] | None:
    """``min(1, a / b)``, ``torch.clamp(a / b, max=1)``, ``(a / b).clamp(max=1)``: the
    ratio and the literal 1."""
    name = _callee(node)
    if name not in _CAP_CALLS or not isinstance(node, cst.Call):
        return None
    operands: list[cst.BaseExpression] = [a.value for a in node.args]
    if isinstance(node.func, cst.Attribute) and name != "min":
        operands.insert(0, node.func.value)
    ratios = [o for o in operands if isinstance(o, cst.BinaryOperation)
              and isinstance(o.operator, cst.Divide)]
    ones = [a.value for a in node.args if _is_one(a.value)
            and (a.keyword is None or a.keyword.value == "max")]
    if len(ratios) != 1 or len(ones) != 1:
        return None
    if name in ("clamp", "clamp_", "clip") and not any(
            a.keyword is not None and a.keyword.value == "max" for a in node.args):
        return None
    return ratios[0], ones[0]


def _ratio_unclamped(node: Any, scope: _Scope) -> list[Site]:
    found = _capped_ratio(node)
    return [] if found is None else [(node, found[0].with_changes(lpar=(), rpar=()))]


def _ratio_to_one(node: Any, scope: _Scope) -> list[Site]:
    found = _capped_ratio(node)
    return [] if found is None else [(node, found[1])]


def _ratio_in(node: cst.CSTNode) -> cst.BinaryOperation | None:
    ratios = [r for r in m.findall(node, m.BinaryOperation(operator=m.Divide()))
              if isinstance(r, cst.BinaryOperation)]
    return ratios[0] if len(ratios) == 1 else None


def _accept_if_p_ge_q(node: Any, scope: _Scope) -> list[Site]:
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return []
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                        cst.GreaterThanEqual)):
        return []
    side = _uniform_side(scope, node.left, target.comparator)
    if side is None:
        return []
    uniform, other = (node.left, target.comparator) if side == "left" \
        else (target.comparator, node.left)
    ratio = _ratio_in(other)
    if ratio is not None:  # u < min(1, p / q) -> p >= q
        p, q = ratio.left, ratio.right
    elif isinstance(uniform, cst.BinaryOperation) and \
            isinstance(uniform.operator, cst.Multiply):  # u * q < p -> p >= q
        q = uniform.right if scope.is_uniform(uniform.left) else uniform.left
        p = other
    else:
        return []
    return [(node, cst.Comparison(p.with_changes(lpar=(), rpar=()), [cst.ComparisonTarget(
        cst.GreaterThanEqual(), q.with_changes(lpar=(), rpar=()))]))]


#: Every operator, in the order mutants are listed at one line.
OPERATORS: tuple[Operator, ...] = (
    Operator("lt-to-le", "u < x becomes u <= x: a uniform of 0 accepts a draft with p = 0",
             ("inclusive-uniform",), _swap_ops(_FLIP)),
    Operator("le-to-lt", "u <= x becomes u < x against a uniform", ("inclusive-uniform",),
             _swap_ops(_UNFLIP)),
    Operator("residual-to-target", "the residual max(p - q, 0) becomes the target p",
             ("naive-resample",), _residual_to_target),
    Operator("clamp-floor", "the residual's clamp at 0 becomes a floor of 1e-6",
             ("residual-floor", "padded-lanes"), _clamp_floor),
    Operator("shared-uniform", "one uniform shared across rows, positions or passes",
             ("shared-uniform", "shared-uniform-fallback"), _shared_uniform),
    Operator("bonus-off-by-one", "a target row's index (the bonus row) off by one",
             ("bonus-from-residual", "residual-wrong-position"), _bonus_off_by_one),
    Operator("normalisation-dropped", "x / x.sum() becomes x", ("residual-plus-epsilon",),
             _normalisation_dropped),
    Operator("processor-one-side", "a processor applied twice (target and draft) is "
             "applied to one side only", ("draft-tempered-ratio-untempered",
                                          "min-p-bonus-only"), _processor_one_side),
    Operator("padding-as-token", "a padding check (== -1, != PLACEHOLDER) never fires, so "
             "padding is read as a token", ("padded-lanes",), _padding_as_token),
    Operator("ratio-unclamped", "min(1, p/q) becomes p/q", ("lenient-acceptance",),
             _ratio_unclamped),
    Operator("ratio-to-one", "min(1, p/q) becomes 1: every draft accepted",
             ("zero-uniform-accepts-all",), _ratio_to_one),
    Operator("accept-if-p-ge-q", "the test u < min(1, p/q) becomes p >= q",
             ("deterministic-tree-threshold",), _accept_if_p_ge_q),
)


def get_operators(names: Sequence[str] | None = None) -> tuple[Operator, ...]:
    """The operators named (all of them for None); an unknown name is an error that
    lists the valid ones."""
    if names is None:
        return OPERATORS
    by_name = {op.name: op for op in OPERATORS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(by_name), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        msg = (f"unknown mutation operator {unknown[0]!r}{hint} (valid: "
               f"{', '.join(by_name)})")
        raise InvalidArgument(msg)
    return tuple(by_name[n] for n in dict.fromkeys(names))


# --------------------------------------------------------------------------
# Finding the mutants
# --------------------------------------------------------------------------


def _functions(module: cst.Module, name: str) -> list[cst.FunctionDef]:
    """The function ``name`` (``Class.method`` too) and the module-level functions it
    calls, transitively."""
    top = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    head, _, method = name.partition(".")
    start: cst.FunctionDef | None = None
    if method and head in classes:
        body = classes[head].body
        start = next((s for s in body.body if isinstance(s, cst.FunctionDef)
                      and s.name.value == method), None)
    elif not method:
        start = top.get(head)
    if start is None:
        names = [*top, *classes]
        close = difflib.get_close_matches(head, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        msg = f"no function {name!r} defined in the file{hint}"
        raise InvalidArgument(msg)
    chosen = [start]
    seen = {start.name.value}
    for fn in chosen:
        for called in sorted(_names_in(fn.body) & set(top) - seen):
            seen.add(called)
            chosen.append(top[called])
    return chosen


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, operators: Sequence[Operator], scope: _Scope) -> None:
        super().__init__()
        self.operators = operators
        self.scope = scope
        self.sites: list[tuple[Operator, cst.CSTNode, Any, int]] = []
        self.active = 0
        self.roots: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.roots:
            self.active += 1
        if self.active:
            if isinstance(node, cst.For):
                self.scope.loop_vars.append(_names_in(node.target))
            for op in self.operators:
                for old, new in op.sites(node, self.scope):
                    line = self.get_metadata(PositionProvider, old).start.line
                    self.sites.append((op, old, new, line))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.active and isinstance(original_node, cst.For):
            self.scope.loop_vars.pop()
        if id(original_node) in self.roots:
            self.active -= 1


def find_mutants(source: str, function: str, *, path: str = "<source>",
                 operators: Sequence[Operator] | None = None) -> list[Mutant]:
    """Every mutant of ``function`` in ``source`` by ``operators`` (default: all), in
    source order; mutants whose code is the original's or another's are left out."""
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError as exc:
        msg = f"{path} is not valid Python: {exc.message} (line {exc.raw_line})"
        raise InvalidArgument(msg) from None
    module = wrapper.module
    functions = _functions(module, function)
    scope = _Scope(code=lambda node: module.code_for_node(node))
    _learn(functions, scope)
    collector = _Collector(tuple(operators or OPERATORS), scope)
    collector.roots = {id(fn) for fn in functions}
    wrapper.visit(collector)
    mutants: list[Mutant] = []
    seen = {source}
    order = {op.name: i for i, op in enumerate(OPERATORS)}
    for op, old, new, line in sorted(collector.sites,
                                     key=lambda s: (s[3], order.get(s[0].name, 99))):
        code = module.deep_replace(old, new).code
        if code in seen:
            continue
        seen.add(code)
        diff = "".join(difflib.unified_diff(
            source.splitlines(keepends=True), code.splitlines(keepends=True),
            f"a/{path}", f"b/{path}", n=1))
        mutants.append(Mutant(f"M{len(mutants) + 1}", op.name, path, line, code, diff))
    return mutants
