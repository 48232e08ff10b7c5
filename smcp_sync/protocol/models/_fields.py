"""Field helpers shared by every wire model.

Wire models are frozen, keyword-only attrs classes (immutable, so safe to share between
threads). Type checkers see them through `dataclass_transform`, not as attrs classes (mypy's
attrs plugin knows only attrs' own decorators), so the package copies and reads them
with `evolve`, `fields_of` and `as_dict` below instead of `attrs.evolve`, `attrs.fields`
and `attrs.asdict`. Field metadata tells the codec how a field appears on the wire:
`wire` renames it, `aliases` lists other accepted input keys, `keep_none` keeps a
``None`` value on output where a peer expects the key to exist.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import attrs
from typing_extensions import dataclass_transform

_Model = TypeVar("_Model", bound=type)
_Instance = TypeVar("_Instance")


def field(*, wire: str | None = None, aliases: tuple[str, ...] = (), keep_none: bool = False, **kwargs: Any) -> Any:
    metadata = dict(kwargs.pop("metadata", {}))
    if wire:
        metadata["wire"] = wire
    if aliases:
        metadata["aliases"] = aliases
    if keep_none:
        metadata["keep_none"] = True
    return attrs.field(metadata=metadata, **kwargs)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(attrs.field, field))
def wire_model(cls: _Model) -> _Model:
    """`attrs.frozen(kw_only=True)`, declared so that type checkers see each model's
    keyword-only constructor (they do not follow a decorator made by a call)."""
    return attrs.frozen(kw_only=True)(cls)


def empty_list() -> Any:
    return attrs.field(factory=list)


def empty_dict() -> Any:
    return attrs.field(factory=dict)


def evolve(model: _Instance, **changes: Any) -> _Instance:
    """`attrs.evolve` of a wire model: a copy with `changes`."""
    return attrs.evolve(model, **changes)  # type: ignore[misc]  # a wire model: see the module doc


def fields_of(model: type) -> tuple[attrs.Attribute[Any], ...]:
    """`attrs.fields` of a wire model class."""
    found: tuple[attrs.Attribute[Any], ...] = attrs.fields(cast("type[attrs.AttrsInstance]", model))
    return found


def as_dict(model: object) -> dict[str, Any]:
    """`attrs.asdict` of a wire model (nested models as dicts too)."""
    return attrs.asdict(cast("attrs.AttrsInstance", model))
