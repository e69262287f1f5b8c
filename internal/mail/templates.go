package mail

import (
	"fmt"
	"html"
)

// The account mails in zh and en, all in this one file so a translator finds
// them together. lang is "en" for English; anything else is Chinese.

// VerificationMail carries a registration or binding code valid minutes long.
func VerificationMail(lang, system, to, code string, minutes int) Message {
	system = html.EscapeString(system)
	if lang == "en" {
		return Message{To: to, Subject: system + " email verification",
			Body: fmt.Sprintf("<p>Hello,</p><p>Your %s verification code is:</p><p><strong>%s</strong></p><p>It is valid for %d minutes. If you did not ask for it, ignore this mail.</p>", system, code, minutes)}
	}
	return Message{To: to, Subject: system + " 邮箱验证",
		Body: fmt.Sprintf("<p>您好,</p><p>您的 %s 验证码为:</p><p><strong>%s</strong></p><p>验证码 %d 分钟内有效。如果不是您本人操作,请忽略本邮件。</p>", system, code, minutes)}
}

// ResetMail carries the password reset link valid minutes long.
func ResetMail(lang, system, to, link string, minutes int) Message {
	system = html.EscapeString(system)
	link = html.EscapeString(link)
	if lang == "en" {
		return Message{To: to, Subject: system + " password reset",
			Body: fmt.Sprintf("<p>Hello,</p><p>Someone asked to reset the password of your %s account. Open this link to get a new password:</p><p><a href=\"%s\">%s</a></p><p>It is valid for %d minutes and works once. If you did not ask for it, ignore this mail.</p>", system, link, link, minutes)}
	}
	return Message{To: to, Subject: system + " 密码重置",
		Body: fmt.Sprintf("<p>您好,</p><p>有人申请重置您在 %s 的密码。打开下面的链接获取新密码:</p><p><a href=\"%s\">%s</a></p><p>链接 %d 分钟内有效,只能使用一次。如果不是您本人操作,请忽略本邮件。</p>", system, link, link, minutes)}
}
