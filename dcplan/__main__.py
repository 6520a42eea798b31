"""``python -m dcplan``: the command line (same as the ``dcplan`` command)."""

from dcplan.cli import main

main()
