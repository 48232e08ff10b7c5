"""The Computer's configuration: config files and their fields, inputs and where
their values come from, env files, what `get_config` redacts, and VRL result scripts.
Plain data and checks: nothing here talks to an MCP server or a socket.
"""
