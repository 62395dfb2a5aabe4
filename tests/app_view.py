"""The test view of ``tests/app_servers.py``: one HTML document (no external file, no CDN, no framework) whose plain
JavaScript speaks the MCP Apps protocol (SEP-1865, 2026-01-26) to ``window.parent`` by ``postMessage``, records all
it receives and renders it into elements with stable ids, for a browser test (Playwright) to read and click.

What it does by itself: sends ``ui/initialize`` (appCapabilities.availableDisplayModes ["inline", "fullscreen"],
appInfo {name: "mcpcli-test-view", version: "1.0.0"}, protocolVersion "2026-01-26"); on the answer writes the
``hostContext`` JSON into ``#init`` (the whole result into ``#init-result``), sends ``ui/notifications/initialized``
and then ``ui/notifications/size-changed`` {width, height} (again whenever its page's size changes). It answers
``ping`` with {}, ``ui/resource-teardown`` with {} (after writing its params into ``#teardown``), any other request
with error -32601.

Where it writes (each element's text is JSON unless said otherwise; empty until something arrives):

- ``#status``: "loading" → "initializing" → "initialized" (or "init-error").
- ``#init``: ``hostContext`` from the ``ui/initialize`` result; ``#init-result``: the whole result.
- ``#tool-input``: the params of ``ui/notifications/tool-input`` ({"arguments": …});
  ``#tool-input-partial``: the last ``ui/notifications/tool-input-partial``'s params.
- ``#tool-result``: the params of ``ui/notifications/tool-result`` (a CallToolResult).
- ``#tool-cancelled``: the params of ``ui/notifications/tool-cancelled`` ({"reason": …}).
- ``#host-context``: the last ``ui/notifications/host-context-changed``'s params.
- ``#teardown``: the params of ``ui/resource-teardown`` (the view has answered it with {}).
- ``#log``: every message the view received, one JSON line each, in order (``#log`` counts lines: ``data-count``).
- ``#sent``: every message the view sent, one JSON line each, but ``ui/notifications/size-changed``: the last size
  sent is in ``#size`` ({width, height}; sent only when it changed). Both logs scroll inside boxes of a fixed
  height, so their growth never resizes the page (no size-changed feedback loop with the host).

Buttons (click by id) and where each writes:

- ``#call-provision``: ``tools/call provision_app {"name": "from-view"}`` → ``#provision-result`` (the result) or
  ``#provision-error`` (the JSON-RPC error).
- ``#call-model-only``: ``tools/call model_only {}`` → ``#model-only-error`` (the error the host must give) or
  ``#model-only-result`` (if a result came back: the host let it through).
- ``#read``: ``resources/read note://apps/readme`` → ``#read-result`` or ``#read-error``.
- ``#open-link``: ``ui/open-link {"url": "https://example.com"}`` → ``#open-link-result`` ({"result": …} or
  {"error": …}).
- ``#message``: ``ui/message`` {role: "user", content: {type: "text", text: "hello from the view"}} →
  ``#message-result`` ({"result": …} or {"error": …}).
- ``#context``: ``ui/update-model-context`` {content: [{type: "text", text: "context from the view"}],
  structuredContent: {"picked": 42}} → ``#context-result`` ({"result": …} or {"error": …}).
- ``#fullscreen``: ``ui/request-display-mode {"mode": "fullscreen"}`` → ``#mode`` (the mode the host answered, plain
  text) or ``#mode-error``.
- ``#log-msg``: the notification ``notifications/message`` {level: "info", logger: "test-view", data: "hello from the
  view"}; writes "sent" into ``#log-msg-result``.
- ``#ping``: ``ping`` → ``#ping-result``.
- ``#probe``: what the sandbox lets the view do, into ``#probe-result`` (JSON, written once every probe finished):
  ``origin`` (location.origin), ``parent`` ("blocked: <error name>" or "READ: <title>" when the host page's DOM
  was reachable), ``storage_before`` (the value of localStorage "mcpcli-probe" before this probe wrote it: another
  view's value there means shared storage), ``storage_written`` / ``storage_after`` (or ``storage`` "blocked: …"),
  ``cookie`` (document.cookie, or "blocked: …"), ``fetch`` ("ok <status>" or "blocked: …" for the tool input's
  ``fetch_url``, "skipped" without one), ``img`` ("loaded" / "blocked" for the tool input's ``img_url``, "skipped"
  without one), ``csp_violations`` (the ``securitypolicyviolation`` events the view saw: blockedURI and directive).
"""

