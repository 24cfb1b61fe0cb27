package secretbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newBox(t *testing.T, b byte) *Box {
	t.Helper()
	box, err := New(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// TestSealOpen: a value opens for the place it was sealed for, and the
// stored bytes do not hold it.
func TestSealOpen(t *testing.T) {
	box := newBox(t, 1)
	plain := []byte("refresh-token-1234567890")
	sealed := box.Seal(plain, []byte("row 1"))
	if bytes.Contains(sealed, plain) || sealed[0] != version1 {
		t.Fatalf("sealed = %x", sealed)
	}
	got, err := box.Open(sealed, []byte("row 1"))
	if err != nil || string(got) != string(plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if again := box.Seal(plain, []byte("row 1")); bytes.Equal(again, sealed) {
		t.Error("two seals of one value are equal (the nonce is not random)")
	}
}

// TestOpenRefuses: a value for another place, under another key, changed
// anywhere, cut short or empty gives ErrOpen, never a panic.
func TestOpenRefuses(t *testing.T) {
	box := newBox(t, 1)
	sealed := box.Seal([]byte("secret"), []byte("row 1"))
	cases := map[string][]byte{"empty": nil, "version only": {version1}, "unknown version": append([]byte{2}, sealed[1:]...),
		"cut": sealed[:len(sealed)-1]}
	for i := range sealed {
		changed := bytes.Clone(sealed)
		changed[i] ^= 0x80
		cases[fmt.Sprintf("byte %d changed", i)] = changed
	}
	for name, v := range cases {
		if _, err := box.Open(v, []byte("row 1")); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: Open = %v, want ErrOpen", name, err)
		}
	}
	if _, err := box.Open(sealed, []byte("row 2")); !errors.Is(err, ErrOpen) {
		t.Errorf("another row's value: Open = %v, want ErrOpen", err)
	}
	if _, err := newBox(t, 2).Open(sealed, []byte("row 1")); !errors.Is(err, ErrOpen) {
		t.Errorf("another key: Open = %v, want ErrOpen", err)
	}
	if newBox(t, 2).Check() == box.Check() || newBox(t, 1).Check() != box.Check() {
		t.Error("Check does not tell keys apart")
	}
	if _, err := New(make([]byte, 16)); err == nil {
		t.Error("New took a 16-byte key")
	}
}

// TestLoadKey: the first load makes a 0600 key file that later loads
// read; loads at once agree; a file others can read, a link and a file
// that holds no key are refused.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "k.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) || len(k) != KeySize {
			t.Fatalf("loads at once got different keys: %x, %x", keys[0], k)
		}
	}
	fi, _ := os.Stat(path)
	di, _ := os.Stat(filepath.Dir(path))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("key file %s, directory %s; want 0600 and 0700", fi.Mode(), di.Mode())
	}
	if again, err := LoadKey(path); err != nil || !bytes.Equal(again, keys[0]) {
		t.Errorf("reload = %x, %v", again, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "keys", ".new-key-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	link := filepath.Join(dir, "link.key")
	os.Symlink(path, link)
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not hex"), 0o600)
	open := filepath.Join(dir, "open.key")
	os.WriteFile(open, []byte(strings.Repeat("ab", KeySize)), 0o644)
	os.Chmod(open, 0o644)
	for _, p := range []string{link, bad, open} {
		if _, err := LoadKey(p); err == nil {
			t.Errorf("LoadKey(%s) took it", filepath.Base(p))
		}
	}
	if _, err := ParseKey(strings.Repeat("ab", KeySize) + "\n"); err != nil {
		t.Errorf("ParseKey of 64 hex digits: %v", err)
	}
}
