// Sessions at a glance: the session page's sidebar (a drawer on a phone),
// the home page's board, both live over their own WebSocket, and the
// keyboard shortcuts with their `?` help. Views: views/sidebar.templ,
// views/board.templ, views/nav.templ; server: server/board*.go.
(function () {
  "use strict";

  // Frames are <template data-op> elements (views.LivePut, LiveRemove,
  // LiveReplace): each names exactly the elements it changes.
  function apply(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    Array.prototype.forEach.call(t.content.children, function (op) {
      if (op.tagName !== "TEMPLATE") return;
      var kind = op.getAttribute("data-op");
      if (kind === "remove") {
        var gone = document.getElementById(op.getAttribute("data-id"));
        if (gone) gone.remove();
      } else if (kind === "put") {
        var el = op.content.firstElementChild, list = document.getElementById(op.getAttribute("data-into"));
        if (!el || !list) return;
        var old = document.getElementById(el.id);
        if (old) old.remove();
        var before = op.getAttribute("data-before") && document.getElementById(op.getAttribute("data-before"));
        if (before && before.parentNode === list) list.insertBefore(el, before);
        else list.appendChild(el);
      } else if (kind === "replace") {
        Array.prototype.slice.call(op.content.children).forEach(function (el) {
          var old = el.id && document.getElementById(el.id);
          if (old) old.replaceWith(el);
        });
      }
    });
    needsDot();
  }

  // The drawer's button says when sessions need the person.
  function needsDot() {
    var n = document.getElementById("sb-needs"), dot = document.getElementById("sidebar-toggle-needs");
    if (!n || !dot) return;
    var count = parseInt(n.getAttribute("data-count") || "0", 10);
    dot.hidden = !(count > 0);
    dot.textContent = count > 0 ? " (" + count + " " + (count === 1 ? "needs" : "need") + " you)" : "";
  }

  // live keeps one socket open to path, reconnecting with a capped,
  // jittered backoff unless the server said why not to (server/ws_close.go).
  function live(path, root) {
    var wait = 500;
    function open() {
      var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + path);
      ws.onopen = function () { wait = 500; root.setAttribute("data-live", "open"); };
      ws.onmessage = function (e) { apply(e.data); };
      ws.onclose = function (e) {
        root.setAttribute("data-live", "closed");
        if (e.code === 4001 || e.code === 4003 || e.code === 1008) return;
        setTimeout(open, wait + Math.random() * wait);
        wait = Math.min(wait * 2, 8000);
      };
    }
    open();
  }

  function loadSidebar() {
    var sb = document.getElementById("sidebar");
    if (!sb || !sb.getAttribute("data-src")) return;
    var src = sb.getAttribute("data-src");
    fetch(src, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        sb.innerHTML = html;
        sb.setAttribute("data-loaded", "1");
        needsDot();
        live(src.replace("/sidebar?", "/sidebar/ws?"), sb);
      })
      .catch(function () { sb.setAttribute("data-loaded", "failed"); });
  }

  // The drawer (narrow screens): the toggle opens it, Escape, the close
  // button or a click outside close it; focus goes in and comes back.
  function drawerOpen() {
    var sb = document.getElementById("sidebar");
    return !!sb && sb.classList.contains("open");
  }
  function setDrawer(open) {
    var sb = document.getElementById("sidebar"), btn = document.getElementById("sidebar-toggle");
    if (!sb || !btn) return;
    sb.classList.toggle("open", open);
    document.body.classList.toggle("drawer-open", open);
    btn.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) {
      sb.setAttribute("role", "dialog");
      sb.setAttribute("aria-modal", "true");
      var first = sb.querySelector("[data-nav-close]") || sb.querySelector("a, button, input");
      if (first) first.focus();
    } else {
      sb.removeAttribute("role");
      sb.removeAttribute("aria-modal");
      btn.focus();
    }
  }
  document.addEventListener("click", function (e) {
    var t = e.target;
    if (!t.closest) return;
    if (t.closest("#sidebar-toggle")) { setDrawer(!drawerOpen()); return; }
    if (t.closest("[data-nav-close]")) { setDrawer(false); return; }
    if (drawerOpen() && !t.closest("#sidebar")) setDrawer(false);
  });
  // Tab stays inside the open drawer.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Tab" || !drawerOpen()) return;
    var f = document.getElementById("sidebar").querySelectorAll("a[href], button, input");
    if (!f.length) return;
    var first = f[0], last = f[f.length - 1];
    if (e.shiftKey && document.activeElement === first) { last.focus(); e.preventDefault(); }
    else if (!e.shiftKey && document.activeElement === last) { first.focus(); e.preventDefault(); }
  });

  // typing says whether a key goes to a field: no shortcut fires then.
  function typing(t) {
    if (!t || !t.tagName) return false;
    var tag = t.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || t.isContentEditable;
  }

  function go(href) { window.location.assign(href); }

  function newSession() {
    var box = document.getElementById("new-prompt");
    if (box) { box.scrollIntoView({ block: "center" }); box.focus(); return; }
    var link = document.querySelector("[data-nav=new]");
    if (link) go(link.getAttribute("href"));
  }

  function search() {
    var box = document.querySelector("[data-nav=search]") || document.getElementById("q");
    if (!box) return false;
    if (box.offsetParent === null && box.closest("#sidebar")) setDrawer(true); // in the closed drawer
    box.focus();
    return true;
  }

  // nextAsk goes to the next session that needs the person, after the
  // open one, in the order the page lists them; with none, to the inbox.
  function nextAsk() {
    // On the inbox, the next open ask after the one with the focus.
    var cards = Array.prototype.slice.call(document.querySelectorAll(".inbox-item .ask:not([data-status])"));
    if (cards.length) {
      var at = cards.findIndex(function (c) { return c.contains(document.activeElement); });
      var card = cards[(at + 1) % cards.length];
      card.scrollIntoView({ block: "center" });
      var f = card.querySelector("textarea, input:not([type=hidden]), select, button");
      if (f) f.focus();
      return;
    }
    var seen = {}, ids = [];
    document.querySelectorAll('[data-status="needs-you"][data-session]').forEach(function (el) {
      var id = el.getAttribute("data-session");
      if (!seen[id]) { seen[id] = true; ids.push(id); }
    });
    var sb = document.getElementById("sidebar");
    var current = sb ? sb.getAttribute("data-current") : "";
    var others = ids.filter(function (id) { return id !== current; });
    if (!others.length) { go("/inbox"); return; }
    var at = ids.indexOf(current), next = others[0];
    for (var i = 1; at >= 0 && i <= ids.length; i++) {
      var id = ids[(at + i) % ids.length];
      if (id !== current) { next = id; break; }
    }
    go("/sessions/" + next);
  }

  function help() {
    var d = document.getElementById("nav-help");
    if (d && !d.open) { d.showModal(); var c = document.getElementById("nav-help-close"); if (c) c.focus(); }
  }

  var gAt = 0;
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && drawerOpen()) { setDrawer(false); e.preventDefault(); return; }
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    var d = document.getElementById("nav-help");
    if (d && d.open) return;
    var k = e.key, g = Date.now() - gAt < 1500;
    gAt = 0;
    if (g && k === "i") { go("/inbox"); e.preventDefault(); return; }
    switch (k) {
      case "g": gAt = Date.now(); return;
      case "c": newSession(); break;
      case "/": if (!search()) return; break;
      case "j": nextAsk(); break;
      case "s": if (document.getElementById("sidebar-toggle")) setDrawer(!drawerOpen()); break;
      case "?": help(); break;
      default: return;
    }
    e.preventDefault();
  });

  function start() {
    loadSidebar();
    var b = document.getElementById("board");
    if (b && b.getAttribute("data-ws")) live(b.getAttribute("data-ws"), b);
    if (location.hash === "#new-prompt") {
      var box = document.getElementById("new-prompt");
      if (box) box.focus();
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
