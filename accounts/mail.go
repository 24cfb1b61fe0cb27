package accounts

import (
	"context"

	"parley/reach/mail"
)

// sendText mails a plain-text message to one address through the SMTP
// server of c (PARLEY_SMTP_URL), with reach/mail's client: the same TLS
// modes, timeout and refusal of an address with a line break.
func sendText(ctx context.Context, c mail.Config, to, subject, text string) error {
	return mail.SendText(ctx, c, to, subject, text)
}
