"""``python -m mcpcli``."""

from mcpcli.cli import main

main()
