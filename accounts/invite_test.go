package accounts

import (
	"errors"
	"testing"
)

// TestCheckEmail: an invitation names exactly one bare address.
func TestCheckEmail(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"ann@example.com", "ann@example.com", true},
		{"  ann@example.com ", "ann@example.com", true},
		{"Ann <ann@example.com>", "", false},
		{"ann@example.com, bob@example.com", "", false},
		{"ann@example.com\r\nBcc: eve@example.com", "", false},
		{"not an address", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, err := checkEmail(tt.in)
		var rf *Refusal
		if tt.ok && (err != nil || got != tt.want) || !tt.ok && !errors.As(err, &rf) {
			t.Errorf("checkEmail(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
