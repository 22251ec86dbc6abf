"""The operator console: http.py serves it, views.py says what it shows."""
