package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"

	"parley/sandbox"
	"parley/store"
)

// The uid range of an installation's runs. Every Parley once gave project
// N's runs uid 200000+N, so two installations on one host handed their
// runs each other's uids. Now an installation picks a random range the
// first time it starts, keeps it in its database (replicas share it), and
// refuses to start on a range something else on the machine uses.
const (
	keyUIDRange   = "uid_range"          // the range chosen for this installation
	keyUIDChecked = "uid_range_checked " // + a range: found free of others' files once
	uidRangeSize  = 100_000              // as the old default: project ids up to 99,999
	uidRangeAlign = 1 << 16              // ranges start on a 65536 boundary, as subuid blocks do
	uidRangeLow   = 1 << 20              // above the system's, the usual subuid ranges and DynamicUser's
	uidRangeHigh  = 1<<31 - 2            // sandbox.ParseRange's ceiling: some tools take uids as signed
)

// settleUIDRange returns the uid range runs get: PARLEY_UID_RANGE if set,
// else the installation's own. When Parley runs as root and confines runs,
// a range whose uids something else on the machine uses is refused.
func settleUIDRange(ctx context.Context, c config, st *store.Store, log *slog.Logger) (string, error) {
	return settleUIDRangeOn(ctx, c, st, systemScan(c.DataDir), log)
}

// settleUIDRangeOn is settleUIDRange on what scan looks at.
func settleUIDRangeOn(ctx context.Context, c config, st *store.Store, scan uidScan, log *slog.Logger) (string, error) {
	r := c.UIDRange
	if r == "" {
		proposed, err := randomUIDRange(scan)
		if err != nil {
			return "", err
		}
		if r, err = st.InstallationValue(ctx, keyUIDRange, proposed); err != nil {
			return "", err
		}
	}
	first, last, err := sandbox.ParseRange(r)
	if err != nil {
		return "", fmt.Errorf("PARLEY_UID_RANGE: %w", err)
	}
	if c.Isolation == "off" || os.Geteuid() != 0 {
		return r, nil // no run gets a uid of the range
	}
	checked, err := st.InstallationValue(ctx, keyUIDChecked+r, "")
	if err != nil {
		return "", err
	}
	// Files outside the data dir are looked at when the range is new to
	// the installation: later, the runs' own files (in /tmp, say) own
	// uids of it. A range set by hand may have been this installation's
	// before: its projects' uids are not held against it.
	scan.files = checked == ""
	if c.UIDRange != "" || checked != "" {
		// A range this installation has used (set by hand, or checked at
		// an earlier start): its own uids — FIRST, which the start-up check
		// runs as, and its projects' — are not held against it, so a
		// restart right after a crash is not refused over the dead
		// replica's runs that are still ending.
		maxID, err := st.MaxProjectID(ctx)
		if err != nil {
			return "", err
		}
		scan.ours = func(uid int) bool { return uid >= first && int64(uid-first) <= maxID }
	}
	if use := scan.inUse(first, last); use != "" {
		return "", fmt.Errorf("the uid range %s for runs is in use on this machine: %s. Set PARLEY_UID_RANGE to a range no user, process or file has (say %s), or end what uses it", r, use, suggestRange(scan))
	}
	if scan.files {
		if err := st.SetInstallationValue(ctx, keyUIDChecked+r, "checked"); err != nil {
			return "", err
		}
	}
	log.Info("uid range for runs", "uid_range", r, "from_env", c.UIDRange != "")
	return r, nil
}

// randomUIDRange picks a range at random among those that no user or
// group of the machine, and no subordinate id range, touches.
func randomUIDRange(scan uidScan) (string, error) {
	slots := (uidRangeHigh - uidRangeSize - uidRangeLow) / uidRangeAlign
	for range 64 {
		first := uidRangeLow + rand.IntN(slots)*uidRangeAlign
		if scan.accountsUse(first, first+uidRangeSize-1) == "" {
			return fmt.Sprintf("%d-%d", first, first+uidRangeSize-1), nil
		}
	}
	return "", fmt.Errorf("no free uid range for runs found in 64 tries: set PARLEY_UID_RANGE")
}

// suggestRange is a free range to name in a refusal, or "" with none.
func suggestRange(scan uidScan) string {
	r, err := randomUIDRange(scan)
	if err != nil {
		return "a range of 100000 uids above 1048576"
	}
	return r
}
