package runner

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlotsQueueIsFirstComeFirstServed(t *testing.T) {
	q := &slots{max: 2}
	job := nothing
	if !q.tryAcquire() || !q.tryAcquire() {
		t.Fatal("two free slots were not given")
	}
	if q.tryAcquire() {
		t.Fatal("a third slot was given with a cap of 2")
	}
	a, newA, _ := q.enqueue("a", nil, job, nil, false)
	b, _, _ := q.enqueue("b", nil, job, nil, false)
	again, newAgain, _ := q.enqueue("a", nil, job, nil, false)
	if !newA || newAgain || again != a || len(a.jobs) != 2 {
		t.Fatalf("a second message of a waiting session must join its waiter (new=%v, same=%v, jobs=%d)", newAgain, again == a, len(a.jobs))
	}
	if diff := cmp.Diff([]string{"a", "b"}, q.queue()); diff != "" {
		t.Fatalf("line (-want +got):\n%s", diff)
	}
	q.release()
	select {
	case <-a.granted:
	default:
		t.Fatal("a released slot did not go to the head of the line")
	}
	select {
	case <-b.granted:
		t.Fatal("b was served out of turn")
	default:
	}
	if q.tryAcquire() {
		t.Fatal("a newcomer took a slot while b waits")
	}
	q.release()
	<-b.granted
	q.release()
	q.release()
	if q.used != 0 || len(q.waiting) != 0 {
		t.Fatalf("after every release: used %d, waiting %d", q.used, len(q.waiting))
	}
}

func TestSlotsWithoutCap(t *testing.T) {
	q := &slots{}
	for range 100 {
		if !q.tryAcquire() {
			t.Fatal("an uncapped supervisor refused a slot")
		}
	}
	w, _, _ := q.enqueue("x", nil, nil, nil, false)
	select {
	case <-w.granted:
	default:
		t.Fatal("an uncapped line made a session wait")
	}
}

// A waiter given a slot takes the session's later work until it has
// handed its jobs over (then it is sealed); work that only joins earlier
// work (behind) is refused when there is none.
func TestSlotsOpenWaiterTakesLaterWork(t *testing.T) {
	q := &slots{}
	job := nothing
	if _, _, err := q.enqueue("a", nil, job, nil, true); !errors.Is(err, errNotQueued) {
		t.Fatalf("behind with nothing in line: %v, want errNotQueued", err)
	}
	w, isNew, _ := q.enqueue("a", nil, job, nil, false)
	if !isNew || !q.isOpen("a") {
		t.Fatal("a granted waiter is not open")
	}
	if again, isNew, err := q.enqueue("a", nil, job, nil, true); err != nil || isNew || again != w {
		t.Fatalf("later work did not join the open waiter: new=%v same=%v err=%v", isNew, again == w, err)
	}
	for i := range 2 {
		if _, ok := q.job(w, i); !ok {
			t.Fatalf("job %d missing", i)
		}
	}
	if _, ok := q.job(w, 2); ok || q.isOpen("a") {
		t.Fatal("a waiter with no jobs left is still open")
	}
	if _, _, err := q.enqueue("a", nil, job, nil, true); !errors.Is(err, errNotQueued) {
		t.Fatalf("behind after the waiter was sealed: %v, want errNotQueued", err)
	}
}
