"""Flat keywords kept one release as deprecated aliases of a value object's fields.

Why: `SMCPServer` and `Computer` take one value object per concern (`limits=ServerLimits(...)`,
issue 35); the keywords they took before still work for one release. This is the one
place that says so: the warning names the new spelling, and an alias given together with
its value object is refused (which one was meant cannot be told).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, TypeVar

import attrs

T = TypeVar("T")


@attrs.frozen
class Aliases:
    """The flat keywords of `owner` that stand for the fields of its `parameter`,
    a value object built by `build` (alias name -> field name)."""

    owner: str
    parameter: str
    build: Callable[..., Any]
    fields: Mapping[str, str]

    def take(self, given: dict[str, Any], value: T | None) -> T | None:
        """`value`, or the value object built from the aliases popped out of `given`
        (each one warned about); None when neither was given."""
        chosen = {alias: given.pop(alias) for alias in list(given) if alias in self.fields}
        if not chosen:
            return value
        kind = getattr(self.build, "__name__", self.parameter)
        if value is not None:
            raise TypeError(
                f"{self.owner}() got {self.parameter}= and {', '.join(f'{a}=' for a in chosen)}: "
                f"give {', '.join(self.fields[a] for a in chosen)} inside {kind}(...) only"
            )
        for alias in chosen:
            warnings.warn(
                f"{self.owner}({alias}=...) is deprecated; "
                f"use {self.owner}({self.parameter}={kind}({self.fields[alias]}=...))",
                DeprecationWarning,
                stacklevel=3,  # the line that built the owner
            )
        built: T = self.build(**{self.fields[alias]: v for alias, v in chosen.items()})
        return built


def refuse_unknown(owner: str, given: Mapping[str, Any]) -> None:
    """TypeError for keywords left once the aliases are taken, as Python words it."""
    if given:
        raise TypeError(f"{owner}() got an unexpected keyword argument {next(iter(given))!r}")
