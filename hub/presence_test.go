package hub

import (
	"strings"
	"testing"
)

func TestPresenceFrame(t *testing.T) {
	got := string(presenceFrame([]string{"bob", "alice", "bob"}).Data)
	if !strings.Contains(got, "<li>alice</li><li>bob (2 tabs)</li>") || !strings.Contains(got, `hx-swap-oob="true"`) {
		t.Errorf("presence frame:\n%s", got)
	}
}
