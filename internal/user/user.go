// Package user holds the rules of user accounts: roles, statuses and what a
// valid username, display name and email look like.
package user

import (
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/textfield"
)

// Roles, as the spec's permission levels.
const (
	RoleGuest = 0
	RoleUser  = 1
	RoleAdmin = 10
	RoleRoot  = 100
)

// Statuses. A deleted user is kept (soft delete) with its logs.
const (
	StatusEnabled  = 1
	StatusDisabled = 2
	StatusDeleted  = 3
)

// DefaultGroup is the group of new users.
const DefaultGroup = "default"

// RootUsername is the account created on first start.
const RootUsername = "root"

// Validation messages.
const (
	MsgUsernameLength    = "用户名长度必须在 3 到 20 个字符之间"
	MsgUsernameSpace     = "用户名不能包含空格"
	MsgDisplayNameLength = "显示名称不能超过 20 个字符"
	MsgEmailInvalid      = "邮箱格式不正确"
	MsgGroupInvalid      = "分组名称长度必须在 1 到 32 个字符之间"
	MsgRoleInvalid       = "无效的角色"
	MsgStatusInvalid     = "无效的用户状态"
)

// Text rules of the stored fields (columns: store.User). The rules above
// are stricter on length; these keep out what no column can hold.
var (
	usernameText    = textfield.Field{Label: "用户名", MaxChars: 64}
	displayNameText = textfield.Field{Label: "显示名称", MaxChars: 64}
	emailText       = textfield.Field{Label: "邮箱", MaxChars: 128}
	groupText       = textfield.Field{Label: "分组名称", MaxChars: 64}
)

// ValidateUsername checks the length rule: 3 to 20 characters, no spaces,
// and text a column can hold.
func ValidateUsername(name string) string {
	n := utf8.RuneCountInString(name)
	if n < 3 || n > 20 {
		return MsgUsernameLength
	}
	if msg := usernameText.Validate(name); msg != "" {
		return msg // NUL, control characters, invalid UTF-8
	}
	if strings.ContainsRune(name, ' ') {
		return MsgUsernameSpace
	}
	return ""
}

// ValidateUsernameText checks only that name is text a username column can
// hold: the check before looking up a username that may predate the length
// rule (login, manage).
func ValidateUsernameText(name string) string {
	return usernameText.Validate(name)
}

// ValidateDisplayName allows empty (the username is shown) up to 20 characters.
func ValidateDisplayName(name string) string {
	if utf8.RuneCountInString(name) > 20 {
		return MsgDisplayNameLength
	}
	return displayNameText.Validate(name)
}

// ValidateEmail allows empty or one plain address.
func ValidateEmail(email string) string {
	if email == "" {
		return ""
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 128 {
		return MsgEmailInvalid
	}
	return emailText.Validate(email)
}

// ValidateGroup checks a group name.
func ValidateGroup(g string) string {
	if n := utf8.RuneCountInString(g); n < 1 || n > 32 {
		return MsgGroupInvalid
	}
	return groupText.Validate(g)
}

// ValidRole reports whether r is one of the four roles.
func ValidRole(r int) bool {
	return r == RoleGuest || r == RoleUser || r == RoleAdmin || r == RoleRoot
}

// ValidStatus reports whether s is a user status.
func ValidStatus(s int) bool {
	return s == StatusEnabled || s == StatusDisabled || s == StatusDeleted
}

// MayCredit is the admin top-up rule every crediting path obeys (issue
// 26, §4): root may credit anyone, itself included; an admin only users of
// a lower role, so never itself, another admin or root; a user no one.
func MayCredit(actorID int64, actorRole int, targetID int64, targetRole int) bool {
	if actorRole >= RoleRoot {
		return true
	}
	return actorRole >= RoleAdmin && targetRole < actorRole && targetID != actorID
}
