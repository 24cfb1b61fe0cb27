package mail_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/reach/mail"
)

var update = flag.Bool("update", false, "rewrite reach/mail/testdata/*.golden from Render")

// TestRenderGolden keeps the mail a person reads in testdata: a change to
// its wording or markup shows in review (go test ./reach/mail -run
// TestRenderGolden -update rewrites it).
func TestRenderGolden(t *testing.T) {
	subject, text, html, err := mail.Render(ask(), answerLinks())
	if err != nil {
		t.Fatal(err)
	}
	got := "Subject: " + subject + "\n\n-- text/plain\n" + text + "\n-- text/html\n" + html
	path := filepath.Join("testdata", "permission.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("Render differs from %s (-want +got); run with -update if intended:\n%s", path, diff)
	}
}
