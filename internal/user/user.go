// Package user holds the rules of user accounts: roles, statuses and what a
// valid username, display name and email look like.
package user

import (
	"net/mail"
	"unicode/utf8"
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
	MsgDisplayNameLength = "显示名称不能超过 20 个字符"
	MsgEmailInvalid      = "邮箱格式不正确"
	MsgGroupInvalid      = "分组名称长度必须在 1 到 32 个字符之间"
	MsgRoleInvalid       = "无效的角色"
	MsgStatusInvalid     = "无效的用户状态"
)

// ValidateUsername checks the length rule: 3 to 20 characters, no spaces.
func ValidateUsername(name string) string {
	n := utf8.RuneCountInString(name)
	if n < 3 || n > 20 {
		return MsgUsernameLength
	}
	for _, r := range name {
		if r <= ' ' {
			return MsgUsernameLength
		}
	}
	return ""
}

// ValidateDisplayName allows empty (the username is shown) up to 20 characters.
func ValidateDisplayName(name string) string {
	if utf8.RuneCountInString(name) > 20 {
		return MsgDisplayNameLength
	}
	return ""
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
	return ""
}

// ValidateGroup checks a group name.
func ValidateGroup(g string) string {
	if n := utf8.RuneCountInString(g); n < 1 || n > 32 {
		return MsgGroupInvalid
	}
	return ""
}

// ValidRole reports whether r is one of the four roles.
func ValidRole(r int) bool {
	return r == RoleGuest || r == RoleUser || r == RoleAdmin || r == RoleRoot
}

// ValidStatus reports whether s is a user status.
func ValidStatus(s int) bool {
	return s == StatusEnabled || s == StatusDisabled || s == StatusDeleted
}