from __future__ import annotations

VIEW_SCRIPT = r"""
(function () {
  "use strict";
  var nextId = 1;
  var pending = {};
  var toolInput = {};
  var violations = [];
  function el(id) { return document.getElementById(id); }
  function put(id, value) { el(id).textContent = typeof value === "string" ? value : JSON.stringify(value); }
  function line(id, message) {
    var box = el(id);
    box.textContent += JSON.stringify(message) + "\n";
    box.setAttribute("data-count", String(Number(box.getAttribute("data-count") || "0") + 1));
  }
  function post(message) {
    if (message.method === "ui/notifications/size-changed") { put("size", message.params); }
    else { line("sent", message); }
    window.parent.postMessage(message, "*");
  }
  function request(method, params) {
    var id = nextId++;
    return new Promise(function (resolve, reject) {
      pending[id] = { resolve: resolve, reject: reject };
      post({ jsonrpc: "2.0", id: id, method: method, params: params });
    });
  }
  function notify(method, params) { post({ jsonrpc: "2.0", method: method, params: params }); }
  function answer(id, result) { post({ jsonrpc: "2.0", id: id, result: result }); }
  function refuse(id, code, message) { post({ jsonrpc: "2.0", id: id, error: { code: code, message: message } }); }

  document.addEventListener("securitypolicyviolation", function (e) {
    violations.push({ blockedURI: e.blockedURI, directive: e.effectiveDirective || e.violatedDirective });
  });

  window.addEventListener("message", function (event) {
    var m = event.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") { return; }
    line("log", m);
    if (m.method === undefined && m.id !== undefined && pending[m.id]) {
      var p = pending[m.id];
      delete pending[m.id];
      if (m.error !== undefined) { p.reject(m.error); } else { p.resolve(m.result); }
      return;
    }
    var params = m.params || {};
    if (m.id !== undefined && m.method !== undefined) {
      if (m.method === "ui/resource-teardown") { put("teardown", params); answer(m.id, {}); }
      else if (m.method === "ping") { answer(m.id, {}); }
      else { refuse(m.id, -32601, "Method not found: " + m.method); }
      return;
    }
    if (m.method === "ui/notifications/tool-input") { toolInput = params.arguments || {}; put("tool-input", params); }
    else if (m.method === "ui/notifications/tool-input-partial") { put("tool-input-partial", params); }
    else if (m.method === "ui/notifications/tool-result") { put("tool-result", params); }
    else if (m.method === "ui/notifications/tool-cancelled") { put("tool-cancelled", params); }
    else if (m.method === "ui/notifications/host-context-changed") { put("host-context", params); }
  });

  var lastSize = "";
  function sendSize() {
    var d = document.documentElement;
    var size = { width: d.scrollWidth, height: d.scrollHeight };
    if (JSON.stringify(size) === lastSize) { return; }
    lastSize = JSON.stringify(size);
    notify("ui/notifications/size-changed", size);
  }
  function button(id, run) { el(id).addEventListener("click", run); }
  function outcome(id) {
    return [function (r) { put(id, { result: r }); }, function (e) { put(id, { error: e }); }];
  }
  function wire() {
    button("call-provision", function () {
      request("tools/call", { name: "provision_app", arguments: { name: "from-view" } }).then(
        function (r) { put("provision-result", r); }, function (e) { put("provision-error", e); });
    });
    button("call-model-only", function () {
      request("tools/call", { name: "model_only", arguments: {} }).then(
        function (r) { put("model-only-result", r); }, function (e) { put("model-only-error", e); });
    });
    button("read", function () {
      request("resources/read", { uri: "note://apps/readme" }).then(
        function (r) { put("read-result", r); }, function (e) { put("read-error", e); });
    });
    button("open-link", function () {
      var o = outcome("open-link-result");
      request("ui/open-link", { url: "https://example.com" }).then(o[0], o[1]);
    });
    button("message", function () {
      var o = outcome("message-result");
      request("ui/message", { role: "user", content: { type: "text", text: "hello from the view" } }).then(o[0], o[1]);
    });
    button("context", function () {
      var o = outcome("context-result");
      request("ui/update-model-context", {
        content: [{ type: "text", text: "context from the view" }], structuredContent: { picked: 42 }
      }).then(o[0], o[1]);
    });
    button("fullscreen", function () {
      request("ui/request-display-mode", { mode: "fullscreen" }).then(
        function (r) { put("mode", String(r && r.mode)); }, function (e) { put("mode-error", e); });
    });
    button("log-msg", function () {
      notify("notifications/message", { level: "info", logger: "test-view", data: "hello from the view" });
      put("log-msg-result", "sent");
    });
    button("ping", function () {
      var o = outcome("ping-result");
      request("ping", {}).then(o[0], o[1]);
    });
    button("probe", probe);
  }

  function blocked(e) { return "blocked: " + ((e && e.name) || String(e)); }
  function probe() {
    var out = { origin: location.origin };
    try { out.parent = "READ: " + window.parent.document.title; } catch (e) { out.parent = blocked(e); }
    try {
      out.storage_before = localStorage.getItem("mcpcli-probe");
      out.storage_written = "view-" + Math.random().toString(36).slice(2);
      localStorage.setItem("mcpcli-probe", out.storage_written);
      out.storage_after = localStorage.getItem("mcpcli-probe");
    } catch (e) { out.storage = blocked(e); }
    try { out.cookie = document.cookie; } catch (e) { out.cookie = blocked(e); }
    var fetched = toolInput.fetch_url
      ? fetch(toolInput.fetch_url).then(
          function (r) { out.fetch = "ok " + r.status; }, function (e) { out.fetch = blocked(e); })
      : Promise.resolve((out.fetch = "skipped"));
    var imaged = new Promise(function (resolve) {
      if (!toolInput.img_url) { out.img = "skipped"; resolve(); return; }
      var img = new Image();
      img.onload = function () { out.img = "loaded"; resolve(); };
      img.onerror = function () { out.img = "blocked"; resolve(); };
      img.src = toolInput.img_url;
      el("probe-area").appendChild(img);
    });
    Promise.all([fetched, imaged]).then(function () {
      setTimeout(function () { out.csp_violations = violations.slice(); put("probe-result", out); }, 100);
    });
  }

  wire();
  if (window.ResizeObserver) {
    new ResizeObserver(function () {
      if (el("status").textContent === "initialized") { sendSize(); }
    }).observe(document.body);
  }
  put("status", "initializing");
  request("ui/initialize", {
    appCapabilities: { availableDisplayModes: ["inline", "fullscreen"] },
    appInfo: { name: "mcpcli-test-view", version: "1.0.0" },
    protocolVersion: "2026-01-26"
  }).then(function (result) {
    put("init-result", result);
    put("init", (result && result.hostContext) || {});
    notify("ui/notifications/initialized", {});
    put("status", "initialized");
    sendSize();
  }, function (error) { put("status", "init-error"); put("init-result", { error: error }); });
})();
"""

