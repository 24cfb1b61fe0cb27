package runstore

import (
	"testing"

	"parley/store"
	"parley/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens a store on a fresh database.
func open(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// newSession creates a session in project p.
func newSession(t *testing.T, st *store.Store, p store.Project) store.Session {
	t.Helper()
	s, err := st.CreateSession(t.Context(), p.ID, "a title", "alice")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
