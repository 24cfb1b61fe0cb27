// Parley's theme and header menu. Loaded without defer from <head>, before
// the stylesheets apply to a painted page: it sets <html data-theme> from the
// saved choice first, so a dark page never flashes light (the
// Content-Security-Policy forbids an inline script for this). theme.css
// turns data-theme into `color-scheme`; with no data-theme the page follows
// the system (prefers-color-scheme). The rest wires the header's theme
// picker and, on narrow screens, its menu button.
(function () {
  "use strict";

  var KEY = "parley-theme";
  var root = document.documentElement;

  function saved() {
    try { return localStorage.getItem(KEY) || "system"; } catch (e) { return "system"; }
  }

  // apply shows the choice: "light" and "dark" pin the theme, anything
  // else ("system") follows the system.
  function apply(choice) {
    if (choice === "light" || choice === "dark") root.setAttribute("data-theme", choice);
    else root.removeAttribute("data-theme");
    var pick = document.getElementById("theme-pick");
    if (pick) pick.value = (choice === "light" || choice === "dark") ? choice : "system";
  }

  apply(saved());
  // The header menu collapses only where this script runs: without it the
  // nav wraps instead (theme.css).
  root.setAttribute("data-menu", "");

  function choose(choice) {
    try {
      if (choice === "system") localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, choice);
    } catch (e) { /* private mode: the choice lasts for this page */ }
    apply(choice);
  }

  // Another tab changed the theme.
  window.addEventListener("storage", function (e) {
    if (e.key === KEY || e.key === null) apply(saved());
  });

  function setMenu(toggle, nav, open) {
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    nav.classList.toggle("open", open);
  }

  function wireMenu() {
    var toggle = document.getElementById("nav-toggle");
    var nav = document.getElementById("user-nav");
    if (!toggle || !nav) return;
    toggle.addEventListener("click", function () {
      var open = toggle.getAttribute("aria-expanded") !== "true";
      setMenu(toggle, nav, open);
      if (open) {
        var first = nav.querySelector("a, button, select");
        if (first) first.focus();
      }
    });
    document.addEventListener("keydown", function (e) {
      if (e.key !== "Escape" || toggle.getAttribute("aria-expanded") !== "true") return;
      setMenu(toggle, nav, false);
      toggle.focus();
    });
    document.addEventListener("click", function (e) {
      if (toggle.getAttribute("aria-expanded") !== "true") return;
      if (toggle.contains(e.target) || nav.contains(e.target)) return;
      setMenu(toggle, nav, false);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var pick = document.getElementById("theme-pick");
    if (pick) {
      pick.value = saved();
      pick.addEventListener("change", function () { choose(pick.value); });
    }
    wireMenu();
  });
})();
