"""``python -m mcpcli``: the same entry as the ``mcpcli`` executable (the warm worker first)."""

from mcpcli.entry import main

main()
