package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain", "hello")
	big := write("big", strings.Repeat("x", 101))
	link := filepath.Join(dir, "link")
	os.Symlink(plain, link)
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string
		err  error
	}{
		{"regular", plain, "hello", nil},
		{"too large", big, "", ErrTooLarge},
		{"symlink to a file", link, "", ErrSymlink},
		{"symlink to /dev/zero", zero, "", ErrSymlink},
		{"device", "/dev/zero", "", ErrNotRegular},
		{"fifo without a writer", fifo, "", ErrNotRegular},
		{"directory", dir, "", ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(tt.path, 100)
			if !errors.Is(err, tt.err) || string(got) != tt.want {
				t.Errorf("Read = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
			if tt.err != nil && tt.err != fs.ErrNotExist && !Refused(err) {
				t.Errorf("Refused(%v) = false", err)
			}
		})
	}
}
