"""The Lambda adapter behind `functions/replay/app.py`."""
