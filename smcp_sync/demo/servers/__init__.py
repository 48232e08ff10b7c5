"""Example MCP servers (stdio) for the demo, the examples and the tests: documents
(Finder), windows (Desktop) and tools. Each runs as ``python -m
smcp_sync.demo.servers.<name>``; see README.md in this folder.
"""