ELEMENTS = (
    *("init", "init-result", "tool-input", "tool-input-partial", "tool-result", "tool-cancelled", "host-context"),
    *("teardown", "provision-result", "provision-error", "model-only-result", "model-only-error", "read-result"),
    *("read-error", "open-link-result", "message-result", "context-result", "mode", "mode-error", "log-msg-result"),
    *("ping-result", "probe-result"),
)
"""The ids of the elements the view writes into (besides ``#status``, ``#title``, ``#log`` and ``#sent``)."""
BUTTONS = ("call-provision", "call-model-only", "read", "open-link", "message", "context", "fullscreen", "log-msg")
BUTTONS += ("ping", "probe")
"""The ids of the view's buttons."""


def view_html(title: str = "mcpcli test view", *, initialize: bool = True) -> str:
    """The view's HTML document. ``initialize=False``: the same page without its script (it never sends
    ``ui/initialize``: the host must give up on it within its bound)."""
    blocks = "\n".join(f'<pre id="{name}"></pre>' for name in ELEMENTS)
    buttons = "\n".join(f'<button id="{name}">{name}</button>' for name in BUTTONS)
    script = f"<script>{VIEW_SCRIPT}</script>" if initialize else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{title}</title>
<style>body {{ font: 13px monospace; margin: 8px; }} pre {{ white-space: pre-wrap; margin: 2px 0; }}
.box {{ height: 240px; overflow: auto; border: 1px solid #ccc; }}</style>
</head>
<body>
<h1 id="title">{title}</h1>
<p id="status">loading</p>
<p id="size"></p>
{buttons}
{blocks}
<div id="probe-area"></div>
<div class="box"><h2>received</h2><pre id="log" data-count="0"></pre></div>
<div class="box"><h2>sent</h2><pre id="sent" data-count="0"></pre></div>
{script}
</body>
</html>
"""
