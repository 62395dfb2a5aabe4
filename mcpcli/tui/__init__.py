"""The full-screen Textual app: ``mcpcli call|prompt|read|resume --tui`` and ``mcpcli tui [SESSION]``.

One more answer source for the flow (``source.TuiUser``) plus screens. Nothing here runs the protocol:
the flow does, in a worker on the app's own event loop, and the screens only collect what a person
decides. Imported only by those commands — Textual costs as much to import as the SDK, and
``mcpcli --help`` must stay fast (``tests/test_imports.py`` checks both).
"""
