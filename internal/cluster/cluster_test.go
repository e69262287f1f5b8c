package cluster

import (
	"strings"
	"testing"
)

func TestNodeCheck(t *testing.T) {
	ok := Node{NodeID: 7, Name: "n7", Address: "https://n7.example.com", Secret: "s"}
	cases := []struct {
		name string
		edit func(n *Node)
		want string
	}{
		{"valid", func(n *Node) {}, ""},
		{"valid http with port and path", func(n *Node) { n.Address = "http://10.0.0.7:3000/gw" }, ""},
		{"node id 0", func(n *Node) { n.NodeID = 0 }, MsgNodeIDRange},
		{"node id 50", func(n *Node) { n.NodeID = 50 }, MsgNodeIDRange},
		{"node id negative", func(n *Node) { n.NodeID = -1 }, MsgNodeIDRange},
		{"node id 49", func(n *Node) { n.NodeID = 49 }, ""},
		{"empty name", func(n *Node) { n.Name = "" }, MsgNameRequired},
		{"name with NUL", func(n *Node) { n.Name = "a\x00b" }, "节点名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"name invalid UTF-8", func(n *Node) { n.Name = "a\xffb" }, "节点名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"name too long", func(n *Node) { n.Name = strings.Repeat("名", 65) }, "节点名称 不能超过 64 个字符"},
		{"no scheme", func(n *Node) { n.Address = "n7.example.com:3000" }, MsgAddressInvalid},
		{"ftp", func(n *Node) { n.Address = "ftp://n7" }, MsgAddressInvalid},
		{"no host", func(n *Node) { n.Address = "http://" }, MsgAddressInvalid},
		{"port only", func(n *Node) { n.Address = "http://:80" }, MsgAddressInvalid},
		{"user info", func(n *Node) { n.Address = "https://u:p@n7" }, MsgAddressInvalid},
		{"query", func(n *Node) { n.Address = "https://n7/?a=1" }, MsgAddressInvalid},
		{"fragment", func(n *Node) { n.Address = "https://n7/#x" }, MsgAddressInvalid},
		{"empty address", func(n *Node) { n.Address = "" }, MsgAddressInvalid},
		{"address NUL", func(n *Node) { n.Address = "https://n7\x00" }, "节点地址 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"address too long", func(n *Node) { n.Address = "https://" + strings.Repeat("a", 250) }, "节点地址 不能超过 255 个字符"},
		{"empty secret", func(n *Node) { n.Secret = "" }, MsgSecretRequired},
		{"secret NUL", func(n *Node) { n.Secret = "s\x00" }, "节点密钥 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
	}
	for _, c := range cases {
		n := ok
		c.edit(&n)
		if got := n.Normalize().Check(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	got := Node{Name: "  n1 ", Address: " https://n1.example.com/ ", Secret: " s "}.Normalize()
	want := Node{Name: "n1", Address: "https://n1.example.com", Secret: " s "}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if u := PingURL("https://n1/gw/"); u != "https://n1/gw/api/cluster/ping" {
		t.Fatalf("PingURL = %q", u)
	}
}

func TestHealth(t *testing.T) {
	const max = 3
	cases := []struct {
		name string
		from Health
		ok   bool
		want Health
	}{
		{"success resets", Health{StatusFailed, 9, 5}, true, Health{StatusAlive, 0, 100}},
		{"first failure of a new record", Health{0, 0, 0}, false, Health{StatusAlive, 1, 0}},
		{"failure under threshold stays alive", Health{StatusAlive, 1, 5}, false, Health{StatusAlive, 2, 5}},
		{"failure at threshold fails", Health{StatusAlive, 2, 5}, false, Health{StatusFailed, 3, 5}},
		{"failure past threshold stays failed", Health{StatusFailed, 3, 5}, false, Health{StatusFailed, 4, 5}},
		{"count is capped", Health{StatusFailed, max + 1_000_000, 5}, false, Health{StatusFailed, max + 1_000_000, 5}},
	}
	for _, c := range cases {
		var got Health
		if c.ok {
			got = c.from.Succeeded(100)
		} else {
			got = c.from.Failed(max)
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	// With a threshold of 1 the first failure fails the peer.
	if got := (Health{StatusAlive, 0, 0}).Failed(1); got.Status != StatusFailed {
		t.Errorf("threshold 1: got %+v", got)
	}
}

func TestDueInRound(t *testing.T) {
	cases := []struct {
		status int
		round  int64
		want   bool
	}{
		{StatusAlive, 0, true}, {StatusAlive, 3, true}, {0, 7, true},
		{StatusFailed, 0, true}, {StatusFailed, 1, false}, {StatusFailed, 4, false}, {StatusFailed, 5, true}, {StatusFailed, 10, true},
	}
	for _, c := range cases {
		if got := DueInRound(c.status, c.round); got != c.want {
			t.Errorf("DueInRound(%d, %d) = %v, want %v", c.status, c.round, got, c.want)
		}
	}
}

func TestUnknown(t *testing.T) {
	listed := []Listed{
		{1, "self", "http://n1"},          // this node
		{2, "known", "http://n2"},         // known
		{3, "n3", "http://n3/"},           // new (normalized)
		{3, "n3 again", "http://other"},   // duplicate node id
		{4, "", "http://n4"},              // no name
		{5, "n5", "n5:3000"},              // no scheme
		{50, "n50", "http://n50"},         // out of range
		{6, "n6\x00", "http://n6"},        // NUL
		{7, " n7 ", "https://n7.example"}, // new
	}
	got := Unknown(1, map[int]bool{2: true}, listed)
	want := []Node{{NodeID: 3, Name: "n3", Address: "http://n3"}, {NodeID: 7, Name: "n7", Address: "https://n7.example"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestOwner(t *testing.T) {
	for _, tc := range []struct {
		id   int64
		want int
	}{
		{1, 1}, {51, 1}, {2, 2}, {102, 2}, {49, 49}, {99, 49}, {50, LegacyOwner}, {100, LegacyOwner}, {0, LegacyOwner},
		{7*IDStride + 3, 3},
	} {
		if got := Owner(tc.id); got != tc.want {
			t.Errorf("Owner(%d) = %d, want %d", tc.id, got, tc.want)
		}
	}
}

func TestState(t *testing.T) {
	tests := []struct {
		name string
		peer Peer
		want string
	}{
		{"alive with a secret", Peer{Status: StatusAlive, HasSecret: true}, StateAlive},
		{"failed with a secret", Peer{Status: StatusFailed, HasSecret: true}, StateFailed},
		{"new record, no outcome yet", Peer{Status: 0, HasSecret: true}, StateAlive},
		{"recorded from its ping, no secret", Peer{Status: StatusAlive}, StateAwaitingSecret},
		{"failed without a secret", Peer{Status: StatusFailed}, StateAwaitingSecret},
		{"needs a resync", Peer{Status: StatusAlive, HasSecret: true, NeedsResync: true}, StateNeedsResync},
		{"failed, needs a resync", Peer{Status: StatusFailed, HasSecret: true, NeedsResync: true}, StateNeedsResync},
		{"no secret, needs a resync", Peer{Status: StatusAlive, NeedsResync: true}, StateNeedsResync},
	}
	for _, tt := range tests {
		if got := State(tt.peer); got != tt.want {
			t.Errorf("%s: State = %q, want %q", tt.name, got, tt.want)
		}
	}
}
