package oidclogin

import (
	"context"

	"parley/audit"
	"parley/store"
)

// sync applies what the groups grant and records each change in the
// audit trail, as the system acting on the provider's groups. A failed
// audit write is logged and does not undo the change (as everywhere in
// Parley).
func (p *Provider) sync(ctx context.Context, u store.User, email string, g store.OIDCGrants) error {
	changes, err := p.st.SyncOIDCGrants(ctx, u.ID, g)
	if err != nil {
		return err
	}
	for _, c := range changes {
		e := audit.Entry{ActorName: "groups at " + p.cfg.Name, Surface: audit.System, Target: email,
			Detail: map[string]any{"user_id": u.ID, "method": "oidc"}}
		switch {
		case c.Admin != nil:
			e.Action, e.Detail["admin"] = audit.AdminChange, *c.Admin
		case c.Before == "":
			e.Action, e.ProjectID, e.Detail["role"] = audit.MemberAdd, c.ProjectID, c.Role
		case c.Role == "":
			e.Action, e.ProjectID = audit.MemberRemove, c.ProjectID
		default:
			e.Action, e.ProjectID, e.Detail["role"] = audit.RoleChange, c.ProjectID, c.Role
		}
		if err := audit.New(p.st).Record(ctx, e); err != nil {
			p.log.Error("audit trail: the change went ahead unrecorded", "action", e.Action, "err", err)
		}
	}
	return nil
}
