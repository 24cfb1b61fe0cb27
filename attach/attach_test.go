package attach

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCleanNameRefusesPaths: a file name is never a path.
func TestCleanNameRefusesPaths(t *testing.T) {
	for _, name := range []string{"../../etc/x", "a/b", `a\b`, "/etc/passwd", ".", "..", "", "a\x00b", "a\nb", "a\x1bb", "bad\xffutf8", strings.Repeat("x", MaxNameBytes+1)} {
		if got, err := CleanName(name); err == nil {
			t.Errorf("CleanName(%q) = %q, want a refusal", name, got)
		} else if ae := (*Error)(nil); !errors.As(err, &ae) {
			t.Errorf("CleanName(%q): %v is not a sentence for the member", name, err)
		}
	}
	for _, name := range []string{"notes.txt", " spaced name.md ", "..hidden", "ünïcode.txt", strings.Repeat("x", MaxNameBytes)} {
		if _, err := CleanName(name); err != nil {
			t.Errorf("CleanName(%q): %v", name, err)
		}
	}
}

// TestCheckDecidesByBytes: the kind comes from the bytes; a file that
// claims to be an image and is not is refused.
func TestCheckDecidesByBytes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n rest")
	tests := []struct {
		name, declared string
		data           []byte
		kind, media    string
		refused        bool
	}{
		{"shot.png", "image/png", png, KindImage, "image/png", false},
		{"renamed.txt", "text/plain", png, KindImage, "image/png", false},
		{"fake.png", "image/png", []byte("hello"), "", "", true},
		{"fake.bin", "image/webp", []byte("hello"), "", "", true},
		{"notes.txt", "text/plain", []byte("hello"), KindFile, "application/octet-stream", false},
		{"gif", "", []byte("GIF89a..."), KindImage, "image/gif", false},
		{"w", "", []byte("RIFF\x00\x00\x00\x00WEBPVP8 "), KindImage, "image/webp", false},
		{"j", "", []byte{0xff, 0xd8, 0xff, 0xe0}, KindImage, "image/jpeg", false},
		{"big.png", "", append(png, make([]byte, MaxImageBytes)...), "", "", true},
		{"big.txt", "", make([]byte, MaxFileBytes+1), "", "", true},
	}
	for _, tt := range tests {
		u, err := Check(tt.name, tt.declared, tt.data)
		if tt.refused {
			if err == nil {
				t.Errorf("Check(%q) accepted as %s", tt.name, u.MediaType)
			}
			continue
		}
		if err != nil || u.Kind != tt.kind || u.MediaType != tt.media {
			t.Errorf("Check(%q) = %s %s, %v; want %s %s", tt.name, u.Kind, u.MediaType, err, tt.kind, tt.media)
		}
	}
}

// TestSaverNeverOverwrites: a second file of the same name gets a new one.
func TestSaverNeverOverwrites(t *testing.T) {
	base := t.TempDir()
	s, err := NewSaver(base, Folder(time.Now(), "abc"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Save("notes.txt", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Save("notes.txt", []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	if first == second || !strings.HasSuffix(second, "/notes-2.txt") {
		t.Fatalf("saved as %s then %s", first, second)
	}
	for p, want := range map[string]string{first: "one", second: "two"} {
		if got, _ := os.ReadFile(filepath.Join(base, p)); string(got) != want {
			t.Errorf("%s holds %q, want %q", p, got, want)
		}
	}
}

// TestSaverRefusesPlantedLinks: a run that makes .parley, .parley/uploads
// or the file itself a link to elsewhere gets nothing written there.
func TestSaverRefusesPlantedLinks(t *testing.T) {
	for _, at := range []string{".parley", ".parley/uploads", ".parley/uploads/f"} {
		t.Run(strings.ReplaceAll(at, "/", "_"), func(t *testing.T) {
			base, outside := t.TempDir(), t.TempDir()
			if err := os.MkdirAll(filepath.Join(base, filepath.Dir(at)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(base, at)); err != nil {
				t.Fatal(err)
			}
			s, err := NewSaver(base, "f")
			if err == nil {
				_, err = s.Save("x", []byte("planted"))
				s.Close()
			}
			if !errors.Is(err, ErrUnsafe) {
				t.Errorf("saving through a link at %s: %v, want ErrUnsafe", at, err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("written outside: %v", ents)
			}
		})
	}
	t.Run("file", func(t *testing.T) {
		base, outside := t.TempDir(), t.TempDir()
		target := filepath.Join(outside, "target")
		s, err := NewSaver(base, "f")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := os.Symlink(target, filepath.Join(base, UploadsDir, "f", "x")); err != nil {
			t.Fatal(err)
		}
		p, err := s.Save("x", []byte("planted"))
		if err != nil || !strings.HasSuffix(p, "/x-2") {
			t.Errorf("saved as %q, %v; want x-2 beside the link", p, err)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Error("the link was followed")
		}
	})
}
