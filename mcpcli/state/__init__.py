"""State: what a flow leaves behind, so it can be resumed, listed, exported and audited.

- ``store``: the session store (SQLite or PostgreSQL) — sessions, rounds, leases (owner: host + pid + token).
- ``keeper``: a flow's durable record, written round by round (large values offloaded by ``offload``).
- ``vault``: secret answers sealed at rest; ``trace``: the redacted wire trace.
- ``inbox``: the sessions waiting for someone; ``bundle``: a session exported and imported as one file.
- ``listing``: the fast ``sessions list`` (plain rows, no models); ``recording``: a ``--record`` file read back.

Importing this package imports nothing: take the module you need.
"""
