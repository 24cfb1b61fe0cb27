package secretbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ParseKey reads a key written as 64 hex digits (what LoadKey's file
// holds; `openssl rand -hex 32` makes one).
func ParseKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("want %d hex digits (openssl rand -hex %d makes a key)", 2*KeySize, KeySize)
	}
	return key, nil
}

// LoadKey reads the key kept in the file at path, making it the first
// time: 32 random bytes in hex, mode 0600, in a directory made 0700.
// Processes that make it at once all get the one that was kept first.
// A file that others may read or write, or a link, is refused.
func LoadKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	if err := create(path); err != nil {
		return nil, err
	}
	return readKey(path)
}

// create writes a new key to a file of its own and links it to path,
// which fails if another process made path meanwhile: theirs stays.
func create(path string) error {
	key := make([]byte, KeySize)
	rand.Read(key)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".new-key-*")
	if err != nil {
		return fmt.Errorf("secret key %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path) // CreateTemp made it 0600
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("secret key %s: %w", path, err)
	}
	return nil
}

// readKey reads the key file without following a link, refusing one that
// others may read or write.
func readKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret key %s: mode %s: it must be a file only its owner can read (chmod 600 %s)", path, st.Mode(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	return key, nil
}
