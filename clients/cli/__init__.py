"""The terminal client: a person plays one seat against robots over the lobby protocol
(``python -m clients.cli``)."""
