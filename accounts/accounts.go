// Package accounts is Parley's administration of people: invitations and
// password resets (single-use links that expire, shown to copy and e-mailed
// when SMTP is set up), deactivation, the admin flag, and a person's own
// name and password. The HTTP handlers (package server) are thin over it.
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"parley/reach/mail"
	"parley/store"
)

// Default lifetimes of the links.
const (
	DefaultInviteTTL = 7 * 24 * time.Hour
	DefaultResetTTL  = 24 * time.Hour
)

// Passwords hashes new passwords (checking the rules) and checks given
// ones: the server's bcrypt, one definition for the CLI and the pages.
type Passwords struct {
	Hash  func(pw string) (string, error)
	Match func(hash, pw string) bool
}

// Options are the Service's settings; the zero value shows links without
// mailing them, with the default lifetimes.
type Options struct {
	Mail      *mail.Config // nil: no e-mail, links are only shown
	InviteTTL time.Duration
	ResetTTL  time.Duration
}

// Service administers accounts in the store.
type Service struct {
	st   *store.Store
	pw   Passwords
	opts Options
}

// New returns a Service over st.
func New(st *store.Store, pw Passwords, o Options) *Service {
	if o.InviteTTL <= 0 {
		o.InviteTTL = DefaultInviteTTL
	}
	if o.ResetTTL <= 0 {
		o.ResetTTL = DefaultResetTTL
	}
	return &Service{st: st, pw: pw, opts: o}
}

// Refusal is a request refused for a reason the person can fix: Msg is
// the sentence they see. Gone says a link was used or has expired.
type Refusal struct {
	Msg  string
	Gone bool
}

func (r *Refusal) Error() string { return r.Msg }

func refuse(msg string) error { return &Refusal{Msg: msg} }

// Link is a link made for one person: its token goes in URL, shown once.
type Link struct {
	URL     string
	Expires time.Time
	// Mailed says it was e-mailed; MailErr why it could not be (the link
	// is shown to copy either way).
	Mailed  bool
	MailErr error
}

// TokenHash is the SHA-256 of a link's token: all that is stored.
func TokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: since Go 1.24 it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}

// CheckLink returns the link of kind (store.LinkInvite, store.LinkReset)
// with token if it still works, else a Refusal that says why.
func (s *Service) CheckLink(ctx context.Context, kind, token string) (store.AccountLink, error) {
	l, err := s.st.AccountLinkByToken(ctx, kind, TokenHash(token))
	return l, linkRefusal(kind, err)
}

// linkRefusal turns a link's store error into the sentence its holder sees.
func linkRefusal(kind string, err error) error {
	what := "invitation"
	if kind == store.LinkReset {
		what = "password-reset link"
	}
	switch {
	case errors.Is(err, store.ErrLinkUsed):
		return &Refusal{Msg: fmt.Sprintf("This %s has been used already: each works once. Sign in, or ask an admin for a new one.", what), Gone: true}
	case errors.Is(err, store.ErrLinkExpired):
		return &Refusal{Msg: fmt.Sprintf("This %s has expired: ask an admin for a new one.", what), Gone: true}
	case errors.Is(err, store.ErrNotFound):
		return &Refusal{Msg: fmt.Sprintf("This %s is not known: check that the whole link was copied, or ask an admin for a new one.", what), Gone: true}
	}
	return err
}

// mailLink e-mails a link when SMTP is set up, noting the outcome in l.
func (s *Service) mailLink(ctx context.Context, l *Link, to, subject, text string) {
	if s.opts.Mail == nil {
		return
	}
	l.MailErr = sendText(ctx, *s.opts.Mail, to, subject, text)
	l.Mailed = l.MailErr == nil
}

// CanMail says whether links are e-mailed.
func (s *Service) CanMail() bool { return s.opts.Mail != nil }
