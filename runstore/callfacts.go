package runstore

import (
	"context"
	"encoding/json"
	"math"

	"parley/runner"
)

// UndeliveredEvents implements runner.CallLog: the payloads of the
// session's input_undelivered events, which say what a run saw of the
// calls it left undelivered.
func (j journal) UndeliveredEvents(ctx context.Context, sessionID string) ([]json.RawMessage, error) {
	evs, err := j.st.EventsBetween(ctx, sessionID, 0, math.MaxInt64, runner.TypeInputUndelivered)
	if err != nil {
		return nil, j.dbErr(err)
	}
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		out[i] = e.Payload
	}
	return out, nil
}
