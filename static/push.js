// The notifications page (views/notifications.templ): turn Web Push on for
// this device, test and remove devices, fill the time zone of quiet hours.
// The server side: GET /push/key, POST /push/subscriptions,
// POST /push/subscriptions/{id}/test, DELETE /push/subscriptions/{id}.
(function () {
  "use strict";

  // Which device in the list is this browser: the id and endpoint it was
  // added with, so Remove can also unsubscribe it here.
  var MINE = "parley-push-device";

  var $ = function (id) { return document.getElementById(id); };

  function status(text, isError) {
    var el = $("push-status");
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("error", !!isError);
  }

  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  }

  // call sends a request to the push API and resolves with the parsed
  // answer, or rejects with the sentence to show.
  function call(method, url, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "X-CSRF-Token": csrf() } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(url, opts).then(function (r) {
      return r.text().then(function (t) {
        var j = null;
        try { j = t ? JSON.parse(t) : null; } catch (err) { j = null; }
        if (r.ok) return j || {};
        throw new Error((j && j.error) || t.trim() || "Parley answered " + r.status + ": try again.");
      });
    }, function () { throw new Error("Could not reach Parley: check the connection and try again."); });
  }

  function mine() {
    try { return JSON.parse(localStorage.getItem(MINE) || "null"); } catch (err) { return null; }
  }

  function b64url(s) {
    var raw = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  // deviceName guesses "Chrome on Android" from the browser; the person
  // can change it.
  function deviceName() {
    var ua = navigator.userAgent || "", d = navigator.userAgentData, browser = "", os = "";
    if (d && d.brands) {
      d.brands.forEach(function (b) { if (!/Not.A.Brand|Chromium/i.test(b.brand)) browser = b.brand.replace(/^Google /, ""); });
      if (!browser && d.brands.some(function (b) { return /Chromium/.test(b.brand); })) browser = "Chromium";
      os = d.platform || "";
    }
    if (!browser) browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /OPR\//.test(ua) ? "Opera" :
      /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
    if (!os) os = /Android/.test(ua) ? "Android" : /iPhone/.test(ua) ? "iPhone" : /iPad/.test(ua) ? "iPad" :
      /Windows/.test(ua) ? "Windows" : /Mac OS X|Macintosh/.test(ua) ? "macOS" : /CrOS/.test(ua) ? "ChromeOS" : /Linux/.test(ua) ? "Linux" : "";
    return os ? browser + " on " + os : browser;
  }

  function supported() {
    return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
  }

  // show says where this device stands: unsupported, blocked, on, or
  // ready to turn on.
  function show(state) {
    ["push-unsupported", "push-denied", "push-on"].forEach(function (id) { if ($(id)) $(id).hidden = true; });
    var form = $("push-form");
    if (form) form.hidden = state !== "off";
    if (state !== "off" && $("push-" + state)) $("push-" + state).hidden = false;
  }

  function refresh() {
    if (!supported()) return show("unsupported");
    if (Notification.permission === "denied") return show("denied");
    var m = mine();
    if (m && $("devices") && !$(rowID(m.id))) { localStorage.removeItem(MINE); m = null; } // removed elsewhere
    markMine();
    if (Notification.permission !== "granted" || !m) return show("off");
    navigator.serviceWorker.getRegistration("/").then(function (reg) {
      return reg ? reg.pushManager.getSubscription() : null;
    }).then(function (sub) { show(sub && sub.endpoint === m.endpoint ? "on" : "off"); }, function () { show("off"); });
  }

  function rowID(id) { return "device-" + id; }

  function markMine() {
    var m = mine(), row = m && $(rowID(m.id));
    if (!row || row.querySelector(".this-device")) return;
    var tag = document.createElement("span");
    tag.className = "badge this-device";
    tag.textContent = "this device";
    row.querySelector(".device-name").after(tag);
  }

  // enable runs the whole sequence; each step's failure says what to do.
  function enable(e) {
    e.preventDefault();
    var btn = $("push-enable"), name = ($("push-name").value || "").trim() || deviceName();
    btn.disabled = true;
    status("Asking this browser for permission…");
    Notification.requestPermission().then(function (p) {
      if (p === "denied") { show("denied"); throw new Error("Notifications are blocked for this site; see above how to allow them."); }
      if (p !== "granted") throw new Error("Notifications were not allowed. Press the button again and choose Allow.");
      status("Setting up this device…");
      return navigator.serviceWorker.register("/sw.js", { scope: "/" });
    }).then(function () {
      return navigator.serviceWorker.ready;
    }).then(function (reg) {
      return call("GET", "/push/key").then(function (k) {
        return reg.pushManager.getSubscription().then(function (old) {
          return old || reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64url(k.publicKey) });
        });
      });
    }).then(function (sub) {
      var j = sub.toJSON();
      return call("POST", "/push/subscriptions", { endpoint: j.endpoint, keys: j.keys, name: name }).then(function (d) {
        localStorage.setItem(MINE, JSON.stringify({ id: d.id, endpoint: j.endpoint }));
        addRow(d.id, d.name || name);
        status("Notifications are on for " + (d.name || name) + ". Press Test to see one.");
        refresh();
      });
    }).catch(function (err) {
      status(err && err.message ? err.message : "Could not turn notifications on: try again.", true);
    }).then(function () { btn.disabled = false; });
  }

  // addRow shows a device just added, as views.DeviceRow does.
  function addRow(id, name) {
    if ($(rowID(id))) return;
    var li = document.createElement("li");
    li.id = rowID(id);
    li.className = "device";
    li.dataset.deviceId = id;
    li.dataset.deviceName = name;
    var n = document.createElement("span");
    n.className = "device-name";
    n.textContent = name;
    var meta = document.createElement("span");
    meta.className = "meta device-meta";
    meta.textContent = "Added just now. Not used yet.";
    var acts = document.createElement("span");
    acts.className = "device-actions";
    acts.appendChild(button("secondary push-test", "Test", "Send a test notification to " + name));
    acts.appendChild(button("danger push-remove", "Remove", "Remove " + name));
    li.append(n, meta, acts);
    $("devices").appendChild(li);
    if ($("no-devices")) $("no-devices").hidden = true;
  }

  function button(cls, text, label) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = cls;
    b.textContent = text;
    b.setAttribute("aria-label", label);
    return b;
  }

  function test(row, btn) {
    btn.disabled = true;
    call("POST", "/push/subscriptions/" + row.dataset.deviceId + "/test").then(function () {
      status("Test sent to " + row.dataset.deviceName + ": it should show in a few seconds.");
    }, function (err) { status(err.message, true); }).then(function () { btn.disabled = false; });
  }

  function remove(row, btn) {
    var id = row.dataset.deviceId, m = mine();
    btn.disabled = true;
    call("DELETE", "/push/subscriptions/" + id).then(function () {
      row.remove();
      if ($("no-devices") && !$("devices").children.length) $("no-devices").hidden = false;
      status("Removed " + row.dataset.deviceName + ".");
      if (m && String(m.id) === String(id)) return forgetHere(m);
    }, function (err) { status(err.message, true); btn.disabled = false; }).then(refresh);
  }

  // forgetHere unsubscribes this browser when its own device was removed.
  function forgetHere(m) {
    localStorage.removeItem(MINE);
    if (!supported()) return;
    return navigator.serviceWorker.getRegistration("/").then(function (reg) {
      return reg ? reg.pushManager.getSubscription() : null;
    }).then(function (sub) {
      if (sub && sub.endpoint === m.endpoint) return sub.unsubscribe();
    }).catch(function () {});
  }

  function init() {
    var page = $("notifications");
    if (!page) return;
    var tz = $("tz");
    if (tz && window.Intl) {
      try {
        tz.value = Intl.DateTimeFormat().resolvedOptions().timeZone || tz.value;
        if ($("tz-name") && tz.value) $("tz-name").textContent = tz.value;
      } catch (err) { /* keep the saved zone */ }
    }
    var list = $("devices");
    if (list) list.addEventListener("click", function (e) {
      var btn = e.target.closest("button"), row = btn && btn.closest(".device");
      if (!row) return;
      if (btn.classList.contains("push-test")) test(row, btn);
      if (btn.classList.contains("push-remove")) remove(row, btn);
    });
    if ($("push-device")) { // else the server has no push keys
      var name = $("push-name");
      if (name && !name.value) name.value = deviceName();
      $("push-form").addEventListener("submit", enable);
      refresh();
    }
    page.setAttribute("data-js", "ready"); // the buttons work from now on (tests wait for it)
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
