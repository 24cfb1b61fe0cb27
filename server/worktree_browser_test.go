package server

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/launch"
	"parley/runner/fakeapi"
	"parley/store"
)

// gitRepo makes a git repository on main with a.txt committed.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// useRepo points the env's project at repo, with Bash allowed so the fake
// model's commands run without an ask.
func (e *env) useRepo(repo string) {
	e.t.Helper()
	c := e.project.ProjectSettings
	c.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(e.t.Context(), e.project.ID, c, repo); err != nil {
		e.t.Fatal(err)
	}
}

// A session of a git project works on its own branch in its own worktree;
// the page shows the diff, a conflicting merge changes nothing and says
// which files conflict, a clean merge lands in the base, and a discard
// removes the worktree but keeps the branch.
func TestBrowserSessionWorktree(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt && printf 'one\\nTWO\\nthree\\n' > a.txt", "description": "edit"}},
		{Text: "Done editing."},
	}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "edit the files", chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery))

	sessions, err := e.st.ListSessions(t.Context(), e.project.ID)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions = %v, %v", sessions, err)
	}
	sess := sessions[0]
	dir := WorktreeDir(e.dataDir, e.project.ID, sess.ID)
	if got, _ := os.ReadFile(filepath.Join(dir, "b.txt")); string(got) != "hello\n" {
		t.Fatalf("b.txt in the session's worktree = %q; the command did not run there", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("the session wrote into the shared checkout: %v", err)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "CLAUDE.md")); err != nil || !strings.HasPrefix(string(md), launch.ClaudeMDMarker) {
		t.Errorf("the worktree has no CLAUDE.md from Parley: %v", err)
	}
	if got, _ := e.st.GetSession(t.Context(), sess.ID); got.Status != "completed" {
		t.Errorf("session status = %q after the turn; want completed", got.Status)
	}

	var branch, summary, files, patch string
	step(t, ctx, "read the worktree panel",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID),
		chromedp.WaitVisible(`#worktree`, chromedp.ByID),
		chromedp.Text(`[data-branch]`, &branch, chromedp.ByQuery),
		chromedp.Text(`#worktree-summary`, &summary, chromedp.ByID),
		chromedp.Text(`#worktree-files`, &files, chromedp.ByID),
		chromedp.Click(`.worktree-diff summary`, chromedp.ByQuery),
		chromedp.WaitVisible(`#worktree-patch`, chromedp.ByID),
		chromedp.Text(`#worktree-patch`, &patch, chromedp.ByID),
	)
	if branch != "parley/"+sess.ID || !strings.Contains(summary, "2 files changed, +2 −1") ||
		!strings.Contains(files, "a.txt") || !strings.Contains(files, "b.txt") || !strings.Contains(patch, "+hello") {
		body := e.getAs(e.user, "/sessions/"+sess.ID)
		i := strings.Index(body, `id="worktree-patch"`)
		t.Errorf("panel: branch %q, summary %q, files %q, patch %q\n%.1500s", branch, summary, files, patch, body[max(i, 0):])
	}

	// main moves on and changes the same line: the merge is refused.
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\ndeux\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, repo, "commit", "-q", "-am", "main changes line two")
	head := runGit(t, repo, "rev-parse", "HEAD")
	var shown struct{ Err, Conflicts string }
	// The node found may be gone when it is read ("No node with given id
	// found"): the texts are read in one script, polled until the refusal
	// is there.
	step(t, ctx, "merge with a conflict",
		chromedp.Submit(`#worktree-merge`, chromedp.ByID),
		chromedp.WaitVisible(`#worktree-error`, chromedp.ByID),
		pollAcross(`(() => {
			const e = document.getElementById("worktree-error"), c = document.getElementById("worktree-conflicts");
			return e && c ? {Err: e.innerText, Conflicts: c.innerText} : null;
		})()`, &shown),
	)
	errText, conflicts := shown.Err, shown.Conflicts
	if !strings.Contains(errText, "Not merged") || strings.TrimSpace(conflicts) != "a.txt" {
		t.Errorf("conflict shown as %q, files %q", errText, conflicts)
	}
	if runGit(t, repo, "rev-parse", "HEAD") != head || runGit(t, repo, "status", "--porcelain") != "" {
		t.Errorf("the refused merge changed the checkout: %s", runGit(t, repo, "status", "--porcelain"))
	}

	// Without main's change the merge goes through.
	runGit(t, repo, "reset", "-q", "--hard", "HEAD~1")
	var done string
	step(t, ctx, "open the session again", chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID))
	// Opening the page resumes the session ahead (docs/instant.md) and
	// primes it, about a second, before the run is recorded open; a merge
	// submitted meanwhile is refused as if a message had started it.
	e.waitAheadLive(sess.ID)
	step(t, ctx, "merge cleanly",
		chromedp.Submit(`#worktree-merge`, chromedp.ByID),
		chromedp.WaitVisible(`#worktree-done`, chromedp.ByID),
		pollText(`#worktree-done`, &done),
	)
	if !strings.Contains(done, "Merged parley/"+sess.ID+" into main") {
		t.Errorf("after merging: %q", done)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "b.txt")); string(got) != "hello\n" {
		t.Errorf("b.txt in the checkout after the merge = %q", got)
	}

	// (A merged worktree is not resumed ahead: server/ahead.go.)
	step(t, ctx, "discard",
		chromedp.Submit(`#worktree-discard`, chromedp.ByID),
		chromedp.WaitVisible(`#worktree[data-state="discarded"] #worktree-done`, chromedp.ByQuery),
		pollText(`#worktree[data-state="discarded"] #worktree-done`, &done),
	)
	if !strings.Contains(done, "The worktree was removed") {
		t.Errorf("after discarding: %q", done)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree still on disk after discard: %v", err)
	}
	if runGit(t, repo, "branch", "--list", "parley/"+sess.ID) == "" {
		t.Error("discard deleted the branch")
	}
	if wt, _ := e.st.SessionWorktree(t.Context(), sess.ID); wt.State != store.WorktreeDiscarded {
		t.Errorf("worktree state = %q", wt.State)
	}

	// Deleting the project removes the session's branch.
	owner := e.member("owner@example.com", "Owner", roleOwner)
	if body := e.getAs(owner, "/projects/"+strconv.FormatInt(e.project.ID, 10)+"/settings"); !strings.Contains(body, "Git mode") {
		t.Errorf("settings page does not say the project is in git mode")
	}
	if resp := e.postAs(owner, "/projects/"+strconv.FormatInt(e.project.ID, 10)+"/delete", url.Values{"confirm": {e.project.Name}}); resp.StatusCode != 303 {
		t.Fatalf("delete project: %d", resp.StatusCode)
	}
	if out := runGit(t, repo, "branch", "--list", "parley/*"); out != "" {
		t.Errorf("branches left after the project was deleted: %q", out)
	}
}

