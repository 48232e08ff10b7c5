"""Evaluate an arithmetic expression typed by a person or a model — safely.

Why not `eval`: the expression comes from an LLM over the network. This walks the parsed
syntax tree and allows only numbers, ``+ - * / // % **``, parentheses, the constants
``pi``, ``e`` and ``tau``, and the functions ``sqrt abs round floor ceil log log10 exp
sin cos tan min max``. Limits keep one call cheap: at most `MAX_LENGTH` characters, and
no power or result of more than `MAX_DIGITS` digits. Every refusal is an
`ArithmeticRefused` whose message says what was wrong (``name 'x' is not allowed``,
``division by zero``...).
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

MAX_LENGTH = 200
MAX_DIGITS = 1000

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}  # fmt: skip
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "abs": abs, "round": round, "floor": math.floor, "ceil": math.ceil, "log": math.log,
    "log10": math.log10, "exp": math.exp, "sin": math.sin, "cos": math.cos, "tan": math.tan, "min": min, "max": max,
}  # fmt: skip


class ArithmeticRefused(Exception):
    """The expression is not allowed or cannot be computed; the message says why."""


def evaluate(expression: str) -> int | float:
    if len(expression) > MAX_LENGTH:
        raise ArithmeticRefused(f"expression is {len(expression)} characters long; at most {MAX_LENGTH} are allowed")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ArithmeticRefused(f"not an arithmetic expression: {exc.msg}") from None
    try:
        value: int | float = _value(tree.body)
    except ZeroDivisionError:
        raise ArithmeticRefused("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:  # math domain, float range, arity
        raise ArithmeticRefused(f"cannot compute: {exc}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ArithmeticRefused(f"the result is {value}, not a finite number")
    if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS:
        raise ArithmeticRefused(f"the result has more than {MAX_DIGITS} digits")
    return value


def format_number(value: int | float) -> str:
    """Integers in full, other numbers to 12 significant digits (``0.1 + 0.2`` → ``0.3``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value) if isinstance(value, int) else f"{value:.12g}"


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(left) > 1 and right * math.log10(abs(left)) > MAX_DIGITS:
            raise ArithmeticRefused(f"a power in this expression would have more than {MAX_DIGITS} digits")
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise ArithmeticRefused("a power in this expression is not a real number")
        return result
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.Name):
        if node.id not in _CONSTANTS:
            raise ArithmeticRefused(f"name {node.id!r} is not allowed; constants are {', '.join(_CONSTANTS)}")
        return _CONSTANTS[node.id]
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in _FUNCTIONS or node.keywords:
            allowed = ", ".join(_FUNCTIONS)
            raise ArithmeticRefused(f"calling {ast.unparse(node.func)!r} is not allowed; functions are {allowed}")
        return _FUNCTIONS[name](*(_value(arg) for arg in node.args))
    raise ArithmeticRefused(f"{type(node).__name__} is not allowed in an arithmetic expression")
