package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

func TestPresenceListsViewers(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	s := e.newSession()
	a := e.dial(s.ID, 0)
	a.waitFor(10*time.Second, `id="presence"`, "<li>you</li>")
	b := e.dial(s.ID, 0)
	b.waitFor(10*time.Second, "<li>you (2 tabs)</li>")
	a.waitFor(10*time.Second, "<li>you (2 tabs)</li>")
	b.conn.Close()
	a.waitFor(10*time.Second, "<li>you</li>")
}

// get fetches a page of the test server.
func (e *env) get(path string) (*http.Response, string) {
	e.t.Helper()
	res := e.do(e.user, http.MethodGet, path, nil)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// post submits a form as a Parley page does.
func (e *env) post(path string, form url.Values) *http.Response {
	e.t.Helper()
	res := e.postAs(e.user, path, form)
	res.Body.Close()
	return res
}

func TestHistorySearchRenameArchiveExport(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	ctx := t.Context()
	mk := func(title, prompt, reply string) store.Session {
		s, err := e.st.CreateSession(ctx, e.project.ID, title, "alice")
		if err != nil {
			t.Fatal(err)
		}
		p, _ := json.Marshal(map[string]any{"text": prompt, "by": "alice"})
		a, _ := json.Marshal(map[string]any{"message": map[string]any{"id": "m", "content": []map[string]any{{"type": "text", "text": reply}}}})
		for i, ev := range []store.Event{{Type: "prompt", Payload: p}, {Type: "assistant", Payload: a}} {
			ev.SessionID, ev.Seq = s.ID, int64(i+1)
			if err := e.st.AppendEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	login := mk("Fix the login page", "The login form rejects passwords", "The <b>cookie</b> expired too early.")
	notes := mk("Release notes", "Summarise the changes", "Version 2 adds search.")
	hist := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/history"

	_, page := e.get(hist + "?q=cookies")
	if !strings.Contains(page, "Fix the login page") || strings.Contains(page, "Release notes") {
		t.Errorf("search for cookies:\n%s", page)
	}
	if !strings.Contains(page, "<mark>cookie</mark>") || strings.Contains(page, "<b>cookie") {
		t.Errorf("the snippet is not marked, or not escaped:\n%s", page)
	}
	if res := e.post("/sessions/"+notes.ID+"/rename", url.Values{"title": {"Notes for v2"}}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("rename: %s", res.Status)
	}
	if res := e.post("/sessions/"+login.ID+"/archive", url.Values{"archived": {"1"}}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("archive: %s", res.Status)
	}
	_, page = e.get(hist)
	if !strings.Contains(page, "Notes for v2") || strings.Contains(page, "Fix the login page") {
		t.Errorf("after rename and archive:\n%s", page)
	}
	_, page = e.get(hist + "?archived=1")
	if !strings.Contains(page, "Fix the login page") || !strings.Contains(page, "Restore") {
		t.Errorf("archived sessions are not listed on demand:\n%s", page)
	}
	if res := e.post("/sessions/"+login.ID+"/rename", url.Values{"title": {"  "}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("empty title: %s", res.Status)
	}

	res, md := e.get("/sessions/" + login.ID + "/export.md")
	if cd := res.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="fix-the-login-page-`) || !strings.HasSuffix(cd, `.md"`) {
		t.Errorf("markdown export disposition %q", cd)
	}
	for _, want := range []string{"# Fix the login page", "> The login form rejects passwords", "The <b>cookie</b> expired too early."} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown export lacks %q:\n%s", want, md)
		}
	}
	res, js := e.get("/sessions/" + login.ID + "/export.json")
	var x struct {
		Session struct{ ID, Title string }
		Events  []struct{ Seq int64 }
	}
	if err := json.Unmarshal([]byte(js), &x); err != nil || x.Session.ID != login.ID || len(x.Events) != 2 || res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("JSON export (%v): %s", err, js)
	}
	if res, _ := e.get("/sessions/00000000-0000-0000-0000-000000000000/export.json"); res.StatusCode != http.StatusNotFound {
		t.Errorf("export of a missing session: %s", res.Status)
	}
	if res, _ := e.get("/projects/999999/history"); res.StatusCode != http.StatusNotFound {
		t.Errorf("history of another project: %s", res.Status)
	}
}
