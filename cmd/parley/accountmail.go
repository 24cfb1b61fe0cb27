package main

import (
	"strings"

	"parley/reach/mail"
)

// accountMail is how invitation and password-reset links are sent: the
// SMTP server of PARLEY_SMTP_URL (nil without one, or with one checkReach
// refused already), and PARLEY_PUBLIC_URL as the links' base ("" = the
// host the admin's request came to).
func accountMail(c reachConfig) (*mail.Config, string) {
	var mc *mail.Config
	if c.SMTPURL != "" {
		if m, err := mailConfig(c.SMTPURL); err == nil {
			mc = &m
		}
	}
	return mc, strings.TrimRight(c.PublicURL, "/")
}
