package smtptest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
)

// Mail is one message the server received.
type Mail struct {
	From    string   // the envelope sender (MAIL FROM)
	To      []string // the envelope recipients (RCPT TO)
	Header  netmail.Header
	Subject string // decoded (RFC 2047)
	Text    string // the text/plain part, decoded
	HTML    string // the text/html part, decoded
	Raw     []byte // the message as sent (DATA)
}

// parse reads a message's headers and its text and HTML parts, through
// any nesting of multipart/* and either transfer encoding.
func parse(raw []byte) (Mail, error) {
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Mail{}, fmt.Errorf("read message: %w", err)
	}
	m := Mail{Header: msg.Header, Raw: raw}
	var dec mime.WordDecoder
	if m.Subject, err = dec.DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return Mail{}, fmt.Errorf("decode subject: %w", err)
	}
	ct := msg.Header.Get("Content-Type")
	if ct == "" {
		ct = "text/plain"
	}
	if err := m.walk(ct, msg.Header.Get("Content-Transfer-Encoding"), msg.Body); err != nil {
		return Mail{}, err
	}
	return m, nil
}

// walk stores a text/plain or text/html part, or descends into a multipart.
func (m *Mail) walk(contentType, encoding string, body io.Reader) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			// NextRawPart: the transfer encoding is decoded here, for
			// every part alike (NextPart would decode quoted-printable only).
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return fmt.Errorf("multipart: %w", err)
			}
			if err := m.walk(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); err != nil {
				return err
			}
		}
	}
	b, err := io.ReadAll(decoder(encoding, body))
	if err != nil {
		return fmt.Errorf("%s part (%s): %w", mt, encoding, err)
	}
	switch mt {
	case "text/plain":
		m.Text = string(b)
	case "text/html":
		m.HTML = string(b)
	}
	return nil
}

func decoder(encoding string, r io.Reader) io.Reader {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		return quotedprintable.NewReader(r)
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, &stripCRLF{r: r})
	}
	return r
}

// stripCRLF drops the line breaks of a base64 body.
type stripCRLF struct{ r io.Reader }

func (s *stripCRLF) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	j := 0
	for _, c := range p[:n] {
		if c != '\r' && c != '\n' {
			p[j] = c
			j++
		}
	}
	return j, err
}
