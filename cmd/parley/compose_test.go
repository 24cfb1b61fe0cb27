package main

import (
	"os"
	"regexp"
	"testing"
)

// composeFixed are variables docker-compose.yml sets to the container's
// own values, or leaves to the image: not the operator's to pass through.
var composeFixed = map[string]string{
	"DATABASE_URL":      "the compose file's own database",
	"PARLEY_ADDR":       "the container's port",
	"PARLEY_DATA_DIR":   "the container's volume",
	"PARLEY_RELAY_ADDR": "loopback inside the container",
	"PARLEY_CLAUDE_BIN": "the image's claude",
	"CLAUDE_CONFIG_DIR": "one per project under the volume",
}

// TestComposePassesSettings: docker-compose.yml hands every variable
// serve reads from the operator's env file to Parley, as ${NAME:-DEFAULT}
// with Parley's own default (empty where the default depends on the
// machine or is "none").
func TestComposePassesSettings(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+([A-Z_]+): \$\{([A-Z_]+):-([^}]*)\}`).FindAllStringSubmatch(string(raw), -1) {
		if m[1] != m[2] {
			t.Errorf("%s is given ${%s}", m[1], m[2])
		}
		passed[m[1]] = m[3]
	}
	for _, s := range settings {
		if s.set == nil || composeFixed[s.Name] != "" {
			continue
		}
		def, ok := passed[s.Name]
		want := s.Def
		if s.dynamic != nil {
			want = ""
		}
		switch {
		case !ok:
			t.Errorf("docker-compose.yml does not pass %s through (add %s: ${%s:-%s})", s.Name, s.Name, s.Name, want)
		case def != want:
			t.Errorf("docker-compose.yml: %s defaults to %q, Parley to %q", s.Name, def, want)
		}
	}
}
