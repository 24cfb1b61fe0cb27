package audit

import (
	"context"
	"testing"
)

func TestSurfaceOfVia(t *testing.T) {
	for via, want := range map[string]string{"": "", "Slack": Slack, "e-mail": Email, "Ann's phone": Push} {
		if got := SurfaceOfVia(via); got != want {
			t.Errorf("SurfaceOfVia(%q) = %q, want %q", via, got, want)
		}
	}
	if _, ok := SourceOf(context.Background()); ok {
		t.Error("a bare context carries a source")
	}
	ctx := WithSource(context.Background(), Source{Surface: MCP, From: "192.0.2.1"})
	if got, ok := SourceOf(ctx); !ok || got.Surface != MCP || got.From != "192.0.2.1" {
		t.Errorf("SourceOf = %+v, %v", got, ok)
	}
}
