// Parley's page script: the WebSocket hello (so a reconnect catches up from
// the last event the page has), the connection banner, keyboard sending,
// ask card feedback and countdowns. Everything else is htmx.
(function () {
  "use strict";

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

  // On every (re)connect, tell the server which events the page already has.
  document.addEventListener("htmx:wsOpen", function (e) {
    e.detail.socketWrapper.sendImmediately(JSON.stringify({ action: "hello", after: lastSeq() }));
    setConn("live", "live");
  });
  document.addEventListener("htmx:wsClose", function () {
    setConn("offline: reconnecting…", "offline");
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

  // Keep the newest event in view when the reader is already at the bottom.
  var stick = true;
  window.addEventListener("scroll", function () {
    stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (stick) window.scrollTo(0, document.body.scrollHeight);
    var n = document.querySelectorAll("#events .ask form").length;
    document.title = (n > 0 ? "(" + n + ") " : "") + document.title.replace(/^\(\d+\) /, "");
  });

  // Enter sends, Shift+Enter adds a line.
  document.addEventListener("keydown", function (e) {
    if (e.target.id === "prompt" && e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (e.target.value.trim() !== "") e.target.form.requestSubmit();
    }
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
