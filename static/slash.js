// slash.js: completes "/" commands in the composer (the ARIA combobox
// pattern on the composer's textbox with a listbox popup: arrows move,
// Enter or Tab picks, Escape closes) and sends
// the header's model and permission-mode menus as switches.
(function () {
  "use strict";
  var cache = null, loading = null;

  function sessionID() {
    var s = document.querySelector("section.chat[data-session]");
    return s ? s.getAttribute("data-session") : "";
  }

  // commands loads the session's commands once per page; "/" typed again
  // after a turn refreshes them (the CLI's list comes with each turn).
  function commands(fresh) {
    if (cache && !fresh) return Promise.resolve(cache);
    if (loading) return loading;
    loading = fetch("/sessions/" + sessionID() + "/commands", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : { commands: [] }; })
      .then(function (j) { cache = j.commands || []; loading = null; return cache; })
      .catch(function () { loading = null; return cache || []; });
    return loading;
  }

  var box, list, items = [], active = -1;

  function setup() {
    box = document.getElementById("prompt");
    if (!box || document.getElementById("slash-list")) return;
    list = document.createElement("ul");
    list.id = "slash-list";
    list.className = "slash-list";
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Commands");
    // Focusable, as a scrollable region must be; the composer keeps focus
    // and moves through the options with the arrows.
    list.tabIndex = 0;
    list.hidden = true;
    box.parentNode.insertBefore(list, box.nextSibling);
    // The composer stays a textbox (a textarea may take no combobox role):
    // aria-autocomplete, aria-controls and aria-activedescendant tell
    // assistive technology about the list, as the combobox pattern does.
    box.setAttribute("aria-autocomplete", "list");
    box.setAttribute("aria-controls", "slash-list");
    box.addEventListener("input", update);
    box.addEventListener("blur", function () { setTimeout(close, 150); });
    list.addEventListener("mousedown", function (e) { e.preventDefault(); });
    list.addEventListener("click", function (e) {
      var li = e.target.closest("li[data-name]");
      if (li) pick(li.getAttribute("data-name"));
    });
  }

  // prefix is the command name being typed: the text from its leading "/"
  // to the caret, when no space came yet.
  // Leading blank lines are ignored, as the server ignores them.
  function prefix() {
    var v = box.value, end = box.selectionEnd;
    var lead = v.length - v.replace(/^\s+/, "").length;
    if (v.charAt(lead) !== "/" || end <= lead) return null;
    var head = v.slice(lead + 1, end);
    return /\s/.test(head) ? null : head;
  }

  function update() {
    var p = prefix();
    if (p === null) return close();
    commands(p === "").then(function (all) {
      if (prefix() !== p) return;
      var q = p.toLowerCase();
      render(all.filter(function (c) { return c.name.toLowerCase().indexOf(q) === 0; }).slice(0, 50));
    });
  }

  function render(found) {
    items = found;
    list.textContent = "";
    if (!found.length) return close();
    found.forEach(function (c, i) {
      var li = document.createElement("li");
      li.id = "slash-opt-" + i;
      li.setAttribute("role", "option");
      li.setAttribute("data-name", c.name);
      var n = document.createElement("span");
      n.className = "slash-name";
      n.textContent = "/" + c.name;
      li.appendChild(n);
      if (c.description) {
        var d = document.createElement("span");
        d.className = "slash-desc";
        d.textContent = c.description;
        li.appendChild(d);
      }
      if (c.source === "project") li.classList.add("slash-project");
      list.appendChild(li);
    });
    list.hidden = false;
    move(0);
  }

  function move(i) {
    var opts = list.querySelectorAll("li");
    if (!opts.length) return;
    active = (i + opts.length) % opts.length;
    opts.forEach(function (o, j) { o.setAttribute("aria-selected", j === active ? "true" : "false"); });
    box.setAttribute("aria-activedescendant", opts[active].id);
    opts[active].scrollIntoView({ block: "nearest" });
  }

  function close() {
    if (!list) return;
    list.hidden = true;
    items = [];
    active = -1;
    box.removeAttribute("aria-activedescendant");
  }

  function pick(name) {
    var rest = box.value.slice(box.selectionEnd).replace(/^\S*/, "");
    box.value = "/" + name + " " + rest.replace(/^\s+/, "");
    var at = name.length + 2;
    box.setSelectionRange(at, at);
    close();
    box.focus();
  }

  // Captured before app.js's Enter-sends: while the list is open, Enter
  // and Tab pick, the arrows move, Escape closes.
  document.addEventListener("keydown", function (e) {
    if (!list || list.hidden || e.target !== box || e.isComposing) return;
    var k = e.key;
    if (k === "ArrowDown" || k === "ArrowUp") move(active + (k === "ArrowDown" ? 1 : -1));
    else if ((k === "Enter" && !e.shiftKey) || k === "Tab") pick(items[active].name);
    else if (k === "Escape") close();
    else return;
    e.preventDefault();
    e.stopImmediatePropagation();
  }, true);

  // The header's menus: a change sends the form over the WebSocket.
  document.addEventListener("change", function (e) {
    var sel = e.target.closest && e.target.closest("select[data-switch]");
    if (sel && sel.form) sel.form.requestSubmit();
  });

  // A switch event (theirs or ours) sets the menu to its new value, once:
  // the state is consumed, so another out-of-band swap later (presence,
  // totals) does not set the menu back to it.
  document.addEventListener("htmx:oobAfterSwap", function () {
    var st = document.getElementById("switch-state");
    if (!st || !st.getAttribute("data-what")) return;
    var sel = document.getElementById("switch-" + st.getAttribute("data-what"));
    var v = st.getAttribute("data-value");
    st.removeAttribute("data-what");
    if (!sel || v === null) return;
    if (!Array.prototype.some.call(sel.options, function (o) { return o.value === v; })) {
      var o = document.createElement("option");
      o.value = o.textContent = v;
      sel.appendChild(o);
    }
    sel.value = v;
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
