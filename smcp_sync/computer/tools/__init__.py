"""The Computer's tools: the catalogue of every MCP server's tools under their exposed
names, tool calls with their confirmation, timeouts and cancellation, the calls in
flight, and the history of finished calls.
"""
