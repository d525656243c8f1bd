"""`python -m cli ...` (and `python flows/mobilemem.py ...`, which hands over here)."""

from cli import main, signals

code = main()
signals.ignore_signals()  # the interpreter's exit (Prefect's atexit handlers) is never interrupted
raise SystemExit(code)
