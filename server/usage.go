package server

import (
	"context"

	"parley/gateway"
	"parley/store"
)

// NewUsageSink returns the gateway's sink that stores usage per project.
func NewUsageSink(st *store.Store) gateway.UsageSink { return usageSink{st} }

type usageSink struct{ st *store.Store }

func (u usageSink) AddUsage(ctx context.Context, projectID int64, g gateway.Usage) error {
	return u.st.AddUsage(ctx, projectID, store.Usage{Requests: g.Requests, InputTokens: g.InputTokens,
		OutputTokens: g.OutputTokens, Limited: g.Limited})
}
