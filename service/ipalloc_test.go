package service

import (
	"net/netip"
	"testing"
)

// TestRangeArithmetic: the usable addresses of a range (no network address, no IPv4
// broadcast), KEP-3070's offset, and address arithmetic across byte boundaries.
func TestRangeArithmetic(t *testing.T) {
	for _, tc := range []struct {
		prefix      string
		first, last string
		offset      uint64
	}{
		{"10.96.0.0/26", "10.96.0.1", "10.96.0.62", 16},
		{"10.0.0.0/24", "10.0.0.1", "10.0.0.254", 16},
		{"10.0.0.0/28", "10.0.0.1", "10.0.0.14", 0},
		{"10.0.0.0/16", "10.0.0.1", "10.0.255.254", 256},
		{"10.0.0.0/22", "10.0.0.1", "10.0.3.254", 64},
		{"fd00::/120", "fd00::1", "fd00::ff", 16},
		{"fd00::/64", "fd00::1", "fd00::ffff:ffff:ffff:ffff", 256},
	} {
		p := netip.MustParsePrefix(tc.prefix)
		first, last := usable(p)
		if first.String() != tc.first || last.String() != tc.last || rangeOffset(p) != tc.offset {
			t.Errorf("%s: usable %s-%s offset %d, want %s-%s %d", tc.prefix, first, last, rangeOffset(p), tc.first, tc.last, tc.offset)
		}
	}
	if got := add(netip.MustParseAddr("10.0.0.250"), 10); got.String() != "10.0.1.4" {
		t.Errorf("10.0.0.250+10 = %s", got)
	}
	if got := add(netip.MustParseAddr("fd00::ffff:ffff:ffff:ffff"), 1); got.String() != "fd00:0:0:1::" {
		t.Errorf("carry into the high half = %s", got)
	}
	if n := span(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.254")); n != 254 {
		t.Errorf("span = %d, want 254", n)
	}
	if n := span(netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::ffff:ffff:ffff:ffff")); n != 1<<63 {
		t.Errorf("a /64's span = %d, want capped at 2^63", n)
	}
}
