package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"parley/mcpapi"
	"parley/runner/fakeapi"
)

// TestMCPAdoptsDiskSession: a Claude Code session someone ran by hand in a
// project's workspace shows up in list_sessions; send_message adopts it
// into Parley with its transcript and resumes the same conversation.
func TestMCPAdoptsDiskSession(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Noted: kumquat."}, {Text: "The word was kumquat."}}, envOptions{})
	workspace, err := SyncWorkspace(e.dataDir, e.project)
	if err != nil {
		t.Fatal(err)
	}
	diskID := uuid.NewString()
	cmd := exec.CommandContext(t.Context(), fakeapi.ClaudeBin(t), "-p", "Remember the word kumquat.", "--session-id", diskID)
	cmd.Dir = workspace
	cmd.Env = append(os.Environ(), e.fake.Env(ConfigDir(e.dataDir, e.project.ID))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude by hand: %v\n%s", err, out)
	}

	cs := e.mcpClient(e.apiToken(e.user), "", nil)
	var list mcpapi.ListSessionsOutput
	callOK(t, cs, "list_sessions", map[string]any{"project": "Test project"}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != diskID || list.Sessions[0].Source != "disk" ||
		list.Sessions[0].Title != "Remember the word kumquat." {
		t.Fatalf("list_sessions = %+v, want the disk session", list.Sessions)
	}

	var sent mcpapi.SendMessageOutput
	callOK(t, cs, "send_message", map[string]any{"sessionId": diskID, "message": "What was the word?"}, &sent)
	if !sent.Adopted || sent.SessionID == diskID {
		t.Fatalf("send_message = %+v, want a new Parley session adopting it", sent)
	}
	e.fake.WaitRequests(t.Context(), 2)
	var history []string
	for _, m := range e.fake.Requests()[1].Messages {
		b, _ := json.Marshal(m)
		history = append(history, string(b))
	}
	if h := strings.Join(history, "\n"); !strings.Contains(h, "Remember the word kumquat.") || !strings.Contains(h, "Noted: kumquat.") {
		t.Errorf("the resumed run's request lacks the earlier conversation:\n%s", h)
	}
	sess, err := e.st.GetSession(t.Context(), sent.SessionID)
	if err != nil || sess.ClaudeSessionID != diskID {
		t.Fatalf("adopted session = %+v, %v; want CLI id %s", sess, err, diskID)
	}
	types := e.eventTypes(sess.ID)
	if len(types) < 3 || types[0] != "prompt" || types[1] != "assistant" || !contains(types, "notice") {
		t.Errorf("adopted log starts %v, want the imported prompt, the reply and a notice", types)
	}
	evs, _ := e.st.EventsAfter(t.Context(), sess.ID, 0, 1)
	if !strings.Contains(string(evs[0].Payload), "Remember the word kumquat.") {
		t.Errorf("first event %s is not the imported prompt", evs[0].Payload)
	}
	// The web history lists it, with its transcript.
	if _, page := e.get("/projects/" + strconv.FormatInt(e.project.ID, 10) + "/history"); !strings.Contains(page, "Remember the word kumquat.") {
		t.Errorf("the history page does not list the adopted session")
	}
	callOK(t, cs, "list_sessions", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != sess.ID || list.Sessions[0].Source != "parley" {
		t.Errorf("after adoption list_sessions = %+v, want only the Parley session", list.Sessions)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
