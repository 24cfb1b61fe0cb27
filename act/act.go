// Package act is what a user may do to a session, whichever surface asks
// (the pages, the MCP tools): create one, prompt it within the limits,
// answer its asks, stop its turn. Every act checks the user's role in the
// session's project first, with the checks and the sentences of the pages.
package act

import (
	"context"
	"errors"

	"parley/runner"
	"parley/store"
)

// Actor is the user who acts.
type Actor struct {
	ID    int64
	Name  string
	Admin bool // an admin may act in every project, member or not
}

// Author is the actor as a run names who sent its work.
func (a Actor) Author() runner.Author { return runner.Author{Name: a.Name, ID: a.ID} }

// Action is what an actor wants to do, for the role check.
type Action int

// The actions a role allows: a viewer may View; a member may also Prompt,
// Answer and Stop.
const (
	View Action = iota
	Prompt
	Answer
	Stop
)

// RoleOwner is the role of a project's owners, as Access returns it.
const RoleOwner = "owner"

// ErrNotFound is the refusal of a session or project that does not exist or
// that the actor may not see (the two are not told apart). Errors of a
// Service match it with errors.Is.
var ErrNotFound = errors.New("no such session or project, or no access to it")

// Refusal is an error whose text is for the actor: a sentence that says what
// went wrong and what to do. Find it with errors.As.
type Refusal interface {
	error
	Refusal() string
}

// Service acts on sessions. Each method checks the actor's role first.
type Service interface {
	// Access checks that a may do what in the project and returns a's
	// role there ("" for an admin who is not a member).
	Access(ctx context.Context, a Actor, projectID int64, what Action) (string, error)
	// Session loads the session id if a may do what in its project.
	Session(ctx context.Context, a Actor, id string, what Action) (store.Session, error)
	// CheckText trims a prompt and refuses an empty or oversized one.
	CheckText(text string) (string, error)
	// Create makes a session of p by a, with its own Claude options if
	// opts is not nil, and sends it text as its first prompt.
	Create(ctx context.Context, a Actor, p store.Project, text string, opts *store.SessionOptions) (store.Session, error)
	// Prompt sends text to the session id within the limits: the prompt
	// rate, the spending limits, the project's disk quota, not archived.
	Prompt(ctx context.Context, a Actor, id, text string) (store.Session, error)
	// Answer resolves the ask inputID of the session id with resp, once.
	Answer(ctx context.Context, a Actor, id, inputID string, resp runner.Response) error
	// Stop interrupts the session's turn.
	Stop(ctx context.Context, a Actor, id string) error
	// WhyClosed explains why the ask inputID cannot be answered.
	WhyClosed(ctx context.Context, sessionID, inputID string) error
}
