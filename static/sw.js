// Parley's service worker: shows the asks Web Push brings with the tab
// closed, answers one from its notification's buttons, and replaces it with
// "Answered by X" when the ask is answered anywhere. Served at /sw.js (scope
// /). A push carries a reach.Message as JSON (reach/message.go).
"use strict";

var ICON = "/static/icons/icon-192.png";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

// A push must always show a notification (userVisibleOnly), so one that
// cannot be read still says something.
self.addEventListener("push", function (event) {
  var m = null;
  try { m = event.data ? event.data.json() : null; } catch (err) { m = null; }
  keep(event, show(m));
});

// keep holds the worker alive until p settles. A test may dispatch a
// synthetic event, whose waitUntil throws; p runs all the same.
function keep(event, p) {
  try { event.waitUntil(p); } catch (err) { /* untrusted event */ }
}

function show(m) {
  if (!m || !m.type) {
    return self.registration.showNotification("Parley", { body: "Something in Parley needs you.", icon: ICON, data: { url: "/inbox" } });
  }
  if (m.type === "answered") {
    // Same tag: replaces the ask's notification, quietly.
    return self.registration.showNotification("Answered by " + (m.by || "someone"), {
      body: m.via ? "from " + m.via : "",
      tag: m.input_id, icon: ICON, silent: true,
      data: { url: m.url }
    });
  }
  // An ask. Browsers show at most two buttons; "open" is the click itself.
  var actions = (m.actions || []).filter(function (a) { return a.action && a.action !== "open"; })
    .slice(0, 2).map(function (a) { return { action: a.action, title: a.title }; });
  return self.registration.showNotification(m.title || "Claude asks", {
    body: m.body || "", tag: m.input_id, renotify: true, requireInteraction: true, icon: ICON,
    actions: actions,
    data: { url: m.url, token: m.token, answer_url: m.answer_url, input_id: m.input_id }
  });
}

self.addEventListener("notificationclick", function (event) {
  var n = event.notification, data = n.data || {};
  n.close();
  if (event.action && event.action !== "open" && data.token && data.answer_url) {
    keep(event, answer(data, event.action));
  } else if (data.url) {
    keep(event, openPage(data.url));
  }
});

// answer posts the action with the notification's single-use token. The
// token is the credential: no cookie is sent (so no CSRF token is needed),
// and the server's sentence replaces the notification.
function answer(data, action) {
  var done = function (text) {
    return self.registration.showNotification(text, { tag: data.input_id, icon: ICON, silent: true, data: { url: data.url } });
  };
  // The token goes only to this Parley: a PARLEY_PUBLIC_URL that names
  // another origin than the one this worker came from is refused.
  if (new URL(data.answer_url, self.location.origin).origin !== self.location.origin) {
    return done("This notification answers at another address than this Parley's: open the ask to answer it.");
  }
  return fetch(data.answer_url, {
    method: "POST", credentials: "omit",
    body: new URLSearchParams({ token: data.token, action: action })
  }).then(function (r) {
    return r.text().then(function (t) {
      return done(t.trim() || (r.ok ? "Answered." : "Parley answered " + r.status + ": open the ask to answer it."));
    });
  }, function () {
    return done("Could not reach Parley: open the ask to answer it there.");
  });
}

// openPage focuses a tab already on the ask's page, else opens one.
function openPage(url) {
  var target = new URL(url, self.location.origin);
  return self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (list) {
    for (var i = 0; i < list.length; i++) {
      var c = list[i], u = new URL(c.url);
      if (u.origin === target.origin && u.pathname === target.pathname && "focus" in c) {
        return c.focus().then(function (fc) { return fc && fc.url !== target.href && fc.navigate ? fc.navigate(target.href) : fc; });
      }
    }
    return self.clients.openWindow(target.href);
  });
}

// pushsubscriptionchange (best effort): the push service replaced the
// subscription. Register the new one with Parley if the browser is still
// signed in: the CSRF token is read from a page, as the page itself would.
// The old device is dropped by the server at its next push (404/410).
self.addEventListener("pushsubscriptionchange", function (event) {
  keep(event, resubscribe(event).catch(function () {}));
});

function resubscribe(event) {
  var sub = event.newSubscription ? Promise.resolve(event.newSubscription) :
    fetch("/push/key", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (k) {
      return self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64url(k.publicKey) });
    });
  return Promise.all([sub, csrf()]).then(function (v) {
    var j = v[0].toJSON();
    return fetch("/push/subscriptions", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": v[1] },
      body: JSON.stringify({ endpoint: j.endpoint, keys: j.keys, name: "This browser (renewed)" })
    });
  });
}

function csrf() {
  return fetch("/notifications", { credentials: "same-origin" }).then(function (r) { return r.text(); }).then(function (html) {
    var m = /<meta name="csrf-token" content="([^"]+)"/.exec(html);
    if (!m) throw new Error("signed out");
    return m[1];
  });
}

function b64url(s) {
  var raw = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  var out = new Uint8Array(raw.length);
  for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}
