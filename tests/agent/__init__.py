"""Tests of the Agent (and the raw Socket.IO server the connection tests use)."""
