package runstore

import (
	"context"
	"errors"

	"parley/runner"
	"parley/store"
)

// MarkDelivered implements runner.DeliveryJournal.
func (j journal) MarkDelivered(ctx context.Context, id, how string, e runner.Event) error {
	err := j.st.MarkDelivered(ctx, id, how, StoreEvent(e))
	if errors.Is(err, store.ErrDelivered) {
		return runner.ErrDelivered
	}
	return j.dbErr(err)
}

// OwedAnswers implements runner.DeliveryJournal.
func (j journal) OwedAnswers(ctx context.Context, sessionID string) ([]runner.OwedAnswer, error) {
	list, err := j.st.UndeliveredInputs(ctx, sessionID)
	if err != nil {
		return nil, j.dbErr(err)
	}
	out := make([]runner.OwedAnswer, 0, len(list))
	for _, in := range list {
		out = append(out, runner.OwedAnswer{ID: in.ID, Kind: in.Kind, Status: in.Status, Payload: in.Payload, Answer: in.Answer})
	}
	return out, nil
}
