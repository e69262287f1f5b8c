package peer

import (
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	const secret, path, ts = "secret-of-b", "/api/cluster/sync", int64(1_790_000_000)
	body := []byte(`{"source_node_id":2,"events":[]}`)
	sig := Sign(secret, ts, path, body)
	if len(sig) != 64 || sig != Sign(secret, ts, path, body) {
		t.Fatalf("Sign = %q: want 64 stable hex digits", sig)
	}
	// A vector computed apart (Python's hmac): HMAC-SHA256("key", "1\n/p\n").
	if got, want := Sign("key", 1, "/p", nil), "61ccfec3b956f0d1e65afe0050819399a7ea55be5323549301fd1db61be4dc2f"; got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	tests := []struct {
		name   string
		secret string
		ts     int64
		path   string
		body   string
		sig    string
		want   bool
	}{
		{"the signed request", secret, ts, path, string(body), sig, true},
		{"another key (the receiver's own secret)", "secret-of-a", ts, path, string(body), sig, false},
		{"another timestamp", secret, ts + 1, path, string(body), sig, false},
		{"another path", secret, ts, "/api/cluster/ping", string(body), sig, false},
		{"another body", secret, ts, path, `{"source_node_id":7,"events":[]}`, sig, false},
		{"upper case hex", secret, ts, path, string(body), upper(sig), false},
		{"no signature", secret, ts, path, string(body), "", false},
		{"no secret stored", "", ts, path, string(body), Sign("", ts, path, body), false},
		{"truncated", secret, ts, path, string(body), sig[:63], false},
	}
	for _, tt := range tests {
		if got := Verify(tt.secret, tt.ts, tt.path, []byte(tt.body), tt.sig); got != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestFresh(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	tests := []struct {
		ts   int64
		want bool
	}{
		{now.Unix(), true},
		{now.Unix() - 300, true},
		{now.Unix() + 300, true},
		{now.Unix() - 301, false},
		{now.Unix() + 301, false},
		{0, false},
	}
	for _, tt := range tests {
		if got := Fresh(tt.ts, now); got != tt.want {
			t.Errorf("Fresh(now%+d) = %v, want %v", tt.ts-now.Unix(), got, tt.want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1790000000", 1790000000, true},
		{"", 0, false},
		{"-5", 0, false},
		{"0", 0, false},
		{"1.5", 0, false},
		{"17900000000000000000000", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseTimestamp(tt.in)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("ParseTimestamp(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
