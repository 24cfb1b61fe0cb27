package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parley/streamjson"
)

// danglingPrime finds a prime turn only while it ends the conversation
// and no rewind cut it: a resume must never rewind away turns that came
// after it.
func TestDanglingPrime(t *testing.T) {
	const id = "0b0e5a7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	prime := `{"type":"user","uuid":"p1","parentUuid":"a0","message":{"role":"user","content":"` + streamjson.PrimeText + `"}}`
	answer := `{"type":"assistant","uuid":"p2","parentUuid":"p1","message":{"id":"` + streamjson.PrimeMessagePrefix + `ab","role":"assistant","content":[{"type":"text","text":"ok"}]}}`
	before := `{"type":"user","uuid":"u0","message":{"role":"user","content":"hello"}}` + "\n" +
		`{"type":"assistant","uuid":"a0","parentUuid":"u0","message":{"id":"msg_01","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`
	rewound := `{"type":"last-prompt","leafUuid":"a0","rewound":true,"cutUuid":"p1"}`
	later := `{"type":"user","uuid":"u9","parentUuid":"p2","message":{"role":"user","content":"and then"}}`
	for _, tt := range []struct {
		name, lines, want string
	}{
		{"none", before, ""},
		{"killed before its answer", before + "\n" + prime, "p1"},
		{"killed before its rewind", before + "\n" + prime + "\n" + answer + "\n" + `{"type":"attachment","uuid":"x"}`, "p1"},
		{"rewound", before + "\n" + prime + "\n" + answer + "\n" + rewound, ""},
		{"the conversation went on", before + "\n" + prime + "\n" + answer + "\n" + later, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "projects", "-w"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "projects", "-w", id+".jsonl"), []byte(strings.TrimSpace(tt.lines)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := danglingPrime(dir, id); got != tt.want {
				t.Fatalf("danglingPrime = %q, want %q", got, tt.want)
			}
		})
	}
	if got := danglingPrime(t.TempDir(), id); got != "" {
		t.Fatalf("no transcript: %q", got)
	}
}
