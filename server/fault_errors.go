package server

import (
	"errors"
	"net/http"
	"syscall"

	"parley/runner"
	"parley/store"
)

// errAnswerNotSaved is what a person sees when the database could not
// take their answer: it is away, and the answer is not kept anywhere.
var errAnswerNotSaved = &httpError{http.StatusServiceUnavailable,
	"The database is not reachable; your answer was not saved. Try again in a moment."}

// msgDatabaseAway is what a request that met the database away says.
const msgDatabaseAway = "Parley cannot reach its database right now; try again in a moment."

// databaseAway reports whether err means the database could not take the
// operation now (it is stopped, restarting or out of reach).
func databaseAway(err error) bool {
	return err != nil && (errors.Is(err, runner.ErrUnavailable) || store.Unavailable(err))
}

// answerNotSaved turns an error that means the database is away into
// errAnswerNotSaved; any other error is returned as it is.
func answerNotSaved(err error) error {
	if databaseAway(err) {
		return errAnswerNotSaved
	}
	return err
}

// refuseNoRoom is the refusal of a new session whose first run could not
// write its files (err from Supervisor.CheckRunFiles): no session is made.
func (s *Server) refuseNoRoom(err error) error {
	s.log.Error("new session refused: a run's files cannot be written", "err", err)
	why := "its data directory cannot be written"
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		why = "there is no space left in its data directory"
	}
	return &httpError{http.StatusServiceUnavailable, "Parley cannot start Claude for a new session: " + why +
		". No session was made; ask your admin to free space in Parley's data directory, then try again."}
}
