"""The one cattrs converter between wire dicts and the attrs models.

Rules (docs/ARCHITECTURE.md, Library facts, cattrs): primitives are strict (no ``1 -> "1"``, no string as a list,
no NaN); JSON-typed fields (``dict[str, Any]``) are written as they are; optional fields
whose default is ``None`` are absent on output unless marked `keep_none`; unknown input
keys are ignored; renamed keys (`isError`, `_meta`...) and input aliases come from field
metadata; unions are tagged by `type` (or by key presence for resource contents).
Anything that does not fit raises `BadRequestError` (400) naming each offending field
by its wire path.

The codec knows no model: a model whose wire form needs a hook of its own (a tagged
union, a duration, a list shown as a table) registers it on `converter` in its own
module (`register_tagged_union` for unions), so imports go one way, models -> codec.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Callable, TypeVar, overload

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.errors import BaseValidationError, ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.v import format_exception

from .errors import BadRequestError

T = TypeVar("T")

converter = cattrs.Converter(detailed_validation=True)


class WireValueError(ValueError):
    """Raised by our hooks; its message is shown as is in the 400 answer."""


# -- strict primitives -------------------------------------------------------------


def _strict(expected: type, accept: tuple[type, ...]) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, accept) and not isinstance(value, bool) or (expected is bool and isinstance(value, bool)):
            return value
        raise WireValueError(f"expected {expected.__name__}, got {type(value).__name__}")

    return hook


_check_number = _strict(float, (int, float))


def _structure_float(value: Any, _: Any) -> float:
    """Finite numbers only: JSON has no NaN/Infinity, and a NaN timeout would never fire."""
    try:
        number = float(_check_number(value, float))
    except OverflowError:
        raise WireValueError("number out of range") from None
    if not math.isfinite(number):
        raise WireValueError(f"expected a finite number, got {number}")
    return number


def _strict_list(list_type: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    """JSON arrays only: cattrs would turn a string into a list of its characters and an
    object into a list of its keys."""
    structure_items = list_structure_factory(list_type, conv)

    def hook(value: Any, target: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise WireValueError(f"expected an array, got {type(value).__name__}")
        return structure_items(value, target)

    return hook


def _is_list(type_: Any) -> bool:
    return typing.get_origin(type_) is list


converter.register_structure_hook(str, _strict(str, (str,)))
converter.register_structure_hook(int, _strict(int, (int,)))
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _strict(bool, (bool,)))
converter.register_structure_hook_factory(_is_list, _strict_list)


def _is_json_typed(type_: Any) -> bool:
    """`Any`, `dict[str, Any]` and their optional forms: fields that hold plain JSON."""
    if typing.get_origin(type_) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(type_) if arg is not type(None)]
        return len(members) == 1 and _is_json_typed(members[0])
    return type_ is Any or (typing.get_origin(type_) is dict and typing.get_args(type_)[1:] == (Any,))


# Written as they are: walking them would cost a recursion level per nesting level (a
# valid but deep tool result hits the recursion limit) and time on multi-MB pages.
converter.register_unstructure_hook_func(_is_json_typed, lambda value: value)

def shown(value: Any, limit: int = 40) -> str:
    """A value quoted in an error message, cut short: messages go on the wire."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- unions --------------------------------------------------------------------------


def register_tagged_union(union: Any, tag: str = "type") -> None:
    """Structure `union` (of attrs classes) by the value of each member's `tag` field."""
    by_tag = {attrs.fields_dict(cls)[tag].default: cls for cls in typing.get_args(union)}
    expected = ", ".join(repr(t) for t in by_tag)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, Mapping):
            raise WireValueError(f"expected an object, got {type(value).__name__}")
        cls = by_tag.get(value.get(tag))
        if cls is None:
            raise WireValueError(f"unknown {tag} {shown(value.get(tag))}; expected one of {expected}")
        return converter.structure(value, cls)

    converter.register_structure_hook(union, structure)


# -- attrs classes -------------------------------------------------------------------


def _wire_name(attribute: attrs.Attribute[Any]) -> str:
    name: str = attribute.metadata.get("wire", attribute.name)
    return name


