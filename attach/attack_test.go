package attach

import (
	"errors"
	"testing"
)

// TestCleanNameRefusesBidiControls: a name with a right-to-left override
// or another bidirectional control is refused, not shown. Such a name
// reads as something else in the transcript a teammate sees and in the
// note Claude gets: "invoice\u202efdp.sh" is shown as "invoicehs.pdf".
// Other format characters (the zero-width joiner of an emoji) pass.
func TestCleanNameRefusesBidiControls(t *testing.T) {
	for _, name := range []string{"invoice\u202efdp.sh", "a\u202db.txt", "x\u2066y\u2069.md", "a\u200fb.txt", "a\u200eb.txt", "a\u061cb.txt", "a\u202ab\u202c.txt"} {
		if got, err := CleanName(name); err == nil {
			t.Errorf("CleanName(%q) = %q, want a refusal", name, got)
		} else if ae := (*Error)(nil); !errors.As(err, &ae) {
			t.Errorf("CleanName(%q): %v is not a sentence for the member", name, err)
		}
	}
	for _, name := range []string{"family\U0001F468\u200d\U0001F469.png", "عربي.txt", "עברית.md"} {
		if _, err := CleanName(name); err != nil {
			t.Errorf("CleanName(%q): %v", name, err)
		}
	}
}
