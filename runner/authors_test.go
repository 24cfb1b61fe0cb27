package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestAuthorCheckThatFailsIsMadeAgain: a membership check that cannot be
// made (the database away) lets the turn run on, and is made again until
// it can be: then the running turn of an author who may no longer prompt
// is stopped, and the page says whose.
func TestAuthorCheckThatFailsIsMadeAgain(t *testing.T) {
	defer func(d time.Duration) { checkRetry = d }(checkRetry)
	checkRetry = 100 * time.Millisecond
	never := make(chan struct{})
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "Bob's long job", Hold: never}})
	sup, j, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	var calls atomic.Int32
	o := testOptions(t, "")
	o.MayPrompt = func(context.Context, int64) (bool, error) {
		if calls.Add(1) <= 2 {
			return false, errors.New("the database is away")
		}
		return false, nil // Bob was removed
	}
	if err := sup.Prompt(t.Context(), "s1", With(o), "a long job", Author{Name: "Bob", ID: 7}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "stream_event")
	sup.CheckAuthors()
	waitNotice(t, pub, "Parley stopped Bob's turn: Bob may no longer send messages in this project.")
	waitType(t, pub, "result")
	if n := calls.Load(); n != 3 {
		t.Errorf("the check was made %d times, want 3: twice failing, then once more", n)
	}
	if !j.has(TypeInterrupt, `"by":"Parley"`) {
		t.Error("no interrupt by Parley in the log")
	}
}
