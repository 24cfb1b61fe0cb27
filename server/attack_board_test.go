package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestBoardForgetsAProjectLeft: a member who is removed from a project
// keeps their board (they own another project) and had its sidebar open.
// The attack: a session of the project they left starts right after the
// removal, with a title they must not learn. Both sockets close (the
// board's reconnect reads the projects afresh) and neither carries the
// title.
func TestBoardForgetsAProjectLeft(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	startBoards(t, e)
	m := e.member("leaver@example.com", "Lee Leaver", roleMember)
	own, err := e.st.CreateProject(t.Context(), "Lee's own", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetMember(t.Context(), own.ID, m.ID, roleOwner); err != nil {
		t.Fatal(err)
	}
	owner := e.member("owner@example.com", "Owen Owner", roleOwner)
	pid := strconv.FormatInt(e.project.ID, 10)
	bd := e.dialPathAs(m, "/board/ws")
	bd.waitFor(10*time.Second, `id="board-needs"`)
	sb := e.dialPathAs(m, "/projects/"+pid+"/sidebar/ws")
	sb.waitFor(10*time.Second, `id="sb-list"`)

	res := e.postAs(owner, "/projects/"+pid+"/settings/members/"+strconv.FormatInt(m.ID, 10)+"/remove", nil)
	res.Body.Close()
	if a, err := e.st.ProjectAccess(t.Context(), e.project.ID, m.ID); err != nil || a.Role != "" {
		t.Fatalf("remove: status %d, still %q (%v)", res.StatusCode, a.Role, err)
	}
	const secret = "Secret merger plan"
	s, err := e.st.CreateSessionBy(t.Context(), e.project.ID, secret, e.user.Name, e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetSessionStatus(t.Context(), s.ID, "running"); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*ws{"board": bd, "sidebar": sb} {
		var seen strings.Builder
		closed := false
		deadline := time.After(10 * time.Second)
	read:
		for {
			select {
			case f, ok := <-w.frames:
				if !ok {
					closed = true
					break read
				}
				seen.WriteString(f)
			case <-deadline:
				break read
			}
		}
		if strings.Contains(seen.String(), secret) || strings.Contains(seen.String(), s.ID) {
			t.Errorf("the %s socket of a member who left told them of a new session:\n%s", name, seen.String())
		}
		if !closed {
			t.Errorf("the %s socket stayed open after its member left the project", name)
		}
	}
}
