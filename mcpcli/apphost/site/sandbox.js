// mcpcli's sandbox proxy (MCP Apps): runs on an origin of its own, between the host page (its parent) and the view
// (its one child, on a third origin). It forwards JSON-RPC messages both ways, each only from the one window and
// origin it expects and only to the one origin it means; it never forwards ui/notifications/sandbox-* messages. The
// view's address, origin and permissions come from this page's own <meta> tags (written by mcpcli's server), not from
// any message, so nothing the host page or the view sends can make it load something else.
"use strict";
(function () {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`).content;
  const HOST = meta("mcpcli-host-origin");
  const VIEW = meta("mcpcli-view-origin");
  const SRC = meta("mcpcli-view-src");
  const ALLOW = meta("mcpcli-view-allow");
  const SANDBOX = "allow-scripts allow-same-origin allow-forms";
  const PREFIX = "ui/notifications/sandbox-";
  let inner = null;
  let ready = false;
  const early = []; // host → view messages that came before the view existed (a host should not send any)

  const isMessage = (data) =>
    data !== null && typeof data === "object" && !Array.isArray(data) && data.jsonrpc === "2.0";
  const isSandbox = (data) => typeof data.method === "string" && data.method.startsWith(PREFIX);

  function load() {
    if (inner !== null) return; // loaded once: a second resource-ready changes nothing
    inner = document.createElement("iframe");
    inner.setAttribute("sandbox", SANDBOX);
    if (ALLOW) inner.setAttribute("allow", ALLOW);
    inner.setAttribute("referrerpolicy", "no-referrer");
    inner.setAttribute("title", "MCP App view");
    inner.src = SRC;
    document.body.appendChild(inner);
    inner.addEventListener("load", () => {
      ready = true;
      while (early.length) inner.contentWindow.postMessage(early.shift(), VIEW);
    }, { once: true });
  }

  window.addEventListener("message", (event) => {
    const data = event.data;
    if (!isMessage(data)) return;
    if (event.source === window.parent && event.origin === HOST) {
      if (isSandbox(data)) {
        if (data.method === "ui/notifications/sandbox-resource-ready") load();
        return;
      }
      if (inner === null) return;
      if (!ready) early.push(data);
      else inner.contentWindow.postMessage(data, VIEW);
      return;
    }
    if (inner !== null && event.source === inner.contentWindow && event.origin === VIEW) {
      if (isSandbox(data)) return;
      window.parent.postMessage(data, HOST);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} }, HOST);
})();
