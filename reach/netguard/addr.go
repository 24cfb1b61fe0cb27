package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrRefused is wrapped by every refusal of this package: CheckURL's and
// Client's.
var ErrRefused = errors.New("refused by netguard")

// ErrNotPublic is wrapped by every refusal of an address that is not
// public (loopback, private, link-local, ...), from CheckURL or at connect.
var ErrNotPublic = errors.New("not a public address")

// refusedError is a refusal other than an address: its message is the
// sentence to show.
type refusedError string

func (e refusedError) Error() string        { return string(e) }
func (e refusedError) Is(target error) bool { return target == ErrRefused }

func refused(format string, args ...any) error {
	return refusedError(fmt.Sprintf(format, args...))
}

// notPublicError says which address was refused and what kind it is.
type notPublicError struct {
	host    string // as given: a name or an address
	what    string // "loopback", "private", ...
	connect bool   // refused when connecting, not in the URL
}

func (e *notPublicError) Error() string {
	article := "a"
	if strings.ContainsAny(e.what[:1], "aeiou") {
		article = "an"
	}
	if e.connect {
		return fmt.Sprintf("Parley refused to connect to %s: it is %s %s address, not a public one "+
			"(a service of your own can be allowed in PARLEY_PUSH_HOSTS).", e.host, article, e.what)
	}
	return fmt.Sprintf("The URL must be on a public address: %s is %s %s address "+
		"(a service of your own can be allowed in PARLEY_PUSH_HOSTS).", e.host, article, e.what)
}

func (e *notPublicError) Is(target error) bool {
	return target == ErrNotPublic || target == ErrRefused
}

// reserved are the ranges that are neither public nor covered by netip's
// predicates.
var reserved = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"}, // RFC 6598
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved"},           // "this network"
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},        // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved"},        // documentation
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},       // benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved"},     // documentation
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved"},      // documentation
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},         // future use, broadcast
	{netip.MustParsePrefix("::/96"), "reserved"},               // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("100::/64"), "reserved"},            // discard-only
	{netip.MustParsePrefix("2001:db8::/32"), "reserved"},       // documentation
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved"},      // local-use NAT64
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the last 32 bits are an IPv4 address
	sixToIV = netip.MustParsePrefix("2002::/16")    // RFC 3056: bits 16-47 are an IPv4 address
)

// nonPublic says what kind of non-public address a is, or "" if it is
// public. An IPv4 address inside an IPv6 one (mapped, NAT64, 6to4) is
// judged as that IPv4 address.
func nonPublic(a netip.Addr) string {
	a = a.Unmap()
	switch b := a.As16(); {
	case nat64.Contains(a):
		a = netip.AddrFrom4([4]byte(b[12:16]))
	case sixToIV.Contains(a):
		a = netip.AddrFrom4([4]byte(b[2:6]))
	}
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	}
	for _, r := range reserved {
		if r.prefix.Contains(a) {
			return r.what
		}
	}
	return ""
}
