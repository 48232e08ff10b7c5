"""Command-line values the benchmark scripts take (`argparse` types): each refuses what
it is not with what was expected."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def counts(text: str) -> tuple[int, ...]:
    """Comma-separated positive integers, e.g. 100,1000,3000."""
    return tuple(positive(part) for part in text.split(","))


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def names(choices: tuple[str, ...], what: str) -> Callable[[str], tuple[str, ...]]:
    """Comma-separated names among `choices` (`what` they are, for the refusal)."""

    def parse(text: str) -> tuple[str, ...]:
        chosen = tuple(name.strip() for name in text.split(",") if name.strip())
        if not chosen or set(chosen) - set(choices):
            raise argparse.ArgumentTypeError(f"{what} are {', '.join(choices)}; got {text!r}")
        return chosen

    return parse
