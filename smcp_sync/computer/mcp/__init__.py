"""The Computer's MCP side: the private asyncio loop (`bridge`), the one module that
imports the `mcp` SDK (`adapter`), a supervised connection per MCP server, the
`ServerManager` that owns them, their status, restart policy, stderr and upstream auth.
All asyncio code of the Computer lives in this wing.
"""
