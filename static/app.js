// Parley's page script: the WebSocket hello (so a reconnect catches up from
// the last event the page has), the offline banner, keyboard sending, queued
// prompts, session totals, ask card feedback and countdowns. Everything
// else is htmx.
(function () {
  "use strict";

  // Reconnect soon after a drop, then back off (with jitter) to 10 s; never
  // once the page learnt that its sign-in or access ended (ended, below).
  var ended = false;
  if (window.htmx) htmx.config.wsReconnectDelay = function (n) { return ended ? 2147483647 : reconnectDelay(n); };

  function lastSeq() {
    var el = document.getElementById("last-seq");
    return el ? parseInt(el.getAttribute("data-seq") || "0", 10) : 0;
  }

  function setConn(text, state) {
    var el = document.getElementById("conn");
    if (!el) return;
    el.textContent = text;
    el.setAttribute("data-state", state);
  }

  // The banner says when the page is offline and when it is back.
  var wasOffline = false, bannerTimer = null;
  function banner(text, state) {
    var el = document.getElementById("offline");
    if (!el) return;
    clearTimeout(bannerTimer);
    if (!text) { el.hidden = true; return; }
    el.textContent = text;
    el.setAttribute("data-state", state);
    el.hidden = false;
  }

  // On every (re)connect, tell the server which events the page already has.
  // The header's inbox counter has its own socket (static/ask.js); it is not
  // the page's connection.
  function counterSocket(e) {
    return e.target && e.target.closest && e.target.closest(".inbox-live");
  }
  document.addEventListener("htmx:wsOpen", function (e) {
    if (counterSocket(e)) return;
    flushDeltas();
    e.detail.socketWrapper.sendImmediately(JSON.stringify({ action: "hello", after: lastSeq() }));
    setConn("live", "live");
    if (wasOffline) {
      wasOffline = false;
      banner("Back online: catching up on what you missed.", "back");
      bannerTimer = setTimeout(function () { banner(""); }, 4000);
    }
  });
  // The close-code contract with the server (server/ws_close.go): 4001 the
  // sign-in ended, 4003 access to the session ended, 1008 a refusal that a
  // reconnect cannot fix (too many tabs; the reason says what to do). Every
  // other close is recoverable. htmx's ws extension reconnects by itself
  // after 1006, 1011, 1012 and 1013; this page reconnects after all the
  // others too (1000, 1001 at a server restart, 1009, unknown codes), with
  // the same capped, jittered backoff. The catch-up makes it lossless.
  var finalClose = { 4001: true, 4003: true, 1008: true };
  var extReconnects = { 1006: true, 1011: true, 1012: true, 1013: true };
  var retries = new WeakMap(), openedAt = new WeakMap();
  function reconnectDelay(n) {
    var max = Math.min(500 * Math.pow(2, n), 10000);
    return max / 2 + (max / 2) * Math.random();
  }
  document.addEventListener("htmx:wsOpen", function (e) { openedAt.set(e.target, Date.now()); }, true);
  document.addEventListener("htmx:wsClose", function (e) {
    var ev = e.detail && e.detail.event, el = e.target, w = e.detail && e.detail.socketWrapper;
    var code = ev ? ev.code : 1006;
    if (ended || finalClose[code] || extReconnects[code] || !w || !document.body.contains(el)) return;
    // A socket that was closed soon after it opened keeps backing off.
    var n = Date.now() - (openedAt.get(el) || 0) > 10000 ? 0 : (retries.get(el) || 0);
    retries.set(el, n + 1);
    setTimeout(function () { if (document.body.contains(el)) w.reconnect(); }, reconnectDelay(n));
  });
  function signInLink() {
    var a = document.createElement("a");
    a.href = "/login?next=" + encodeURIComponent(location.pathname);
    a.textContent = "Sign in";
    return a;
  }
  function stopped(code, reason) {
    ended = true;
    setConn("closed", "closed");
    banner(reason || "Parley closed this page's connection: reload it.", "closed");
    var el = document.getElementById("offline");
    if (el && code === 4001) { el.appendChild(document.createTextNode(" ")); el.appendChild(signInLink()); }
  }
  // A socket that cannot reconnect gets no close code from the browser
  // (1006), whether the server is away or refused the handshake because the
  // sign-in ended while the page was offline. A plain request tells them
  // apart: the page itself answers a redirect to sign in (signed out), 403
  // or 404 (access ended), or fails (the server is still away: keep trying).
  var probing = false;
  function probeAccess() {
    if (probing || ended || !window.fetch) return;
    probing = true;
    fetch(location.pathname, { method: "HEAD", redirect: "manual", cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        if (r.type === "opaqueredirect" || r.status === 401) stopped(4001, "Your sign-in has ended: sign in again to go on.");
        else if (r.status === 403 || r.status === 404) stopped(4003, "You no longer have access to this session.");
      }, function () {})
      .then(function () { probing = false; });
  }
  document.addEventListener("htmx:wsClose", function (e) {
    if (counterSocket(e) || ended) return;
    var ev = e.detail && e.detail.event;
    if (ev && finalClose[ev.code]) {
      stopped(ev.code, ev.reason);
      return;
    }
    if (!ev || ev.code === 1006) probeAccess();
    wasOffline = true;
    setConn("offline", "offline");
    banner("You are offline. Reconnecting… Nothing is lost: the page catches up when it is back.", "offline");
  });
  window.addEventListener("offline", function () {
    banner("Your device is offline. The page reconnects when the network is back.", "offline");
  });

  // A fragment whose target is not on the page (a replaced block that was
  // never shown) is appended rather than lost.
  document.body.addEventListener("htmx:oobErrorNoTarget", function (e) {
    var events = document.getElementById("events");
    var content = e.detail && e.detail.content;
    if (events && content && content.id && content.classList && content.classList.contains("item")) {
      events.appendChild(content);
    }
  });

  // Streamed text arrives as many small delta messages. Applying each as
  // an htmx swap (and re-running the handlers below) falls ever further
  // behind on a long reply, so a message that is only a delta is gathered
  // here and appended as one text node per animation frame; any other
  // message, or a delta for another message, first flushes what is
  // gathered, so order is kept. A delta names its message's block by id.
  var deltaRe = /^<div hx-swap-oob="beforeend:#(m-[A-Za-z0-9_-]+) \.body">([^<]*)<\/div><div id="last-seq" data-seq="(\d+)" hidden hx-swap-oob="true"><\/div>$/;
  var pendingText = "", pendingBlock = "", pendingSeq = "", flushScheduled = false, decoder = document.createElement("textarea");
  function flushDeltas() {
    flushScheduled = false;
    if (!pendingText) return;
    decoder.innerHTML = pendingText;
    var block = document.getElementById(pendingBlock);
    var body = block && block.querySelector(".body");
    if (body) body.appendChild(document.createTextNode(decoder.value));
    var seq = document.getElementById("last-seq");
    if (seq) seq.setAttribute("data-seq", pendingSeq);
    pendingText = "";
    if (stick) window.scrollTo(0, document.body.scrollHeight);
  }
  document.addEventListener("htmx:wsBeforeMessage", function (e) {
    if (counterSocket(e)) return;
    var m = deltaRe.exec(e.detail.message);
    if (!m || m[1] !== pendingBlock) flushDeltas();
    if (!m) return;
    e.preventDefault();
    pendingBlock = m[1];
    pendingText += m[2];
    pendingSeq = m[3];
    if (!flushScheduled) {
      flushScheduled = true;
      requestAnimationFrame(flushDeltas);
    }
  });

  // A reply whose stream was cut off (its run or turn ended first) gets a
  // cut mark: its block is no longer live.
  if (window.htmx) htmx.onLoad(function (el) {
    var marks = el.classList && el.classList.contains("cut-mark") ? [el] : (el.querySelectorAll ? el.querySelectorAll(".cut-mark") : []);
    for (var i = 0; i < marks.length; i++) {
      var block = marks[i].closest(".assistant");
      if (block) block.classList.remove("live");
    }
  });

  // Keep the newest event in view when the reader is already at the bottom.
  var stick = true;
  window.addEventListener("scroll", function () {
    stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  });
  // Only the session's own socket moves the page: the header's inbox
  // counter, the inbox list and the sidebar have sockets of their own.
  document.addEventListener("htmx:wsAfterMessage", function (e) {
    var chat = e.target && e.target.closest && e.target.closest(".chat");
    if (stick && chat) window.scrollTo(0, document.body.scrollHeight);
    updateQueued();
    updateTotals();
  });

  // A queued prompt's turn has started once a turn result follows it.
  function updateQueued() {
    document.querySelectorAll("#events .prompt.is-queued").forEach(function (p) {
      for (var n = p.nextElementSibling; n; n = n.nextElementSibling) {
        if (n.classList.contains("turn-result")) {
          p.classList.remove("is-queued");
          var q = p.querySelector(".queued");
          if (q) q.textContent = "was queued";
          return;
        }
      }
    });
  }

  // The session's totals are the sums of its turns' figures.
  function fmtTokens(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e4) return Math.floor(n / 1e3) + "k";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + "k";
    return String(n);
  }
  function fmtMs(ms) {
    var s = ms / 1000;
    if (s < 10) return s.toFixed(1) + " s";
    if (s < 60) return Math.floor(s) + " s";
    return Math.floor(s / 60) + " min " + (Math.floor(s) % 60) + " s";
  }
  function updateTotals() {
    var stats = document.getElementById("session-stats");
    if (!stats) return;
    var cost = 0, tin = 0, tout = 0, turns = 0, ms = 0;
    document.querySelectorAll("#events .turn-result").forEach(function (r) {
      cost += parseFloat(r.dataset.cost || "0");
      tin += parseInt(r.dataset.in || "0", 10);
      tout += parseInt(r.dataset.out || "0", 10);
      turns += parseInt(r.dataset.turns || "0", 10);
      ms += parseInt(r.dataset.ms || "0", 10);
    });
    function set(k, v) { var el = stats.querySelector('[data-stat="' + k + '"]'); if (el) el.textContent = v; }
    set("cost", "$" + (cost < 1 ? cost.toFixed(4) : cost.toFixed(2)));
    set("tokens", fmtTokens(tin) + " in / " + fmtTokens(tout) + " out");
    set("turns", String(turns));
    set("time", fmtMs(ms));
  }

  // Enter sends, Shift+Enter adds a line.
  document.addEventListener("keydown", function (e) {
    if (e.target.id === "prompt" && e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (e.target.value.trim() !== "") e.target.form.requestSubmit();
    }
  });

  // A message over the server's limit is refused here, before sending,
  // with the limit stated; the text stays in the box and the socket open.
  // The server refuses one too (an error frame), in the same words.
  var encoder = new TextEncoder();
  function sizeText(n) {
    return n < 1048576 ? Math.ceil(n / 1024) + " KiB" : (n / 1048576).toFixed(1) + " MiB";
  }
  function bytes(s) { return typeof s === "string" ? encoder.encode(s).length : 0; }
  // answerBytes counts an answer's text as the server does
  // (runner.Response.TextBytes after parseAnswer): the command or input as
  // edited, the plan mode, a refusal's reason, each question's choices and
  // free text; not the field names or the ids around them.
  function answerBytes(message) {
    var f;
    try { f = JSON.parse(message); } catch (err) { return encoder.encode(message).length; }
    switch (f.decision || "") {
    case "": case "answer":
      var n = 0;
      Object.keys(f).forEach(function (k) {
        if (/^choice(_\d+)?$/.test(k)) [].concat(f[k]).forEach(function (v) { n += bytes(v); });
        if (/^other(_\d+)?$/.test(k)) n += bytes(typeof f[k] === "string" ? f[k].trim() : "");
      });
      return n;
    case "allow":
      return bytes(f.command) + bytes(typeof f.input === "string" ? f.input.trim() : "");
    case "approve":
      return bytes(f.mode);
    case "deny": case "changes": case "decline":
      return bytes(typeof f.reason === "string" ? f.reason.trim() : "");
    }
    return 0;
  }
  function note(form, text) {
    var el = form.id === "prompt-form" ? document.getElementById("prompt-note") : form.querySelector(".ask-state");
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
  }
  document.addEventListener("htmx:wsBeforeSend", function (e) {
    var form = e.target.closest ? e.target.closest("form") : null;
    var limit = parseInt(document.body.getAttribute("data-max-bytes") || "0", 10);
    if (!form || !limit) return;
    var box = form.id === "prompt-form" ? form.querySelector("textarea") : null;
    var n = box ? bytes(box.value.trim()) : answerBytes(e.detail.message);
    if (n <= limit) { note(form, ""); return; }
    e.preventDefault();
    note(form, "This message is " + sizeText(n) + "; the limit is " + sizeText(limit) + ".");
  });
  document.addEventListener("input", function (e) {
    if (e.target.id === "prompt" && e.target.form) note(e.target.form, "");
  });

  document.addEventListener("htmx:wsAfterSend", function (e) {
    var form = e.target.closest ? e.target.closest("form") : null;
    if (!form) return;
    if (form.id === "prompt-form") {
      form.reset();
    } else if (form.classList.contains("ask-form")) {
      var state = form.querySelector(".ask-state");
      if (state) state.textContent = "Answer sent…";
      form.classList.add("sent");
    }
  });

  // Who is looking: the session and inbox pages tell the server over their
  // socket whether the page is visible, when the socket opens, on every
  // change and every 20 s while visible (the server forgets a report after
  // 45 s), so nobody is pushed about an ask someone is looking at. An open
  // socket alone proves nothing: a hidden tab reports false.
  var lookers = new Map(); // socket element → the ws extension's socketWrapper
  function reportVisible(w, leaving) {
    try {
      w.sendImmediately(JSON.stringify({ action: "visible", visible: !leaving && document.visibilityState === "visible" }));
    } catch (err) { /* the socket is closing; its next open reports again */ }
  }
  document.addEventListener("htmx:wsOpen", function (e) {
    if (counterSocket(e)) return;
    lookers.set(e.target, e.detail.socketWrapper);
    reportVisible(e.detail.socketWrapper);
  });
  document.addEventListener("htmx:wsClose", function (e) { lookers.delete(e.target); });
  function reportAll(leaving) {
    lookers.forEach(function (w, el) { if (document.body.contains(el)) reportVisible(w, leaving); else lookers.delete(el); });
  }
  document.addEventListener("visibilitychange", function () { reportAll(false); });
  window.addEventListener("pagehide", function () { reportAll(true); });
  setInterval(function () { if (document.visibilityState === "visible") reportAll(false); }, 20000);

  // Typing in the composer tells the server a message is coming, at most
  // every 10 s: a session whose claude process has ended starts it now, so
  // the message finds it live (server/ahead.go).
  var lastTyping = 0;
  document.addEventListener("input", function (e) {
    if (!e.target || e.target.id !== "prompt") return;
    var now = Date.now();
    if (now - lastTyping < 10000) return;
    var chat = e.target.closest("[ws-connect]");
    var w = chat && lookers.get(chat);
    if (!w) return;
    lastTyping = now;
    try { w.sendImmediately(JSON.stringify({ action: "typing" })); } catch (err) { /* reconnecting */ }
  });

  // Countdown to an ask's deadline (display only; the server decides).
  function tick() {
    var now = Date.now();
    document.querySelectorAll(".countdown[data-deadline]").forEach(function (el) {
      var left = Math.max(0, Math.round((Date.parse(el.getAttribute("data-deadline")) - now) / 1000));
      var m = Math.floor(left / 60), s = left % 60;
      el.textContent = "times out in " + m + ":" + (s < 10 ? "0" : "") + s;
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("htmx:wsAfterMessage", tick);
})();