# The `overrides` below go to cattrs as **kwargs, typed as Any: mypy would also match them
# against make_dict_*_fn's own flags (`_cattrs_omit_if_default`...) and refuse them.
def _unstructure_factory(cls: type) -> Callable[[Any], dict[str, Any]]:
    overrides: dict[str, Any] = {
        a.name: override(
            rename=_wire_name(a),
            omit_if_default=a.default is None and not a.metadata.get("keep_none"),
        )
        for a in attrs.fields(cls)
    }
    return make_dict_unstructure_fn(cls, converter, **overrides)


def _structure_factory(cls: type) -> Callable[[Any, Any], Any]:
    overrides: dict[str, Any] = {a.name: override(rename=_wire_name(a)) for a in attrs.fields(cls)}
    generated: Callable[[Mapping[str, Any], Any], Any] = make_dict_structure_fn(cls, converter, **overrides)
    aliases = [(_wire_name(a), alias) for a in attrs.fields(cls) for alias in a.metadata.get("aliases", ())]

    def structure(value: Any, target: Any) -> Any:
        if not isinstance(value, Mapping):
            raise WireValueError(f"expected an object, got {type(value).__name__}")
        missing = [(key, alias) for key, alias in aliases if key not in value and alias in value]
        if missing:
            value = {**value, **{key: value[alias] for key, alias in missing}}
        return generated(value, target)

    return structure


converter.register_unstructure_hook_factory(attrs.has, _unstructure_factory)
converter.register_structure_hook_factory(attrs.has, _structure_factory)


# -- public API ----------------------------------------------------------------------


def to_wire(obj: Any) -> Any:
    """A model (or list/dict of models) as plain JSON-ready data (JSON-typed field values
    are the model's own objects, not copies)."""
    return converter.unstructure(obj)


@overload
def from_wire(cls: type[T], data: Any) -> T: ...


@overload
def from_wire(cls: object, data: Any) -> Any: ...  # a union such as MCPServerConfig: not a type[T]


def from_wire(cls: Any, data: Any) -> Any:
    """`data` as an instance of `cls`; raises `BadRequestError` naming every bad field."""
    try:
        return converter.structure(data, cls)
    except (BaseValidationError, WireValueError, TypeError, ValueError, KeyError) as exc:
        problems = describe_validation_error(exc)
        name = _type_name(cls)
        raise BadRequestError(
            f"invalid {name}: " + "; ".join(problems), details={"errors": problems}
        ) from None


def _type_name(cls: Any) -> str:
    if typing.get_origin(cls) is typing.Union:
        return " | ".join(_type_name(arg) for arg in typing.get_args(cls))
    return getattr(cls, "__name__", repr(cls))


def describe_validation_error(exc: BaseException, path: str = "$") -> list[str]:
    """cattrs' error tree as ``"<why> @ <wire path>"`` lines (cattrs' own `transform_error`
    walks attribute names; this walks the same tree but prints the wire keys)."""
    if isinstance(exc, ClassValidationError):
        wire = {a.name: _wire_name(a) for a in attrs.fields(exc.cl)} if attrs.has(exc.cl) else {}
        by_field, loose = exc.group_exceptions()
        located = [(sub, note.type, f"{path}.{wire.get(note.name, note.name)}") for sub, note in by_field]
    elif isinstance(exc, IterableValidationError):
        by_index, loose = exc.group_exceptions()
        located = [(sub, note.type, f"{path}[{note.index!r}]") for sub, note in by_index]
    else:
        return _describe_leaf(exc, None, path)
    lines = [line for sub, type_, where in located for line in _describe_leaf(sub, type_, where)]
    return lines + [line for sub in loose for line in _describe_leaf(sub, None, path)]


def _describe_leaf(exc: BaseException, type_: Any, path: str) -> list[str]:
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        return describe_validation_error(exc, path)
    if isinstance(exc, WireValueError):
        return [f"{exc} @ {path}"]
    if isinstance(exc, KeyError):
        return [f"required field missing @ {path}"]
    if typing.get_origin(type_) is typing.Literal:
        allowed = ", ".join(repr(v) for v in typing.get_args(type_))
        return [f"invalid value; expected one of {allowed} @ {path}"]
    return [f"{format_exception(exc, type_)} @ {path}"]
