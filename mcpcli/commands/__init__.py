"""The command bodies: one module per command family, shared by every front end (``cli``, ``tui``, the worker).

Each body takes the ``Runtime``, drives the core and renders through ``terminal.output`` (or, for the app,
returns what to show). No Typer and no Textual here — the import contract in pyproject.toml checks it — and
nothing heavy at import: a front end imports the one module its command needs.

- ``flows``: discovery (tools, prompts, resources, info), call / prompt / read / resume, the one flow factory,
  and the app's ``drive`` and ``catalog``;
- ``sessions``: ``sessions list | show | rm | prune``; ``bundle``: ``sessions export | import``;
- ``servers``: ``servers list | import | add | rm``; ``cache``: ``_refresh-cache`` (completion's lists);
- ``auth``: ``auth login | status | logout``; ``llm``: ``llm list | test``, ``keys set | rm``.
"""
