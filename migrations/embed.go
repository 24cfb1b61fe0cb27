// Package migrations holds Parley's golang-migrate SQL files, embedded into the binary.
package migrations

import "embed"

// FS holds the numbered up/down migration pairs, applied at startup by store.Migrate.
//
//go:embed *.sql
var FS embed.FS
