package main

import (
	"fmt"

	"parley/metrics"
)

// metricsLoopback reads PARLEY_METRICS_LOOPBACK: which clients on this
// machine may read /metrics without PARLEY_METRICS_TOKEN.
//   - "" or "own" (the default): processes of Parley's own uid and root.
//     A run connects from loopback like any local client, but as its
//     project's uid, so it is refused.
//   - "open": any loopback client, runs with their own uids included.
//   - "token": none (behind a same-host proxy that adds no forwarding
//     header); it needs the token.
func metricsLoopback(v, token string) (metrics.Loopback, error) {
	switch v {
	case "", "own":
		return metrics.LoopbackOwn, nil
	case "open":
		return metrics.LoopbackOpen, nil
	case "token":
		if token == "" {
			return 0, fmt.Errorf("PARLEY_METRICS_LOOPBACK=token needs PARLEY_METRICS_TOKEN")
		}
		return metrics.LoopbackToken, nil
	}
	return 0, fmt.Errorf("PARLEY_METRICS_LOOPBACK: %q is none of own, open and token", v)
}
