package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"parley/store"
)

// SignIn finds the person's account, linking it by e-mail or making it
// the first time (it has no password: it signs in through the provider),
// and gives it what their groups grant. It returns the account as it now
// is and the grants in the form refresh.go compares.
func (p *Provider) SignIn(ctx context.Context, id Identity) (store.User, string, error) {
	u, err := p.account(ctx, id)
	if err != nil {
		return store.User{}, "", err
	}
	if p.Deactivated != nil {
		off, err := p.Deactivated(ctx, u.ID)
		if err != nil {
			return store.User{}, "", err
		}
		if off {
			return store.User{}, "", refused("account deactivated", "Your Parley account is deactivated: ask an admin to reactivate it.")
		}
	}
	g, granted := p.grants(ctx, id.Groups)
	if err := p.sync(ctx, u, id.Email, g); err != nil {
		return store.User{}, "", err
	}
	u, err = p.st.OIDCUser(ctx, id.Issuer, id.Subject) // the admin flag may have changed
	return u, granted, err
}

// account is the account linked to the person, else the one with their
// e-mail (linked now), else a new one.
func (p *Provider) account(ctx context.Context, id Identity) (store.User, error) {
	u, err := p.st.OIDCUser(ctx, id.Issuer, id.Subject)
	if !errors.Is(err, store.ErrNotFound) {
		return u, err
	}
	u, err = p.st.UserByEmail(ctx, id.Email)
	if errors.Is(err, store.ErrNotFound) {
		u, err = p.st.CreateUser(ctx, id.Email, id.Name, "", false)
		if errors.Is(err, store.ErrExists) { // made at this moment by a concurrent sign-in
			u, err = p.st.UserByEmail(ctx, id.Email)
		}
	}
	if err != nil {
		return store.User{}, err
	}
	err = p.st.LinkOIDC(ctx, u.ID, id.Issuer, id.Subject)
	if errors.Is(err, store.ErrExists) {
		return store.User{}, refused("account linked to another person", fmt.Sprintf("The Parley account of %s is linked to another person at the sign-in provider: ask an admin.", id.Email))
	}
	return u, err
}

// grants is what the groups give: the admin flag when an admin group is
// set, a role in each project the mapping names ("" = none), and the
// same as a sorted list ("admin", "p3:member") for refresh.go.
func (p *Provider) grants(ctx context.Context, groups []string) (store.OIDCGrants, string) {
	var g store.OIDCGrants
	var list []string
	if p.cfg.AdminGroup != "" {
		admin := slices.Contains(groups, p.cfg.AdminGroup)
		g.Admin = &admin
		if admin {
			list = append(list, "admin")
		}
	}
	g.Roles = map[int64]string{}
	for _, m := range p.cfg.Grants {
		pid, err := p.projectID(ctx, m.Project)
		if err != nil {
			p.log.Warn("PARLEY_OIDC_PROJECT_ROLES names a project Parley cannot find", "project", m.Project, "err", err)
			continue
		}
		if slices.Contains(groups, m.Group) && rank(m.Role) > rank(g.Roles[pid]) {
			g.Roles[pid] = m.Role
		} else if _, ok := g.Roles[pid]; !ok {
			g.Roles[pid] = ""
		}
	}
	for pid, role := range g.Roles {
		if role != "" {
			list = append(list, fmt.Sprintf("p%d:%s", pid, role))
		}
	}
	slices.Sort(list)
	return g, strings.Join(list, " ")
}

func (p *Provider) projectID(ctx context.Context, ref string) (int64, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		_, err := p.st.GetProject(ctx, id)
		return id, err
	}
	return p.st.ProjectIDByName(ctx, ref)
}

func rank(role string) int {
	return map[string]int{"viewer": 1, "member": 2, "owner": 3}[role]
}

// lost reports whether now grants less than before: the admin flag gone,
// or a project's role gone or lowered.
func lost(before, now string) bool {
	have := map[string]int{}
	for _, g := range strings.Fields(now) {
		k, role, _ := strings.Cut(g, ":")
		have[k] = max(rank(role), 1)
	}
	for _, g := range strings.Fields(before) {
		k, role, _ := strings.Cut(g, ":")
		if have[k] < max(rank(role), 1) {
			return true
		}
	}
	return false
}
