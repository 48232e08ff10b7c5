"""The Agent role: a blocking, thread-safe client of an A2C-SMCP Server."""

from .cache import ComputerCache
from .client import Agent

__all__ = ["Agent", "ComputerCache"]
