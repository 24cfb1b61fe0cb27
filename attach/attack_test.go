package attach

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"
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

// TestSaverRaceWithSwappedFolders: a run swaps the upload folders for
// links to a folder outside while Parley saves: .parley for a link, then
// .parley/uploads, renaming the real ones away and back, as fast as it
// can. Every save lands under the real folders or is refused; nothing is
// ever written through a link.
func TestSaverRaceWithSwappedFolders(t *testing.T) {
	base, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, UploadsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			dir := filepath.Join(base, ".parley")
			if i%2 == 1 {
				dir = filepath.Join(base, UploadsDir)
			}
			if os.Rename(dir, dir+".real") != nil {
				continue
			}
			_ = os.Symlink(outside, dir)
			_ = os.Remove(dir)
			_ = os.Rename(dir+".real", dir)
		}
	}()
	saved, refused := 0, 0
	for i := range 2000 {
		s, err := NewSaver(base, Folder(time.Unix(int64(i), 0), "race"))
		if err != nil {
			refused++
			continue
		}
		if _, err := s.Save("a.txt", []byte("x")); err != nil {
			refused++
		} else {
			saved++
		}
		s.Close()
	}
	close(stop)
	<-done
	entries, _ := os.ReadDir(outside)
	if len(entries) != 0 {
		t.Fatalf("saves wrote outside through a link: %v", entries)
	}
	t.Logf("%d saved, %d refused", saved, refused)
}

// TestCheckRefusesGiantImages: a teammate's page shows every image sent
// in the session. The attack: a 100-byte PNG whose header says it is
// 100,000 × 100,000 pixels (40 GB decoded), to crash the tab of everyone
// who opens the session; the Messages API refuses images over 8000
// pixels a side anyway. Its dimensions are read from the header and it is
// refused with a sentence before anything is sent.
func TestCheckRefusesGiantImages(t *testing.T) {
	giant := pngHeader(100_000, 100_000)
	if _, err := Check("bomb.png", "image/png", giant); err == nil {
		t.Error("a 100000 x 100000 PNG was accepted")
	} else if ae := (*Error)(nil); !errors.As(err, &ae) {
		t.Errorf("refusal %v is not a sentence for the member", err)
	}
	if _, err := Check("ok.png", "image/png", pngHeader(1920, 1080)); err != nil {
		t.Errorf("a 1920 x 1080 PNG: %v", err)
	}
}

// pngHeader is the start of a PNG of w × h pixels: its signature and
// IHDR chunk, which is all image.DecodeConfig reads.
func pngHeader(w, h uint32) []byte {
	ihdr := []byte{0, 0, 0, 0, 0, 0, 0, 0, 8, 6, 0, 0, 0}
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	chunk := append([]byte("IHDR"), ihdr...)
	b := []byte("\x89PNG\r\n\x1a\n")
	b = binary.BigEndian.AppendUint32(b, uint32(len(ihdr)))
	b = append(b, chunk...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(chunk))
}
