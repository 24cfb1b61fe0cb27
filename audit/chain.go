package audit

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// chainVersion is the first field of every canonical encoding, so a
// future change of the encoding is told apart from tampering.
const chainVersion = 1

// Seal is a row's hash: SHA-256 of the previous row's hash (empty for the
// first row) followed by the row's canonical encoding, a JSON array of
// [version, id, at (RFC 3339, UTC, microseconds), actor_id, actor_name,
// from, surface, action, project_id, session_id, target, detail] with
// detail's keys sorted.
func Seal(r Row) []byte {
	h := sha256.New()
	h.Write(r.PrevHash)
	h.Write(canonical(r))
	return h.Sum(nil)
}

// canonical is the row's fields in a fixed order. A detail that is not
// valid JSON (only a hand-edited row's) is hashed as its raw bytes, which
// then do not match.
func canonical(r Row) []byte {
	detail, err := recode(r.Detail)
	if err != nil {
		detail, _ = json.Marshal(string(r.Detail))
	}
	b, _ := json.Marshal([]any{chainVersion, r.ID, r.At.UTC().Format(time.RFC3339Nano), r.ActorID, r.ActorName,
		r.Source, r.Surface, r.Action, r.ProjectID, r.SessionID, r.Target, json.RawMessage(detail)})
	return b
}

// Result is what Verify found.
type Result struct {
	Rows     int64  // rows checked
	BrokenID int64  // the first row whose link is broken; 0 = none
	Head     []byte // the last row's hash, when the chain holds
	Reason   string // why BrokenID is broken
	End      int64  // the last row's id; 0 for an empty trail
	// Witness is the first head given to Verify that is not on the chain
	// (zero = none); WitnessAt is the database's hash of its row, when
	// the database has that row.
	Witness   Head
	WitnessAt []byte
	Witnessed int64 // the greatest seq of a head found on the chain
}

// OK reports whether the whole chain holds and every head given is on it.
func (r Result) OK() bool { return r.BrokenID == 0 && r.Witness.Seq == 0 }

// String is the result for a person.
func (r Result) String() string {
	w := r.Witness
	switch {
	case r.BrokenID != 0:
		return fmt.Sprintf("broken at row %d (%s) after %d good rows", r.BrokenID, r.Reason, r.Rows-1)
	case w.Seq == 0:
		return fmt.Sprintf("ok: %d rows, head %s", r.Rows, hex.EncodeToString(r.Head))
	case r.WitnessAt != nil:
		return fmt.Sprintf("the newest rows were rewritten: the witness %s has seq %d hash %x, the database's row %d has hash %x",
			w.From, w.Seq, w.Hash, w.Seq, r.WitnessAt)
	case r.End > w.Seq:
		return fmt.Sprintf("the newest rows were rewritten: the witness %s has seq %d hash %x, the database has no row %d and goes on to seq %d",
			w.From, w.Seq, w.Hash, w.Seq, r.End)
	}
	return fmt.Sprintf("the newest %s removed (the witness %s has seq %d hash %x, the database ends at seq %d)",
		rowsWere(w.Seq-r.End), w.From, w.Seq, w.Hash, r.End)
}

// rowsWere is "N rows were", or "row was" for one.
func rowsWere(n int64) string {
	if n == 1 {
		return "row was"
	}
	return fmt.Sprintf("%d rows were", n)
}

// Verify walks the trail from its first row and reports the first row
// whose previous-hash is not the hash of the row before it, or whose own
// hash is not its fields' hash (an edited row). It reads the rows only,
// never trusting the database's append-only trigger.
//
// Rows cut from the end leave a shorter chain that holds; heads, from
// witnesses (ReadWitness, ParseHead), show those: each must be on the
// chain, its row there with its hash. A head behind the chain's end (a
// witness that missed the newest rows) is on it; a chain that ends before
// a head's seq lost its newest rows, and one that has another hash at the
// head's seq, or no row there, had them rewritten.
func (l *Log) Verify(ctx context.Context, heads ...Head) (Result, error) {
	var res Result
	prev := []byte{}
	hs := sortedHeads(heads)
	errStop := fmt.Errorf("stop")
	err := l.st.EachAuditRow(ctx, Filter{}, func(r Row) error {
		res.Rows++
		switch {
		case !bytes.Equal(r.PrevHash, prev):
			res.BrokenID, res.Reason = r.ID, "its previous hash is not the hash of the row before it"
		case !bytes.Equal(r.Hash, Seal(r)):
			res.BrokenID, res.Reason = r.ID, "its fields do not match its hash"
		default:
			prev, res.End = r.Hash, r.ID
			hs = res.witness(r, hs)
			return nil
		}
		return errStop
	})
	if err != nil && err != errStop {
		return res, fmt.Errorf("verify the audit trail: %w", err)
	}
	if len(hs) > 0 && res.Witness.Seq == 0 {
		res.Witness = hs[0] // the chain ends before it
	}
	if res.BrokenID == 0 {
		res.Head = prev
	}
	return res, nil
}

// witness checks r, a row whose link holds, against the heads not yet
// passed (sorted by seq), notes the first head that is not on the chain,
// and returns the heads after r.
func (res *Result) witness(r Row, hs []Head) []Head {
	for len(hs) > 0 && hs[0].Seq <= r.ID {
		h := hs[0]
		hs = hs[1:]
		switch {
		case res.Witness.Seq != 0:
		case h.Seq < r.ID: // its row is gone and the chain went on
			res.Witness = h
		case !bytes.Equal(h.Hash, r.Hash):
			res.Witness, res.WitnessAt = h, r.Hash
		default:
			res.Witnessed = h.Seq
		}
	}
	return hs
}

// sortedHeads is heads with a seq, oldest first.
func sortedHeads(heads []Head) []Head {
	var hs []Head
	for _, h := range heads {
		if h.Seq > 0 {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b Head) int { return cmp.Compare(a.Seq, b.Seq) })
	return hs
}

// exported is a row as a line of the JSON-lines export.
type exported struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	ActorID   int64           `json:"actor_id,omitempty"`
	ActorName string          `json:"actor_name"`
	From      string          `json:"from"`
	Surface   string          `json:"surface"`
	Action    string          `json:"action"`
	ProjectID int64           `json:"project_id,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Target    string          `json:"target,omitempty"`
	Detail    json.RawMessage `json:"detail"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// Export writes the rows f selects to w, oldest first, one JSON object a
// line, with their hashes in hex.
func (l *Log) Export(ctx context.Context, f Filter, w io.Writer) error {
	f.Newest = false
	enc := json.NewEncoder(w)
	return l.st.EachAuditRow(ctx, f, func(r Row) error {
		detail := json.RawMessage(r.Detail)
		if !json.Valid(detail) {
			detail = json.RawMessage("{}")
		}
		return enc.Encode(exported{ID: r.ID, At: r.At.UTC(), ActorID: r.ActorID, ActorName: r.ActorName,
			From: r.Source, Surface: r.Surface, Action: r.Action, ProjectID: r.ProjectID, SessionID: r.SessionID,
			Target: r.Target, Detail: detail, PrevHash: hex.EncodeToString(r.PrevHash), Hash: hex.EncodeToString(r.Hash)})
	})
}
