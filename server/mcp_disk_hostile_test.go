package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/mcpapi"
	"parley/runner/fakeapi"
)

// cliDirName is what the CLI replaces with "-" to name a cwd's directory
// under $CLAUDE_CONFIG_DIR/projects (mcpsessions reads it the same way).
var cliDirName = regexp.MustCompile(`[^A-Za-z0-9]`)

// TestMCPDiskSessionsStayInTheProject: a project's CLI state is its runs'
// to write, so list_sessions (and the adoption that reads the same files)
// must not follow a link its Claude put there to another project's
// transcripts, nor block on a FIFO. It fails with plain opens and reads.
func TestMCPDiskSessionsStayInTheProject(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	pb, err := e.st.CreateProject(t.Context(), "Project B", 0)
	if err != nil {
		t.Fatal(err)
	}
	transcripts := func(p int64, workspace string) string {
		return filepath.Join(ConfigDir(e.dataDir, p), "projects", cliDirName.ReplaceAllString(workspace, "-"))
	}
	write := func(dir, id, prompt string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, id+".jsonl")
		line := `{"type":"user","message":{"role":"user","content":"` + prompt + `"}}` + "\n"
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dirB := transcripts(pb.ID, WorkspaceDir(e.dataDir, pb))
	secretB := write(dirB, uuid.NewString(), "B-SECRET-PROMPT")
	dirA := transcripts(e.project.ID, WorkspaceDir(e.dataDir, e.project))
	mineA := uuid.NewString()
	write(dirA, mineA, "A's own session")
	// What A's Claude can plant in A's config dir: a transcript that is a
	// link to B's, and one that is a FIFO.
	if err := os.Symlink(secretB, filepath.Join(dirA, uuid.NewString()+".jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dirA, uuid.NewString()+".jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := e.mcpClient(e.apiToken(e.user), "", nil)
	list := func() []mcpapi.SessionSummary {
		t.Helper()
		type answer struct {
			text  string
			isErr bool
		}
		done := make(chan answer, 1)
		go func() { // no t.Fatal off the test's goroutine
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{"project": "Test project"}})
			if err != nil {
				done <- answer{err.Error(), true}
				return
			}
			text := ""
			if len(res.Content) > 0 {
				if c, ok := res.Content[0].(*mcp.TextContent); ok {
					text = c.Text
				}
			}
			done <- answer{text, res.IsError}
		}()
		select {
		case a := <-done:
			var out mcpapi.ListSessionsOutput
			if a.isErr || json.Unmarshal([]byte(a.text), &out) != nil {
				t.Fatalf("list_sessions: %s", a.text)
			}
			return out.Sessions
		case <-time.After(20 * time.Second):
			t.Fatal("list_sessions did not answer: it blocks on the FIFO")
			return nil
		}
	}
	if got := list(); len(got) != 1 || got[0].SessionID != mineA || got[0].Title != "A's own session" {
		t.Fatalf("list_sessions = %+v; want A's one transcript, not the link to B's nor the FIFO", got)
	}
	// A's whole transcripts directory a link to B's.
	if err := os.RemoveAll(dirA); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dirB, dirA); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("list_sessions = %+v; want nothing: A's transcripts are a link to B's", got)
	}
	// And the config dir itself.
	cfgA := ConfigDir(e.dataDir, e.project.ID)
	if err := os.RemoveAll(cfgA); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ConfigDir(e.dataDir, pb.ID), cfgA); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("list_sessions = %+v; want nothing: A's config dir is a link to B's", got)
	}
}
