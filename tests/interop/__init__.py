"""Interop harness: the official A2C-SMCP Python SDK (a2c-smcp 0.1.6) in its own venv.

* ``venv.official_sdk_python()`` builds/reuses the SDK's virtualenv;
* ``harness`` starts the scripts of ``scripts/`` (official server, computer, agent and a
  mcp 1.x echo MCP server) and reads their JSON-line output;
* ``WIRE_NOTES.md`` records the SDK's wire behaviour.
"""
