"""The roles' constructors take a value object per concern, not every option flat
(issue 35): at most 12 parameters each, aliases aside. The flat keywords kept one
release as deprecated aliases are no parameters of theirs: they arrive through a `**`
parameter (`SMCPServer`'s `**socketio_options`, which counts, as it has other uses;
`Computer`'s `**deprecated`, which holds only them and so does not) and `_aliases.py`
takes them out."""

from __future__ import annotations

import inspect

import pytest

from smcp_sync import Computer, SMCPServer

MOST = 12
#: The `**` parameter that carries deprecated aliases and nothing else.
ALIASES_ONLY = "deprecated"


def counted(role: type) -> list[str]:
    return [
        name
        for name, parameter in inspect.signature(role.__init__).parameters.items()
        if name != "self" and not (parameter.kind is parameter.VAR_KEYWORD and name == ALIASES_ONLY)
    ]


@pytest.mark.parametrize("role", [SMCPServer, Computer], ids=lambda role: role.__name__)
def test_a_constructor_takes_at_most_twelve_parameters(role):
    parameters = counted(role)
    assert len(parameters) <= MOST, f"{role.__name__}.__init__ takes {len(parameters)}: {parameters}"


def test_the_aliases_parameter_takes_no_other_keyword():
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Computer("c", colour="blue")
