package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/audit"
	"parley/store"
	"parley/store/pgtest"
)

// witness has st's appends witnessed in a file of a temporary directory,
// as `parley serve` does; stop ends the witness (its last write done) and
// returns the file's newest head and what it logged.
func witness(t *testing.T, st *store.Store) (stop func() (audit.Head, string)) {
	t.Helper()
	var logged bytes.Buffer
	path := filepath.Join(t.TempDir(), audit.WitnessFile)
	w, err := audit.OpenWitness(path, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st.OnAuditAppend(w.Note)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() (audit.Head, string) {
		st.OnAuditAppend(nil) // what follows is as if Parley died before witnessing it
		cancel()
		wg.Wait()
		h, err := audit.ReadWitness(path)
		if err != nil {
			t.Fatal(err)
		}
		return h, logged.String()
	}
}

// tamper runs sql as the table's owner, the append-only trigger disabled.
func tamper(t *testing.T, conn *pgx.Conn, sql ...string) {
	t.Helper()
	for _, q := range append([]string{`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update`}, sql...) {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestVerifyWitnessSeesTruncation: rows cut from the end of the trail
// leave a chain that holds, but not the witness's head: Verify says how
// many rows went, where the witness stands and where the database ends.
func TestVerifyWitnessSeesTruncation(t *testing.T) {
	cases := []struct {
		name, sql, want string
	}{
		{"newest three", `DELETE FROM audit_log WHERE id > 5`, "the newest 3 rows were removed (the witness %s has seq 8 hash %x, the database ends at seq 5)"},
		{"all", `DELETE FROM audit_log`, "the newest 8 rows were removed (the witness %s has seq 8 hash %x, the database ends at seq 0)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, st, conn := newLog(t)
			stop := witness(t, st)
			some(t, l, 8)
			head, logged := stop()
			if head.Seq != 8 || !strings.Contains(logged, fmt.Sprintf("audit trail head\" seq=8 hash=%x", head.Hash)) {
				t.Fatalf("witness head %d, log %q; want seq 8 in both", head.Seq, logged)
			}
			tamper(t, conn, c.sql)
			if res, err := l.Verify(t.Context()); err != nil || !res.OK() {
				t.Fatalf("without the witness: %v, %v; want the cut chain to hold (the gap this closes)", res, err)
			}
			res, err := l.Verify(t.Context(), head)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(c.want, head.From, head.Hash); res.OK() || res.String() != want {
				t.Errorf("Verify = %q\nwant %q", res, want)
			}
		})
	}
}

// TestVerifyLaggingWitnessNoAlarm: Parley dying between a commit and its
// witness write leaves the witness behind the chain (and perhaps a torn
// line); that is no alarm.
func TestVerifyLaggingWitnessNoAlarm(t *testing.T) {
	l, st, _ := newLog(t)
	stop := witness(t, st)
	some(t, l, 5)
	head, _ := stop()
	some(t, l, 3) // committed, never witnessed
	f, err := os.OpenFile(head.From, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "8 %x", head.Hash[:7]) // torn mid-line by the crash
	f.Close()
	if again, err := audit.ReadWitness(head.From); err != nil || again.Seq != 5 {
		t.Fatalf("witness with a torn line = %+v, %v; want seq 5", again, err)
	}
	res, err := l.Verify(t.Context(), head)
	if err != nil || !res.OK() || res.Rows != 8 {
		t.Errorf("Verify = %v, %v; want ok over 8 rows", res, err)
	}
}

// TestVerifyWitnessSeesRewrittenTail: the newest rows deleted and forged
// ones appended with a valid chain (the hash is public) hold as a chain,
// but the witness's row is not on it.
func TestVerifyWitnessSeesRewrittenTail(t *testing.T) {
	cases := []struct {
		name, sql, want string
	}{
		{"ids reused", `SELECT setval('audit_log_id_seq', 5)`, "the newest rows were rewritten: the witness %s has seq 8 hash %x, the database's row 8 has hash %x"},
		{"ids past the witness", `SELECT 1`, "the newest rows were rewritten: the witness %s has seq 8 hash %x, the database has no row 8 and goes on to seq 11"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, st, conn := newLog(t)
			stop := witness(t, st)
			some(t, l, 8)
			head, _ := stop()
			tamper(t, conn, `DELETE FROM audit_log WHERE id > 5`, c.sql)
			some(t, l, 3) // the forgery, chained by the same code
			if res, err := l.Verify(t.Context()); err != nil || !res.OK() || res.Rows != 8 {
				t.Fatalf("without the witness: %v, %v; want the forged chain to hold", res, err)
			}
			res, err := l.Verify(t.Context(), head)
			if err != nil {
				t.Fatal(err)
			}
			var row8 []byte
			_ = conn.QueryRow(t.Context(), `SELECT hash FROM audit_log WHERE id = 8`).Scan(&row8)
			want := fmt.Sprintf(c.want, head.From, head.Hash, row8)
			if row8 == nil {
				want = fmt.Sprintf(c.want, head.From, head.Hash)
			}
			if res.OK() || res.String() != want {
				t.Errorf("Verify = %q\nwant %q", res, want)
			}
		})
	}
}

// TestVerifyTakesEveryReplicasWitness: two replicas share the database,
// each witnessing its own appends in its own data directory. Rows cut
// that only the second replica wrote pass the first's witness, and are
// found with both.
func TestVerifyTakesEveryReplicasWitness(t *testing.T) {
	url := pgtest.New(t)
	var logs [2]*audit.Log
	var stops [2]func() (audit.Head, string)
	for i := range logs {
		st, err := store.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		logs[i], stops[i] = audit.New(st), witness(t, st)
	}
	for _, i := range []int{0, 0, 0, 1, 1, 1, 0, 1, 1} {
		some(t, logs[i], 1)
	}
	a, _ := stops[0]()
	b, _ := stops[1]()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	tamper(t, conn, `DELETE FROM audit_log WHERE id > 7`)
	if res, err := logs[0].Verify(t.Context(), a); err != nil || !res.OK() || res.Witnessed != 7 {
		t.Errorf("with the first replica's witness alone = %v, %v; want ok, witnessed at 7", res, err)
	}
	res, err := logs[0].Verify(t.Context(), a, b)
	if want := "the newest 2 rows were removed (the witness " + b.From; err != nil || !strings.HasPrefix(res.String(), want) {
		t.Errorf("with both witnesses = %q, %v; want %q…", res, err, want)
	}
}

// TestWitnessCompacts: past its size bound the file is rewritten as its
// newest line, a line another process appended with a newer head kept.
func TestWitnessCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.WitnessFile)
	w, err := audit.OpenWitness(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	audit.SetWitnessMaxBytes(w, 300)
	hash := bytes.Repeat([]byte{0xab}, 32)
	for seq := range int64(20) {
		if seq == 10 {
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			fmt.Fprintf(f, "1000 %x\n", hash) // another replica sharing the file
			f.Close()
		}
		if err := w.Write(audit.Head{Seq: seq + 1, Hash: hash}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > 300+100 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("witness file after 20 writes: %v, %v; want at most 400 bytes, mode 0600", fi, err)
	}
	if h, err := audit.ReadWitness(path); err != nil || h.Seq != 1000 {
		t.Errorf("newest head = %d, %v; want 1000", h.Seq, err)
	}
}

// TestWitnessSharedFile: two replicas sharing a data directory append to
// one witness file; when one compacts it (a new file renamed over the
// old), or an operator moves it aside, the other's next heads still land
// in the file at the path, not in the old one.
func TestWitnessSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.WitnessFile)
	var ws [2]*audit.Witness
	for i := range ws {
		w, err := audit.OpenWitness(path, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
	}
	audit.SetWitnessMaxBytes(ws[0], 300)
	hash := bytes.Repeat([]byte{0xcd}, 32)
	for seq := int64(1); seq <= 11; seq++ { // the first compacts at 10
		if err := ws[seq%2].Write(audit.Head{Seq: seq, Hash: hash}); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := audit.ReadWitness(path); err != nil || h.Seq != 11 {
		t.Errorf("after the first replica compacted, newest head = %d, %v; want the second's 11", h.Seq, err)
	}
	if err := os.Rename(path, path+".before-restore"); err != nil {
		t.Fatal(err)
	}
	if err := ws[1].Write(audit.Head{Seq: 1, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	if h, err := audit.ReadWitness(path); err != nil || h.Seq != 1 {
		t.Errorf("after the file was moved aside, newest head = %d, %v; want 1 in a new file", h.Seq, err)
	}
}
