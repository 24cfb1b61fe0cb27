package cluster

import (
	"context"
	"errors"

	"parley/runner"
)

// Switch switches the session's model or permission mode on whichever
// replica runs it (runner.Supervisor.Switch: a control request to the live
// process). With no replica owning the session nothing runs it, and the
// switch is recorded here for its next start.
func (n *Node) Switch(ctx context.Context, projectID int64, sessionID string, sw runner.Switch) error {
	req := request{Switch: &sw, ProjectID: projectID}
	err := n.route(ctx, sessionID, false, kindSwitch, req, func() error {
		return n.Supervisor.Switch(ctx, projectID, sessionID, sw)
	})
	if errors.Is(err, runner.ErrRunEnded) {
		return n.Supervisor.Switch(ctx, projectID, sessionID, sw)
	}
	return err
}

// serveSwitch makes a switch forwarded by another replica.
func (n *Node) serveSwitch(ctx context.Context, sessionID string, req request) error {
	if req.Switch == nil {
		return errors.New("a switch request with no switch")
	}
	return n.Supervisor.Switch(ctx, req.ProjectID, sessionID, *req.Switch)
}
