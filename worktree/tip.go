package worktree

import (
	"context"
	"strings"
)

// Tip is the commit branch of repo points at now.
func (g *Git) Tip(ctx context.Context, repo, branch string) (string, error) {
	out, err := g.run(ctx, repo, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return strings.TrimSpace(out), err
}
