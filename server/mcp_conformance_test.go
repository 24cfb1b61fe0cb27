package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// conformanceScenarios are the suite's server scenarios that apply to
// Parley: the rest exercise the suite's own "everything" server (its
// fixture tools, prompts and resources by name), and
// dns-rebinding-protection is for servers without authentication (its own
// words); /mcp needs a token, which a rebound page does not have
// (TestMCPAuthorization checks Host and Origin).
var conformanceScenarios = []string{
	"server-initialize", "ping", "tools-list", "logging-set-level", "server-sse-multiple-streams",
}

// TestMCPConformance runs the MCP conformance suite
// (@modelcontextprotocol/conformance, server mode over HTTP) against
// /mcp. PARLEY_CONFORMANCE is the command that runs the suite (written to
// the env by scripts/install-test-deps.sh). The suite's client sends no
// credentials, so it talks to /mcp through a proxy that adds a member's
// token; authentication itself is TestMCPAuthorization's.
func TestMCPConformance(t *testing.T) {
	cmdline := os.Getenv("PARLEY_CONFORMANCE")
	if cmdline == "" {
		if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
			t.Fatal("PARLEY_CONFORMANCE is not set (scripts/install-test-deps.sh installs the suite)")
		}
		t.Skip("PARLEY_CONFORMANCE is not set")
	}
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	token := e.apiToken(e.user)
	target, _ := url.Parse(e.web.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1 // SSE: pass every event on at once
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+token)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	for _, sc := range conformanceScenarios {
		t.Run(sc, func(t *testing.T) {
			args := append(strings.Fields(cmdline), "server", "--url", front.URL+"/mcp", "--scenario", sc, "-o", t.TempDir())
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
			if err != nil {
				t.Errorf("conformance %s: %v\n%s", sc, err, out)
			}
		})
	}
}
