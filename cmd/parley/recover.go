package main

import (
	"context"
	"log/slog"
	"time"

	"parley/server"
	"parley/transcript"
)

// recoverLost reconciles the sessions whose runs went with a crashed Parley
// (server.RecoverLost): after server.New, which covers the takeover of
// Join, and after each later takeover (cluster.Node.OnTakenOver).
func recoverLost(ctx context.Context, srv *server.Server, rec *transcript.Reconciler, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := srv.RecoverLost(ctx, rec)
	if err != nil {
		log.Error("reconcile sessions after a crash", "err", err)
	}
	if n > 0 {
		log.Info("reconciled sessions whose runs ended with a stopped Parley", "sessions", n)
	}
}
