package transcript

import (
	"log/slog"
	"strings"
	"testing"

	"parley/streamjson"
)

// A prime's answer (runner/prime.go) is in the CLI's transcript, on the
// branch the rewind left; the reconcile after a crash must never bring it
// into the session's log as something Claude said.
func TestReconcileSkipsAPrimesAnswer(t *testing.T) {
	lines := strings.Join([]string{
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"` + streamjson.PrimeText + `"}}`,
		`{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"` + streamjson.PrimeMessagePrefix + `0a1b","role":"assistant","content":[{"type":"text","text":"ok"}]}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":"hello"}}`,
		`{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"id":"msg_01real","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`,
	}, "\n")
	got, err := parse(strings.NewReader(lines), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].UUID != "a2" {
		t.Fatalf("kept %+v, want Claude's answer alone", got)
	}
}
