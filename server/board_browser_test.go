package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"parley/runner/fakeapi"
	"parley/store"
)

// recordStatuses has the page note every status the element with id
// shows (a MutationObserver), and the id of the list holding it, into
// window.seen: a status that lasts a moment is not missed by polling.
func recordStatuses(id string) string {
	return `(function () {
  window.seen = [];
  function note() {
    var el = document.getElementById(` + strconv.Quote(id) + `);
    if (!el) return;
    var s = el.getAttribute("data-status") + "@" + (el.parentNode && el.parentNode.id) + (el.classList.contains("unread") ? "+unread" : "");
    if (window.seen[window.seen.length - 1] !== s) window.seen.push(s);
  }
  note();
  new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true });
  return true;
})()`
}

// seenInOrder says whether every want was seen, in that order.
func seenInOrder(seen []string, want ...string) bool {
	i := 0
	for _, s := range seen {
		if i < len(want) && strings.HasPrefix(s, want[i]) {
			i++
		}
	}
	return i == len(want)
}

// TestBrowserSessionStatusLiveInSidebarAndBoard: a session run by the real
// CLI goes running → needs you → completed; a teammate with ANOTHER
// session's page open sees each status in its sidebar, with the count of
// sessions that need them and then the unread marker, and a second
// member's home board moves it from "needs you" to "finished". Opening
// the session clears the marker.
func TestBrowserSessionStatusLiveInSidebarAndBoard(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "I need a decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Final reply: you chose " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true})
	startBoards(t, e)
	bea := e.member("bea@example.com", "Bea Member", roleMember)
	ctx := t.Context()
	a, err := e.st.CreateSessionBy(ctx, e.project.ID, "Pick a colour", e.user.Name, e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.st.CreateSessionBy(ctx, e.project.ID, "Notes", bea.Name, bea.ID)
	if err != nil {
		t.Fatal(err)
	}
	side := browser(t)
	e.signInBrowser(t, side, bea)
	var ok bool
	step(t, side, "Bea opens another session: its sidebar lists the first",
		chromedp.Navigate(e.web.URL+"/sessions/"+b.ID),
		chromedp.WaitVisible(`#sb-`+a.ID, chromedp.ByID),
		chromedp.Poll(`document.getElementById("sidebar").getAttribute("data-live") === "open"`, nil),
		chromedp.Evaluate(recordStatuses("sb-"+a.ID), &ok),
	)
	home := e.browser(t)
	step(t, home, "a second member opens the board",
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#board`, chromedp.ByID),
		chromedp.Poll(`document.getElementById("board").getAttribute("data-live") === "open"`, nil),
		chromedp.Evaluate(recordStatuses("bd-"+a.ID), &ok),
	)

	w := e.dial(a.ID, 0)
	w.prompt("Please pick a colour")
	in := e.waitInput(w, a.ID)
	var needs, count string
	step(t, side, "the sidebar shows the ask live",
		chromedp.Poll(`window.seen.some(s => s.startsWith("needs-you"))`, nil),
		chromedp.Text(`#sb-needs`, &needs, chromedp.ByID),
	)
	step(t, home, "the board shows it under needs you",
		chromedp.Poll(`window.seen.some(s => s.startsWith("needs-you@board-needs"))`, nil),
		chromedp.Text(`#board-needs-count`, &count, chromedp.ByID),
	)
	if needs != "1 needs you" || count != "1" {
		t.Errorf("needs-you count: sidebar %q, board %q; want \"1 needs you\" and \"1\"", needs, count)
	}

	w.answer(in, map[string]any{"choice": "Blue"})
	var seen, boardSeen []string
	step(t, side, "the sidebar shows it completed, unread",
		chromedp.Poll(`window.seen.some(s => s.startsWith("completed"))`, nil),
		chromedp.Poll(`document.getElementById("sb-`+a.ID+`").classList.contains("unread")`, nil),
		chromedp.Text(`#sb-needs`, &needs, chromedp.ByID),
		chromedp.Evaluate(`window.seen`, &seen),
	)
	step(t, home, "the board moves it to finished",
		chromedp.Poll(`window.seen.some(s => s.startsWith("completed@board-recent"))`, nil),
		chromedp.Evaluate(`window.seen`, &boardSeen),
	)
	t.Logf("sidebar saw %v; board saw %v", seen, boardSeen)
	if !seenInOrder(seen, "idle", "running", "needs-you", "completed") {
		t.Errorf("the sidebar showed %v, want idle, running, needs-you, completed in order", seen)
	}
	if !seenInOrder(boardSeen, "needs-you@board-needs", "completed@board-recent") {
		t.Errorf("the board showed %v, want needs you then finished", boardSeen)
	}
	if needs != "nothing needs you" {
		t.Errorf("after the answer the sidebar says %q", needs)
	}

	var png []byte
	step(t, side, "opening the session clears its marker",
		chromedp.CaptureScreenshot(&png),
		chromedp.Navigate(e.web.URL+"/sessions/"+a.ID),
		chromedp.WaitVisible(`#sb-`+a.ID+`.current`, chromedp.ByQuery),
		chromedp.Navigate(e.web.URL+"/sessions/"+b.ID),
		chromedp.WaitVisible(`#sb-`+a.ID, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("sb-`+a.ID+`").classList.contains("unread")`, &ok),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "sidebar-desktop.png"), png, 0o644)
	if ok {
		t.Error("the session is still marked unread after Bea opened it")
	}
}

// TestBrowserDrawerAndShortcuts: on a 390 px phone the sidebar is a drawer
// that a button opens (focus moves in) and Escape or its close button
// closes (focus comes back); the shortcuts c, /, g i, j and ? work, are
// listed in the help dialog, and none fires while typing in a field.
func TestBrowserDrawerAndShortcuts(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	startBoards(t, e)
	ctx := t.Context()
	waiting, err := e.st.CreateSessionBy(ctx, e.project.ID, "Waiting for you", e.user.Name, e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	askIn(t, e, waiting.ID, 1)
	if err := e.st.SetSessionStatus(ctx, waiting.ID, "waiting"); err != nil {
		t.Fatal(err)
	}
	here, err := e.st.CreateSessionBy(ctx, e.project.ID, "Here", e.user.Name, e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	page := e.web.URL + "/sessions/" + here.ID
	br := e.browser(t)
	var visible, open, ok bool
	var active, loc string
	var width int
	var png []byte
	step(t, br, "390 px: the sidebar is a closed drawer",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(page),
		chromedp.WaitVisible(`#sidebar-toggle`, chromedp.ByID),
		chromedp.Poll(`document.getElementById("sidebar").getAttribute("data-loaded") === "1"`, nil),
		chromedp.Evaluate(`document.getElementById("sidebar").offsetParent !== null`, &visible),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
	)
	if visible || width > 390 {
		t.Errorf("at 390 px: sidebar visible %v, page %d px wide; want a closed drawer and no sideways scroll", visible, width)
	}
	step(t, br, "the button opens it, listing the sessions and the count",
		chromedp.Click(`#sidebar-toggle`, chromedp.ByID),
		chromedp.WaitVisible(`#sb-`+waiting.ID, chromedp.ByID),
		chromedp.WaitVisible(`#sb-`+here.ID+`.current`, chromedp.ByQuery),
		chromedp.Evaluate(`document.activeElement.className`, &active),
		chromedp.Evaluate(`document.getElementById("sidebar-toggle").getAttribute("aria-expanded") === "true"`, &open),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "sidebar-drawer-390.png"), png, 0o644)
	if active != "sb-close" || !open {
		t.Errorf("drawer open: focus on %q (want the close button), aria-expanded %v", active, open)
	}
	step(t, br, "Escape closes it and focus returns to the button",
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotVisible(`#sidebar`, chromedp.ByID),
		chromedp.Evaluate(`document.activeElement.id`, &active),
	)
	if active != "sidebar-toggle" {
		t.Errorf("after Escape the focus is on %q, want the drawer's button", active)
	}
	step(t, br, "the close button closes it too",
		chromedp.Click(`#sidebar-toggle`, chromedp.ByID),
		chromedp.WaitVisible(`#sidebar .sb-close`, chromedp.ByQuery),
		chromedp.Click(`#sidebar .sb-close`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#sidebar`, chromedp.ByID),
	)

	step(t, br, "? opens the help, Escape closes it",
		chromedp.KeyEvent("?"),
		chromedp.Poll(`document.getElementById("nav-help").open`, nil),
		chromedp.Evaluate(`["c","/","g","i","j","?"].every(k => [...document.querySelectorAll("#nav-help kbd")].some(e => e.textContent === k))`, &ok),
		chromedp.KeyEvent(kb.Escape),
		chromedp.Poll(`!document.getElementById("nav-help").open`, nil),
	)
	if !ok {
		t.Error("the help does not list every shortcut")
	}
	var typed string
	step(t, br, "typing in the composer fires no shortcut",
		chromedp.Focus(`#prompt`, chromedp.ByID),
		chromedp.KeyEvent("cj?/gi"),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Value(`#prompt`, &typed, chromedp.ByID),
		chromedp.Location(&loc),
		chromedp.Evaluate(`document.getElementById("nav-help").open`, &open),
		chromedp.Evaluate(`document.activeElement.blur(); true`, &ok),
	)
	if loc != page || open || !strings.HasSuffix(typed, "cj?/gi") {
		t.Errorf("typing: at %s, help open %v, composer %q; want no shortcut and the text typed", loc, open, typed)
	}
	step(t, br, "/ focuses the sessions search",
		chromedp.KeyEvent("/"),
		chromedp.Poll(`document.activeElement && document.activeElement.id === "sb-q"`, nil),
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotVisible(`#sidebar`, chromedp.ByID),
	)
	step(t, br, "j goes to the session that needs you",
		chromedp.KeyEvent("j"),
		chromedp.WaitVisible(`section.chat[data-session="`+waiting.ID+`"]`, chromedp.ByQuery),
	)
	step(t, br, "g then i goes to the inbox",
		chromedp.KeyEvent("g"), chromedp.KeyEvent("i"),
		chromedp.WaitVisible(`section.inbox`, chromedp.ByQuery),
	)
	step(t, br, "on the inbox, j goes to the next open ask",
		chromedp.WaitVisible(`.inbox-item .ask`, chromedp.ByQuery),
		chromedp.KeyEvent("j"),
		chromedp.Poll(`document.activeElement.closest(".inbox-item .ask") !== null`, nil),
	)
	step(t, br, "c starts a new session from a session page",
		chromedp.Navigate(page),
		chromedp.Poll(`document.getElementById("sidebar").getAttribute("data-loaded") === "1"`, nil),
		chromedp.KeyEvent("c"),
		chromedp.WaitVisible(`section.project[data-project="`+strconv.FormatInt(e.project.ID, 10)+`"]`, chromedp.ByQuery),
		chromedp.Poll(`document.activeElement.id === "new-prompt"`, nil),
	)
	step(t, br, "desktop: the sidebar is beside the chat, no button",
		chromedp.EmulateViewport(1200, 900),
		chromedp.Navigate(page),
		chromedp.WaitVisible(`#sb-`+waiting.ID, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("sidebar-toggle").offsetParent === null`, &ok),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "sidebar-desktop-1200.png"), png, 0o644)
	if !ok {
		t.Error("the drawer's button shows on a desktop")
	}
}

var _ = store.ErrNotFound
