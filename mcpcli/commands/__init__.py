"""The command bodies, shared by every front end (``cli``, ``tui``, the worker): each takes the ``Runtime``, drives
the core and renders through ``terminal.output`` (or, for the app, returns what to show). No Typer and no Textual
here — the import contract in pyproject.toml checks it — and nothing heavy at import: a front end imports the one
module its command needs.

- ``runtime``: what every command runs on (options, paths, settings, store, output) and the guard that turns every
  failure into one line and an exit code;
- ``jobs``: what a front end asks for (``CallJob``, ``ResumeJob``, ``AnswerJob``); ``run``: the one body that runs a
  flow (``run_job``); ``printed``: the command line's seat at a flow; ``answer``: ``mcpcli answer``, without a flow;
  ``apps``: a flow under its tool's view; ``targets``: which server a stored flow goes back to, and whether its
  command line may run; ``connecting``: how every command connects;
- ``discovery``: tools, prompts, resources, info, the app's catalog; ``inbox``: the team inbox's listing, its
  announcements and the waiting room of ``--wait-for-answer``; ``batch``, ``watch``, ``replay``, ``mock``, ``tasks``;
- ``sessions``: ``sessions list | show | rm | prune``; ``bundle``: ``sessions export | import``;
- ``servers``: ``servers list | import | add | rm``; ``cache``: ``_refresh-cache`` (completion's lists);
- ``auth``: ``auth login | status | logout``; ``llm``: ``llm list | test``, ``keys set | rm``.
"""
