// Parley's ask cards and the inbox counter: which button answered a card,
// the "(N) Parley" tab title, and browser notifications for new asks (the
// permission is asked for once, politely, the first time something waits).
(function () {
  "use strict";

  // A card's buttons share one form; the pressed one names the decision.
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest(".ask-form button[data-decision]") : null;
    if (!b) return;
    var d = b.form && b.form.querySelector('input[name="decision"]');
    if (d) d.value = b.getAttribute("data-decision");
  });

  var baseTitle = document.title.replace(/^\(\d+\) /, "");
  var notified = {};
  try { notified = JSON.parse(sessionStorage.getItem("parley.notified") || "{}"); } catch (_) {}

  function onCount() {
    var el = document.getElementById("inbox-count");
    if (!el) return;
    var n = parseInt(el.getAttribute("data-count") || "0", 10);
    document.title = (n > 0 ? "(" + n + ") " : "") + baseTitle;
    if (n === 0) return;
    offerNotifications();
    var id = el.getAttribute("data-newest");
    if (!id || notified[id]) return;
    notified[id] = true;
    try { sessionStorage.setItem("parley.notified", JSON.stringify(notified)); } catch (_) {}
    // No notification for a card the reader is looking at.
    if (!document.hidden && document.getElementById("ask-" + id)) return;
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    // A browser with push turned on (static/push.js) gets the ask from its
    // service worker, with its actions and under the same tag: a page
    // notification would replace that one with one that cannot answer.
    if (localStorage.getItem("parley-push-device")) return;
    var note = new Notification("Claude needs you", { body: el.getAttribute("data-text") || "", tag: id });
    note.onclick = function () { window.focus(); location.href = el.getAttribute("data-url"); };
  }

  // Ask for the notification permission once, and only after something
  // has waited for the reader, from a button (browsers want a gesture).
  function offerNotifications() {
    if (!("Notification" in window) || Notification.permission !== "default") return;
    if (localStorage.getItem("parley.notify-offered") || document.getElementById("notify-offer")) return;
    var box = document.createElement("div");
    box.id = "notify-offer";
    box.className = "notify-offer";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Notifications");
    box.innerHTML = '<p>Get a browser notification when Claude needs an answer?</p>' +
      '<button type="button" data-notify="yes">Turn on</button> ' +
      '<button type="button" data-notify="no" class="secondary">Not now</button>';
    box.addEventListener("click", function (e) {
      var v = e.target.getAttribute("data-notify");
      if (!v) return;
      localStorage.setItem("parley.notify-offered", "1");
      box.remove();
      if (v === "yes") Notification.requestPermission();
    });
    // In the flow, under the session's head (or at the top of the page),
    // never fixed over the composer or an ask card.
    var head = document.querySelector(".chat-head"), main = document.querySelector("main");
    if (head) head.insertAdjacentElement("afterend", box);
    else if (main) main.insertBefore(box, main.firstChild);
    else document.body.insertBefore(box, document.body.firstChild);
  }

  // An ask's outcome names who answered; the one who did reads "You"
  // (the server renders the card once for every viewer).
  function markYou() {
    var me = document.body.getAttribute("data-user-id");
    if (!me || me === "0") return;
    document.querySelectorAll('.ask-outcome[data-user-id="' + me + '"]').forEach(function (el) {
      el.textContent = el.getAttribute("data-you");
      el.removeAttribute("data-user-id");
    });
  }
  markYou();
  document.addEventListener("htmx:wsAfterMessage", markYou);
  document.addEventListener("htmx:afterSettle", markYou);

  document.addEventListener("htmx:oobAfterSwap", function (e) {
    var t = e.detail && e.detail.target;
    if (t && t.id === "inbox-count") onCount();
  });
  document.addEventListener("htmx:wsAfterMessage", onCount);
})();
