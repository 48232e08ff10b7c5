"""Reliability suite (issue 8): bad input, office isolation, faults, load and leaks,
with real Servers, Computers, Agents and MCP server processes."""