// A project whose workspace is not a git repository shares it, and says so.
func TestSharedModeWithoutGit(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "hi"}}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Owner", roleOwner)
	if body := e.getAs(owner, "/projects/"+strconv.FormatInt(e.project.ID, 10)+"/settings"); !strings.Contains(body, "Shared mode") {
		t.Error("settings page does not say the project is in shared mode")
	}
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "turn-result")
	if wt, _ := e.st.SessionWorktree(t.Context(), sess.ID); wt.Branch != "" {
		t.Errorf("a session of a non-git project got branch %q", wt.Branch)
	}
	if body := e.getAs(e.user, "/sessions/"+sess.ID); strings.Contains(body, `id="worktree"`) {
		t.Error("the session page shows a worktree panel for a shared workspace")
	}
}

// waitAheadLive waits until the session's process, resumed ahead by the
// page that just opened, is live.
func (e *env) waitAheadLive(sessionID string) {
	e.t.Helper()
	if !e.waitLive(sessionID, true, 30*time.Second) {
		e.t.Fatal("opening the page did not resume the session ahead")
	}
}

// pollText reads the text of the element the selector finds in one script
// (pollAcross), after a wait for it: a live update may swap the node between a
// wait and a separate read ("No node with given id found").
func pollText(selector string, text *string) chromedp.Action {
	return pollAcross(`(() => { const n = document.querySelector(`+strconv.Quote(selector)+`); return n ? n.innerText : null; })()`, text)
}
