"""The Socket.IO event handlers: joining and leaving offices, routing an Agent's requests
to a Computer (and the requests pending there), broadcasting an office's notices; what
they share is `offices.Offices`. The top of the wings: nothing below imports them.
"""
