"""Flat keywords kept one release as deprecated aliases of a value object's fields, and
methods kept one release where they were.

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


class MovedTo:
    """A method kept one release where it was (`Computer.add_server`) that warns and
    calls where it went (`Computer.servers.add`)."""

    def __init__(self, face: str, name: str) -> None:
        self._face, self._name = face, name

    def __set_name__(self, owner: type, attribute: str) -> None:
        self._old = f"{owner.__name__}.{attribute}()"
        self._new = f"{owner.__name__}.{self._face}.{self._name}()"

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        target = getattr(getattr(instance, self._face), self._name)

        def moved(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(f"{self._old} is deprecated; use {self._new}", DeprecationWarning, stacklevel=2)
            return target(*args, **kwargs)

        return moved
