package runner

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlotsLineIsFirstComeFirstServed(t *testing.T) {
	q := &slots{max: 2}
	job := func(context.Context, *Run) error { return nil }
	if !q.tryAcquire() || !q.tryAcquire() {
		t.Fatal("two free slots were not given")
	}
	if q.tryAcquire() {
		t.Fatal("a third slot was given with a cap of 2")
	}
	a, newA, _ := q.enqueue("a", nil, job, nil)
	b, _, _ := q.enqueue("b", nil, job, nil)
	again, newAgain, _ := q.enqueue("a", nil, job, nil)
	if !newA || newAgain || again != a || len(a.jobs) != 2 {
		t.Fatalf("a second message of a waiting session must join its waiter (new=%v, same=%v, jobs=%d)", newAgain, again == a, len(a.jobs))
	}
	if diff := cmp.Diff([]string{"a", "b"}, q.line()); diff != "" {
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
	w, _, _ := q.enqueue("x", nil, nil, nil)
	select {
	case <-w.granted:
	default:
		t.Fatal("an uncapped line made a session wait")
	}
}
