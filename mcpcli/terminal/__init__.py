"""What talks to a person at a terminal: inline prompts (``inline``, ``asking``), results and tables on stdout
with notes and progress on stderr (``output``), ``-v`` trace lines (``trace_lines``) and the server's own log
lines (``server_logs``).

Used by the command bodies and the front ends; the core never imports it (an import contract in
pyproject.toml checks that), it is handed what it needs from here (a reporter, a line formatter, a log printer).
"""
