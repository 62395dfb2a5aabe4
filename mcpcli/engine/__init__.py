"""The flow engine: what drives a `call`, `prompt`, `read` or `resume` from its first request to its outcome.

- ``flow``: the loop — one request, the server's questions (elicitation, sampling, roots) answered round by
  round, each round kept in the store before it is answered; ``Flow``.
- ``steps``: the seam a flow and a task flow share — what a flow is given (``Call``, ``Limits``, ``Reporter``,
  answer sources), what it ends with (``Outcome``, ``NeedInput``, ``LimitReached``), and ``FlowSteps``, the face
  of a running flow a task flow drives.
- ``taskflow``: the same loop when the server runs the request as a task (poll, input_required, result).
- ``answers``: where an answer comes from (``--answer``, files, stdin, the keeper's stored answers).
- ``sampling``: a server's ``sampling/createMessage`` turned into a question for a model or a person.
- ``arguments``: a tool's input schema → the command line's ``key=value`` arguments and back.
- ``roots``: the ``roots/list`` a server asks before the call, answered by the sources that need nobody.
- ``replay`` and ``mock``: a ``--record`` file replayed against a server, or served as one.
- ``watching``: what a server changes, as one ordered, bounded stream of events (``mcpcli watch``).

Importing this package imports nothing: take the module you need.
"""
