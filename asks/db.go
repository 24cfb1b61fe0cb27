package asks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"parley/runner"
	"parley/store"
)

// answerWait bounds how long an answer waits for the server: an answer
// that resumes a session starts a claude process first.
const answerWait = 2 * time.Minute

// DB is a [Client] working on Parley's database as one user. Answers go
// to the running server through Postgres (NOTIFY), which applies them.
type DB struct {
	st   *store.Store
	user store.User
}

// NewDB returns a DB client for the user with email.
func NewDB(ctx context.Context, st *store.Store, email string) (*DB, error) {
	u, err := st.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("there is no user with the email %s", email)
	}
	if err != nil {
		return nil, err
	}
	return &DB{st: st, user: u}, nil
}

// Open implements [Client].
func (d *DB) Open(ctx context.Context) ([]Ask, error) {
	ins, err := d.st.OpenAsksFor(ctx, d.user.ID, d.user.IsAdmin)
	if err != nil {
		return nil, err
	}
	list := make([]Ask, 0, len(ins))
	for _, in := range ins {
		a := Ask{ID: in.ID, Project: in.ProjectName, SessionID: in.SessionID, Session: in.SessionTitle,
			Asked: in.CreatedAt, Detached: in.Detached}
		_ = json.Unmarshal(in.Payload, &a.AskPayload)
		a.Kind = in.Kind
		list = append(list, a)
	}
	return list, nil
}

// Answer implements [Client].
func (d *DB) Answer(ctx context.Context, id string, resp runner.Response) (string, error) {
	body, err := json.Marshal(resp)
	if err != nil {
		return "", fmt.Errorf("encode answer: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	res, err := d.st.RequestAnswer(ctx, store.AnswerRequest{ID: uuid.NewString(), InputID: id, UserID: d.user.ID, Response: body})
	if err != nil {
		return "", err
	}
	if !res.OK {
		return "", errors.New(res.Message)
	}
	return res.Message, nil
}
