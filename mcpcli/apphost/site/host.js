// mcpcli's host page for MCP Apps. It holds no secret of its own: it trades the one-time token of its URL's fragment
// for a session key, reads mcpcli's commands from a streamed fetch of /events (NDJSON), shows each view in a sandbox
// proxy iframe on the view's own origin, and carries JSON-RPC messages between those iframes and mcpcli without
// reading them (it only answers the proxy's sandbox-proxy-ready, and resizes a view on its size-changed).
"use strict";
(function () {
  const PREFIX = "ui/notifications/sandbox-";
  const MAX_WIDTH = 4000;
  const MAX_HEIGHT = 20000;
  const statusLine = document.getElementById("status");
  const viewsBox = document.getElementById("views");
  const views = new Map(); // id → {box, frame, origin, spec, ready}
  let session = null;
  let outbox = [];
  let posting = false;
  let stopped = false;

  function status(text, kind) {
    statusLine.textContent = text;
    statusLine.dataset.kind = kind;
  }

  function stop(text) {
    if (stopped) return;
    stopped = true;
    status(text || "mcpcli stopped — you can close this tab", "stopped");
    for (const id of [...views.keys()]) closeView(id);
  }

  // --- page → mcpcli: one POST at a time, so the view's messages arrive in the order it sent them ---
  function post(view, message) {
    if (stopped || session === null) return;
    outbox.push({ view, message });
    if (!posting) flush();
  }

  async function flush() {
    posting = true;
    while (outbox.length && !stopped) {
      const batch = outbox;
      outbox = [];
      try {
        const answer = await fetch("/messages", {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Mcpcli-Session": session },
          body: JSON.stringify({ messages: batch }),
          cache: "no-store",
        });
        if (!answer.ok && answer.status !== 413) stop();
      } catch (error) {
        stop();
      }
    }
    posting = false;
  }

  // --- mcpcli → page ---
  function openView(command) {
    if (views.has(command.view)) return;
    const box = document.createElement("section");
    box.className = "view";
    if (command.prefersBorder === false) box.classList.add("borderless");
    const label = document.createElement("div");
    label.className = "boundary";
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = command.title || "MCP App";
    const from = document.createElement("span");
    from.className = "from";
    from.textContent = command.server ? `sandboxed view from ${command.server}` : "sandboxed view";
    label.append(title, from);
    const frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
    if (command.outerAllow) frame.setAttribute("allow", command.outerAllow);
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.setAttribute("title", command.title || "MCP App");
    frame.src = command.proxy;
    box.append(label, frame);
    viewsBox.appendChild(box);
    views.set(command.view, { box, frame, origin: command.proxyOrigin, spec: command, ready: false });
  }

  function closeView(id) {
    const view = views.get(id);
    if (!view) return;
    views.delete(id);
    view.box.remove();
  }

  function resize(view, params) {
    if (!params || typeof params !== "object") return;
    const clamp = (value, most) => Math.max(0, Math.min(most, Math.round(value)));
    if (Number.isFinite(params.width)) view.frame.style.width = `${clamp(params.width, MAX_WIDTH)}px`;
    if (Number.isFinite(params.height)) view.frame.style.height = `${clamp(params.height, MAX_HEIGHT)}px`;
  }

  function command(line) {
    let order;
    try {
      order = JSON.parse(line);
    } catch (error) {
      return;
    }
    if (!order || typeof order !== "object") return;
    const view = views.get(order.view);
    if (order.type === "open") openView(order);
    else if (order.type === "send" && view) view.frame.contentWindow.postMessage(order.message, view.origin);
    else if (order.type === "close") closeView(order.view);
    else if (order.type === "display-mode" && view) view.box.classList.toggle("fullscreen", order.mode === "fullscreen");
    else if (order.type === "stopped") stop();
  }

  // --- the proxies' messages: only from a view's own proxy window, on its own origin ---
  window.addEventListener("message", (event) => {
    let id = null;
    for (const [key, view] of views) {
      if (event.source === view.frame.contentWindow && event.origin === view.origin) id = key;
    }
    if (id === null) return;
    const view = views.get(id);
    const data = event.data;
    if (!data || typeof data !== "object" || Array.isArray(data) || data.jsonrpc !== "2.0") return;
    if (typeof data.method === "string" && data.method.startsWith(PREFIX)) {
      if (data.method === "ui/notifications/sandbox-proxy-ready" && !view.ready) {
        view.ready = true;
        const params = { csp: view.spec.csp || {}, permissions: view.spec.permissions || {}, sandbox: "allow-scripts allow-same-origin allow-forms" };
        view.frame.contentWindow.postMessage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready", params }, view.origin);
      }
      return;
    }
    if (data.method === "ui/notifications/size-changed") resize(view, data.params);
    post(id, data);
  });

  async function events() {
    const answer = await fetch("/events", { headers: { "X-Mcpcli-Session": session }, cache: "no-store" });
    if (!answer.ok || !answer.body) throw new Error("no event stream");
    status("connected to mcpcli", "connected");
    const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
    let pending = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += value;
      let end;
      while ((end = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        if (line.trim()) command(line);
      }
    }
  }

  async function attach() {
    const token = location.hash.slice(1);
    history.replaceState(null, "", location.pathname); // the token leaves the address bar and the history at once
    if (!token) {
      status("This page opens only from the link mcpcli prints (each link works once).", "stopped");
      return;
    }
    let answer;
    try {
      answer = await fetch("/attach", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token }),
        cache: "no-store",
      });
    } catch (error) {
      status("mcpcli is not running — you can close this tab", "stopped");
      return;
    }
    if (!answer.ok) {
      status("This link was already used or has expired: run the mcpcli command again.", "stopped");
      return;
    }
    session = (await answer.json()).session;
    window.addEventListener("pagehide", () => {
      if (!stopped) navigator.sendBeacon("/detach", new Blob([session], { type: "text/plain" }));
    });
    try {
      await events();
    } catch (error) {
      // the stream broke: mcpcli stopped
    }
    stop();
  }

  attach();
})();
