package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"parley/store"
)

// SendReset makes a single-use password-reset link for the account and
// mails it when SMTP is set up. A deactivated account gets none:
// reactivate it first.
func (s *Service) SendReset(ctx context.Context, userID int64, byID int64, base string) (Link, store.Account, error) {
	a, err := s.account(ctx, userID)
	if err != nil {
		return Link{}, a, err
	}
	if a.DeactivatedAt != nil {
		return Link{}, a, refuse(fmt.Sprintf("%s is deactivated: reactivate the account first.", a.Email))
	}
	token := newToken()
	l := store.AccountLink{TokenHash: TokenHash(token), Kind: store.LinkReset, Email: a.Email, UserID: &a.ID,
		ExpiresAt: time.Now().Add(s.opts.ResetTTL).Round(time.Second)}
	if byID != 0 {
		l.CreatedBy = &byID
	}
	if err := s.st.CreateAccountLink(ctx, l); err != nil {
		return Link{}, a, err
	}
	link := Link{URL: strings.TrimSuffix(base, "/") + "/reset/" + token, Expires: l.ExpiresAt}
	s.mailLink(ctx, &link, a.Email, "Reset your Parley password",
		fmt.Sprintf("An admin of Parley sent you a link to set a new password (it works once, until %s):\n\n%s\n\nSetting it signs you out everywhere. If you did not ask for this, tell your admin.\n",
			link.Expires.UTC().Format("2006-01-02 15:04 UTC"), link.URL))
	return link, a, nil
}

// Reset sets a new password with the reset link's token; every sign-in
// of the account ends.
func (s *Service) Reset(ctx context.Context, token, password string) (store.User, error) {
	if _, err := s.CheckLink(ctx, store.LinkReset, token); err != nil {
		return store.User{}, err
	}
	hash, err := s.pw.Hash(password)
	if err != nil {
		return store.User{}, refuse(sentence(err))
	}
	u, err := s.st.UseResetLink(ctx, TokenHash(token), hash)
	return u, linkRefusal(store.LinkReset, err)
}

// ChangePassword sets the user's password when current is their present
// one; every sign-in of theirs ends (store.SetPassword), the caller signs
// this browser in again.
func (s *Service) ChangePassword(ctx context.Context, userID int64, current, next string) error {
	u, err := s.st.UserByID(ctx, userID)
	if err != nil {
		return err
	}
	if !s.pw.Match(u.PasswordHash, current) {
		return refuse("Your current password is not right: type it again.")
	}
	hash, err := s.pw.Hash(next)
	if err != nil {
		return refuse(sentence(err))
	}
	return s.st.SetPassword(ctx, userID, hash)
}

// Rename sets the name the user is shown by.
func (s *Service) Rename(ctx context.Context, userID int64, name string) error {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 100 || strings.ContainsAny(name, "\r\n") {
		return refuse("Give your name, 1 to 100 characters on one line.")
	}
	return s.st.SetUserName(ctx, userID, name)
}

// SetActive deactivates (active false) or reactivates an account. An
// admin cannot deactivate themselves: someone must be left to undo it.
func (s *Service) SetActive(ctx context.Context, actorID, userID int64, active bool) (store.Account, error) {
	a, err := s.account(ctx, userID)
	if err != nil {
		return a, err
	}
	if !active && userID == actorID {
		return a, refuse("You cannot deactivate your own account: ask another admin.")
	}
	return a, s.st.SetDeactivated(ctx, userID, !active)
}

// SetAdmin makes the account an admin or not. An admin cannot unmake
// themselves, so there is always one left.
func (s *Service) SetAdmin(ctx context.Context, actorID, userID int64, admin bool) (store.Account, error) {
	a, err := s.account(ctx, userID)
	if err != nil {
		return a, err
	}
	if !admin && userID == actorID {
		return a, refuse("You cannot take away your own admin rights: ask another admin.")
	}
	return a, s.st.SetAdmin(ctx, userID, admin)
}

// account loads the account, or a Refusal when there is none.
func (s *Service) account(ctx context.Context, userID int64) (store.Account, error) {
	a, err := s.st.AccountByID(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return a, refuse("There is no such account: reload the page.")
	}
	return a, err
}
