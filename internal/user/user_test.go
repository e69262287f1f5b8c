package user

import (
	"strings"
	"testing"
)

func TestTextRules(t *testing.T) {
	bad := func(label string) string {
		return label + " 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"
	}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"username ok", ValidateUsername("alice"), ""},
		{"username unicode", ValidateUsername("爱丽丝"), ""},
		{"username NUL", ValidateUsername("ali\x00ce"), bad("用户名")},
		{"username space", ValidateUsername("ali ce"), MsgUsernameSpace},
		{"username DEL", ValidateUsername("ali\x7fce"), bad("用户名")},
		{"username C1", ValidateUsername("ali\u0085ce"), bad("用户名")},
		{"username too long", ValidateUsername(strings.Repeat("a", 21)), MsgUsernameLength},
		{"lookup username NUL", ValidateUsernameText("ro\x00ot"), bad("用户名")},
		{"lookup username long", ValidateUsernameText(strings.Repeat("a", 64)), ""},
		{"lookup username too long", ValidateUsernameText(strings.Repeat("a", 65)), "用户名 不能超过 64 个字符"},
		{"display name ok", ValidateDisplayName("Alice 😀"), ""},
		{"display name NUL", ValidateDisplayName("A\x00"), bad("显示名称")},
		{"display name newline", ValidateDisplayName("A\nB"), bad("显示名称")},
		{"display name too long", ValidateDisplayName(strings.Repeat("名", 21)), MsgDisplayNameLength},
		{"email ok", ValidateEmail("a@example.com"), ""},
		{"group ok", ValidateGroup("vip"), ""},
		{"group NUL", ValidateGroup("vip\x00"), bad("分组名称")},
		{"group too long", ValidateGroup(strings.Repeat("g", 33)), MsgGroupInvalid},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestMayCredit(t *testing.T) {
	for _, c := range []struct {
		name               string
		actor, target      int64
		actorRole, tgtRole int
		want               bool
	}{
		{"root credits itself", 1, 1, RoleRoot, RoleRoot, true},
		{"root credits an admin", 1, 2, RoleRoot, RoleAdmin, true},
		{"admin credits a user", 2, 3, RoleAdmin, RoleUser, true},
		{"admin credits itself", 2, 2, RoleAdmin, RoleAdmin, false},
		{"admin credits itself with a stale lower role", 2, 2, RoleAdmin, RoleUser, false},
		{"admin credits another admin", 2, 4, RoleAdmin, RoleAdmin, false},
		{"admin credits root", 2, 1, RoleAdmin, RoleRoot, false},
		{"user credits a guest", 3, 5, RoleUser, RoleGuest, false},
	} {
		if got := MayCredit(c.actor, c.actorRole, c.target, c.tgtRole); got != c.want {
			t.Errorf("%s: got %v", c.name, got)
		}
	}
}
