package quota

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWatcherKeepsTheFileSystemsReserve: a project under its quota whose
// run fills the file system below the reserve is stopped, with the
// sentence that says the server's disk is nearly full, and takes no
// prompt. The file system is the machine's own (the reserve is put just
// below what it has free), and so is the 512 MiB written.
func TestWatcherKeepsTheFileSystemsReserve(t *testing.T) {
	dir := t.TempDir()
	free, _, err := Free(dir)
	if err != nil {
		t.Fatal(err)
	}
	if free < 2<<30 {
		t.Skipf("%s free: too little to fill", Bytes(free))
	}
	over := make(chan Status, 10)
	w := New(Config{Every: 20 * time.Millisecond, Reserve: free - 128<<20,
		Project: func(context.Context, int64) (Project, error) {
			return Project{Dirs: []string{dir}, Quota: 10 << 30}, nil
		},
		Live: func() []int64 { return []int64{5} },
		Over: func(_ context.Context, id int64, st Status) {
			select { // stopped again every tick while below the reserve
			case over <- st:
			default:
			}
		}})
	if st, err := w.Check(t.Context(), 5); err != nil || st.Over() {
		t.Fatalf("before the write: %+v, %v", st, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	write(t, filepath.Join(dir, "big"), 512<<20)
	select {
	case st := <-over:
		t.Logf("stopped: %s", st.Sentence())
		if !st.Low || !strings.Contains(st.Sentence(), "The server's disk is nearly full") {
			t.Errorf("stopped with %+v, want the reserve's sentence", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a project that took the file system below its reserve was not stopped")
	}
	if st, _ := w.Check(t.Context(), 5); !st.Over() || st.Used > st.Quota {
		t.Errorf("Check below the reserve: %+v, want refused though under its quota", st)
	}
}

func TestDefaultReserve(t *testing.T) {
	for size, want := range map[int64]int64{10 << 30: 512 << 20, 252 << 30: 2 << 30} {
		if got := DefaultReserve(size); got != want {
			t.Errorf("DefaultReserve(%s) = %s, want %s", Bytes(size), Bytes(got), Bytes(want))
		}
	}
}
