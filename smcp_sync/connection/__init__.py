"""The Socket.IO client side shared by the Agent and the Computer: one session class
(`session.Connection`) over python-socketio's client.
"""
