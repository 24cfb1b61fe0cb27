package server

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

// TestMCPSettingsPage: owners choose the modes members may pick and the ask
// transport; members cannot.
func TestMCPSettingsPage(t *testing.T) {
	e := newEnv(t, nil, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Owner", roleOwner)
	path := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/settings/mcp"
	form := func() url.Values {
		return url.Values{"member_modes": {"default", "bypassPermissions"}, "ask_transport": {"http"}}
	}
	if res := e.postAs(e.user, path, form()); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member saving MCP settings got %d, want 403", res.StatusCode)
	}
	if res := e.postAs(owner, path, form()); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the owner saving MCP settings got %d", res.StatusCode)
	}
	m, err := e.st.ProjectMCPSettings(t.Context(), e.project.ID)
	if err != nil || m.AskTransport != "http" || !slices.Equal(m.MemberPermissionModes, []string{"default", "bypassPermissions"}) {
		t.Errorf("saved %+v, %v", m, err)
	}
	s := e.newSession()
	o, err := e.srv.runOptions(t.Context(), s)
	if err != nil || !o.AskOverHTTP {
		t.Errorf("run options %+v, %v; want ask_user over HTTP", o, err)
	}
}
