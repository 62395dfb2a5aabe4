"""The app host: a tool's MCP App view shown in the user's own browser, kept apart, and bridged to this run's server.

**The threat.** A view is HTML and script that a server wrote. Shown carelessly it could read mcpcli's host page or
another view, reach any site, loosen its own policy, open links or call tools behind the user's back (tools the
server keeps from apps among them); and a page of another site could reach the loopback servers (DNS rebinding) or
replay a link. **The rule.** A view gets what its resource declared, within what the spec allows, and nothing it
asks for in a message: an origin of its own (its own loopback servers), a Content-Security-Policy widened only by
plain origins (a non-origin is dropped, never passed through), one-time links whose token reaches no log, requests
refused unless their ``Host`` and ``Origin`` are the server's own, and every JSON-RPC request answered by the bridge
under the tool's visibility, a link opened only with the user's consent.

- ``resource``: the tool's ``ui://`` view found, read and checked (one clear line per way it fails), and what a run
  that can show views declares (``SHOWS_VIEWS``).
- ``bridge``: the view's JSON-RPC answered through the run's connection (``ui/initialize``, ``tools/call`` under
  the visibility guard, ``resources/read``, links, messages, display mode, teardown).
- ``host``: the loopback servers — the host page, each view's sandbox proxy and its own origin — and the one-time
  link to the page.
- ``http``: their HTTP/1.1, one bounded request per connection, checked before anything is served.
- ``csp``: what a view may load and use, from its declarations — its policy and its iframe's ``allow`` (the one
  table of CSP keys and permissions).
- ``site/``: the host page's and the sandbox proxy's HTML, script and style, shipped (no CDN; works offline).

The command that runs it is ``commands.apps`` (the TUI's screen: ``tui.apprun``). Importing this package imports
nothing: take the module you need.
"""
