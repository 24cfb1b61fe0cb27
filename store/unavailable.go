package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means Postgres could not take the
// operation right now (it is stopped, restarting, unreachable, or did not
// answer in time), so the same operation may succeed later. Any other error
// is a refusal: Postgres answered and said no (a data error of SQLSTATE
// class 22, a constraint of class 23, …), and retrying would get the same
// answer.
//
// A timed-out or cut-off operation may still have committed: a caller that
// retries must first find out whether it did.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return unavailableCode(pe.Code)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err), pgconn.SafeToRetry(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ENOENT):
		return true
	}
	// pgx reports a connection that died under a query in words only.
	msg := err.Error()
	for _, s := range []string{"conn closed", "conn busy", "connection reset", "broken pipe", "unexpected EOF",
		"failed to deallocate", "failed to connect", "connection refused"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// unavailableCode says which SQLSTATEs mean "not now" rather than "no":
// connection exceptions (class 08), the server shutting down or starting
// (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now),
// insufficient resources (class 53: too many connections, disk full) and
// serialization failures or deadlocks (40001, 40P01), which the server
// itself says to retry.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
		return true
	case code == "57P01", code == "57P02", code == "57P03", code == "40001", code == "40P01":
		return true
	}
	return false
}
