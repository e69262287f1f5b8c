package token_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/token"
)

func TestNormalizeSubnets(t *testing.T) {
	tests := []struct {
		in, want, msg string
	}{
		{"", "", ""},
		{" , ,", "", ""},
		{"10.0.0.0/8", "10.0.0.0/8", ""},
		{"10.1.2.3/8", "10.0.0.0/8", ""},
		{"192.168.1.7", "192.168.1.7/32", ""},
		{"2001:db8::1", "2001:db8::1/128", ""},
		{"2001:DB8::ff/32", "2001:db8::/32", ""},
		{"::ffff:10.1.2.3", "10.1.2.3/32", ""},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", ""},
		{" 10.0.0.0/8 , 1.2.3.4,10.0.0.1/8 ", "10.0.0.0/8,1.2.3.4/32", ""},
		{"0.0.0.0/0,::/0", "0.0.0.0/0,::/0", ""},
		{"10.0.0.0/33", "", "无效的网段:10.0.0.0/33"},
		{"::1/129", "", "无效的网段:::1/129"},
		{"1.2.3.4, nonsense", "", "无效的网段:nonsense"},
		{"1.2.3", "", "无效的网段:1.2.3"},
		{"256.0.0.1", "", "无效的网段:256.0.0.1"},
		{"fe80::1%eth0", "", "无效的网段:fe80::1%eth0"},
		{"10.0.0.0/", "", "无效的网段:10.0.0.0/"},
		{"/8", "", "无效的网段:/8"},
		{strings.Repeat("2001:db8::1,", 40), "2001:db8::1/128", ""},
	}
	for _, tt := range tests {
		got, msg := token.NormalizeSubnets(tt.in)
		if got != tt.want || msg != tt.msg {
			t.Errorf("NormalizeSubnets(%q) = %q, %q; want %q, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
	var many []string
	for i := range 100 {
		many = append(many, netip.AddrFrom4([4]byte{10, 0, byte(i), 1}).String())
	}
	if _, msg := token.NormalizeSubnets(strings.Join(many, ",")); msg != token.MsgSubnetTooLong {
		t.Errorf("100 host subnets: msg %q, want %q", msg, token.MsgSubnetTooLong)
	}
}

func TestSubnetAllows(t *testing.T) {
	tests := []struct {
		list, ip string
		want     bool
	}{
		{"", "203.0.113.9", true},
		{"10.0.0.0/8", "10.200.1.1", true},
		{"10.0.0.0/8", "11.0.0.1", false},
		{"10.0.0.0/8", "::ffff:10.0.0.1", true},
		{"192.168.1.7/32,2001:db8::/32", "2001:db8:1::5", true},
		{"192.168.1.7/32,2001:db8::/32", "192.168.1.8", false},
		{"garbage", "10.0.0.1", false},
	}
	for _, tt := range tests {
		if got := token.SubnetAllows(tt.list, netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("SubnetAllows(%q, %s) = %v, want %v", tt.list, tt.ip, got, tt.want)
		}
	}
}

func TestNormalizeModels(t *testing.T) {
	long := strings.Repeat("m", 191)
	var many []string // 400 distinct models of 191 characters
	for i := range 400 {
		many = append(many, fmt.Sprintf("%03d%s", i, long[3:]))
	}
	tests := []struct {
		in, want, msg string
	}{
		{"", "", ""},
		{" gpt-4o , ,claude-3,gpt-4o ", "gpt-4o,claude-3", ""},
		{long, long, ""},
		{strings.Repeat("模", 191), strings.Repeat("模", 191), ""},
		{"a," + long + "m", "", token.MsgModelNameLength},
		{"gpt-4o,gpt\x00", "", "模型名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"gpt\t4o", "", "模型名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{strings.Join(many, ","), "", "模型列表 不能超过 65535 字节"}, // a TEXT column on MySQL
	}
	for _, tt := range tests {
		got, msg := token.NormalizeModels(tt.in)
		if got != tt.want || msg != tt.msg {
			t.Errorf("NormalizeModels(%.30q) = %.30q, %q; want %.30q, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
	if !token.ModelAllowed("", "any") || !token.ModelAllowed("a,b", "b") || token.ModelAllowed("a,b", "c") || token.ModelAllowed("ab", "a") {
		t.Error("ModelAllowed disagrees with the allow list")
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"", false},
		{"k", true},
		{strings.Repeat("n", 50), true},
		{strings.Repeat("名", 50), true},
		{strings.Repeat("n", 51), false},
		{"k\x00", false},
		{"k\x7f", false},
		{"k\nk", false},
		{"密钥-😀", true},
	}
	for _, tt := range tests {
		if got := token.ValidateName(tt.name) == ""; got != tt.ok {
			t.Errorf("ValidateName(%d runes) ok = %v, want %v", len([]rune(tt.name)), got, tt.ok)
		}
	}
}

func TestExpiryAndStatus(t *testing.T) {
	const now = 1_000_000
	for _, tt := range []struct {
		expired int64
		ok      bool
	}{{-1, true}, {now, true}, {now + 1, true}, {now - 1, false}, {0, false}, {-2, false}} {
		if got := token.ValidateExpiry(tt.expired, now) == ""; got != tt.ok {
			t.Errorf("ValidateExpiry(%d) ok = %v, want %v", tt.expired, got, tt.ok)
		}
	}
	for _, tt := range []struct {
		st   token.State
		want int
	}{
		{token.State{Status: 1, ExpiredTime: -1}, 1},
		{token.State{Status: 1, ExpiredTime: now}, 1},
		{token.State{Status: 1, ExpiredTime: now - 1}, 3},
		{token.State{Status: 2, ExpiredTime: now - 1}, 2},
		{token.State{Status: 4, ExpiredTime: now - 1}, 4},
	} {
		if got := tt.st.EffectiveStatus(now); got != tt.want {
			t.Errorf("EffectiveStatus(%+v) = %d, want %d", tt.st, got, tt.want)
		}
	}
}

func TestStatusRequest(t *testing.T) {
	tests := []struct {
		requested, current int
		change             bool
		msg                string
	}{
		{1, 2, true, ""},
		{2, 1, true, ""},
		{1, 3, true, ""},
		{2, 4, true, ""},
		{1, 1, false, ""},
		{3, 3, false, ""},
		{4, 4, false, ""},
		{3, 1, false, token.MsgStatusInvalid},
		{4, 2, false, token.MsgStatusInvalid},
		{0, 1, false, token.MsgStatusInvalid},
	}
	for _, tt := range tests {
		change, msg := token.StatusRequest(tt.requested, tt.current)
		if change != tt.change || msg != tt.msg {
			t.Errorf("StatusRequest(%d, %d) = %v, %q", tt.requested, tt.current, change, msg)
		}
	}
}

func TestCheckEnable(t *testing.T) {
	const now = 1_000_000
	tests := []struct {
		name  string
		after token.State
		want  string
	}{
		{"usable", token.State{ExpiredTime: -1, RemainQuota: 1}, ""},
		{"expires this second", token.State{ExpiredTime: now, RemainQuota: 1}, ""},
		{"past expiry", token.State{ExpiredTime: now - 1, RemainQuota: 1}, token.MsgEnableExpired},
		{"past expiry and no quota", token.State{ExpiredTime: now - 1}, token.MsgEnableExpired},
		{"no quota", token.State{ExpiredTime: -1}, token.MsgEnableExhausted},
		{"negative quota", token.State{ExpiredTime: -1, RemainQuota: -5}, token.MsgEnableExhausted},
		{"unlimited", token.State{ExpiredTime: now + 1, UnlimitedQuota: true}, ""},
	}
	for _, tt := range tests {
		if got := token.CheckEnable(tt.after, now); got != tt.want {
			t.Errorf("%s: CheckEnable = %q, want %q", tt.name, got, tt.want)
		}
	}
}
