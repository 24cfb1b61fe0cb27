package accounts

import (
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"parley/store"
)

// Invitation is who is invited, as what, by whom.
type Invitation struct {
	Email     string
	Admin     bool   // the account is made an admin
	ProjectID int64  // 0 = no project; else the account joins it with Role
	Role      string // owner, member or viewer
	By        int64  // the inviting user
	ByName    string // shown in the mail
}

// Invite makes a single-use invitation that expires after the invite
// lifetime, and mails it when SMTP is set up. base is the site's URL
// ("https://parley.example.com"). An email that has an account already is
// refused: add them to a project instead.
func (s *Service) Invite(ctx context.Context, inv Invitation, base string) (Link, error) {
	email, err := checkEmail(inv.Email)
	if err != nil {
		return Link{}, err
	}
	if _, err := s.st.UserByEmail(ctx, email); err == nil {
		return Link{}, refuse(fmt.Sprintf("%s has an account already: add them to a project, or send them a password reset.", email))
	} else if !errors.Is(err, store.ErrNotFound) {
		return Link{}, err
	}
	token := newToken()
	l := store.AccountLink{TokenHash: TokenHash(token), Kind: store.LinkInvite, Email: email, Admin: inv.Admin,
		ExpiresAt: time.Now().Add(s.opts.InviteTTL).Round(time.Second)}
	if inv.By != 0 {
		l.CreatedBy = &inv.By
	}
	if inv.ProjectID != 0 {
		l.ProjectID, l.Role = &inv.ProjectID, &inv.Role
	}
	if err := s.st.CreateAccountLink(ctx, l); err != nil {
		return Link{}, err
	}
	link := Link{URL: strings.TrimSuffix(base, "/") + "/invite/" + token, Expires: l.ExpiresAt}
	s.mailLink(ctx, &link, email, "You are invited to Parley",
		fmt.Sprintf("%s invites you to Parley, the team chat for Claude Code.\n\nOpen this link to choose your name and password (it works once, until %s):\n\n%s\n\nIf you did not expect this, ignore this mail.\n",
			orSomeone(inv.ByName), link.Expires.UTC().Format("2006-01-02 15:04 UTC"), link.URL))
	return link, nil
}

// Accept uses the invitation with token: the account is made with name
// and password, in the invitation's project if it names one.
func (s *Service) Accept(ctx context.Context, token, name, password string) (store.User, store.AccountLink, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 100 || strings.ContainsAny(name, "\r\n") {
		return store.User{}, store.AccountLink{}, refuse("Give your name, 1 to 100 characters on one line: it is how your team sees you.")
	}
	if _, err := s.CheckLink(ctx, store.LinkInvite, token); err != nil {
		return store.User{}, store.AccountLink{}, err // before the slow hash
	}
	hash, err := s.pw.Hash(password)
	if err != nil {
		return store.User{}, store.AccountLink{}, refuse(sentence(err))
	}
	u, l, err := s.st.AcceptInvite(ctx, TokenHash(token), name, hash)
	if errors.Is(err, store.ErrExists) {
		return store.User{}, l, refuse(fmt.Sprintf("%s has an account already: sign in instead.", l.Email))
	}
	return u, l, linkRefusal(store.LinkInvite, err)
}

// checkEmail returns the bare address of s, or a Refusal.
func checkEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := netmail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", refuse("Give one e-mail address, such as ann@example.com.")
	}
	return s, nil
}

func orSomeone(name string) string {
	if name == "" {
		return "Someone"
	}
	return name
}

// sentence makes an error of the password rules a sentence.
func sentence(err error) string {
	m := err.Error()
	if m == "" {
		return m
	}
	return strings.ToUpper(m[:1]) + m[1:] + "."
}
