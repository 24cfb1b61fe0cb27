// A deleted session's page: when its socket closes because the session was
// deleted (close 4003 with server/session_delete.go's reasonDeleted), the
// banner app.js shows gets a link back to the project's sessions.
(function () {
  "use strict";
  var reasonDeleted = "This session was deleted.";
  document.addEventListener("htmx:wsClose", function (e) {
    var ev = e.detail && e.detail.event;
    if (!ev || ev.code !== 4003 || ev.reason !== reasonDeleted) return;
    var back = document.getElementById("session-gone-back");
    // After app.js has written the banner's text.
    setTimeout(function () {
      var banner = document.getElementById("offline");
      if (!banner || !back || document.getElementById("session-gone-link")) return;
      banner.hidden = false;
      var a = document.createElement("a");
      a.id = "session-gone-link";
      a.href = back.getAttribute("data-href");
      a.textContent = "Back to the project's sessions";
      banner.appendChild(document.createTextNode(" "));
      banner.appendChild(a);
      var form = document.getElementById("prompt-form");
      if (form) form.querySelectorAll("textarea, button, input").forEach(function (el) { el.disabled = true; });
    }, 0);
  });
})();
