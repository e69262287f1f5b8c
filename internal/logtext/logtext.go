// Package logtext owns the text of log rows (store.Log.Content): the
// Chinese sentence each kind of row is written with, and its rendering in
// the reader's language when the row is read.
//
// A row keeps its structured fields in a fixed sentence: the formats below
// are the row's encoding (raw quota, ids, prices as numbers), written once
// and never changed, so every row written since the first release reads
// back the same way, and readers that show content as it is (an export, an
// older node of a cluster, a keyword search) still see a sentence. Render
// parses a row against these formats and writes it in the reader's
// language with amounts in CNY; a row no format matches (an imported one,
// an operator's free text) is shown as stored.
package logtext

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelgate/modelgate/internal/msgtext"
)

// The stored formats of the rows written outside billing (consume rows are
// consume.go's). They are the rows' encoding: changing one orphans the
// rows written with it, so a new wording is a new format.
const (
	AdminTopup         = "管理员 %s 充值 %d 额度"
	AdminTopupRemark   = "管理员 %s 充值 %d 额度,备注: %s"
	AdminSetQuota      = "管理员 %s 将用户额度从 %d 修改为 %d"
	AdminOption        = "管理员 %s 修改配置 %s = %s"
	AdminOptionSecret  = "管理员 %s 修改配置 %s"
	AdminPayment       = "管理员 %s 修改支付通道 %s"
	AdminTopupSettings = "管理员 %s 修改充值设置"
	Redeem             = "通过兑换码充值 %d 额度,兑换码 ID %d"
	InviteReward       = "邀请用户 %s 首次付费,获得邀请奖励额度 %d"
	InviteeBonus       = "通过邀请注册,获得奖励额度 %d"
	OrderTopup         = "在线充值 %.2f 元,订单 %s,支付方式 %s,获得额度 %d"
	FirstStart         = "首次启动: 创建 root 用户"
)

// arg is how a stored argument is shown.
type arg int

const (
	text  arg = iota // data, as written (a username, an option's value)
	quota            // integer quota, shown in CNY
	yuan             // a decimal CNY amount
	id               // an integer id, as written
)

// kind is one stored format and its display in each language: zh and en
// use indexed verbs (%[1]s) over the arguments as shown.
type kind struct {
	stored string
	args   []arg
	zh, en string
}

var kinds = []kind{
	{AdminTopup, []arg{text, quota}, "管理员 %[1]s 充值 %[2]s", "Admin %[1]s topped up %[2]s"},
	{AdminTopupRemark, []arg{text, quota, text}, "管理员 %[1]s 充值 %[2]s,备注: %[3]s", "Admin %[1]s topped up %[2]s, remark: %[3]s"},
	{AdminSetQuota, []arg{text, quota, quota}, "管理员 %[1]s 将用户额度从 %[2]s 修改为 %[3]s", "Admin %[1]s changed the balance from %[2]s to %[3]s"},
	{AdminOption, []arg{text, text, text}, "管理员 %[1]s 修改配置 %[2]s = %[3]s", "Admin %[1]s set option %[2]s = %[3]s"},
	{AdminOptionSecret, []arg{text, text}, "管理员 %[1]s 修改配置 %[2]s", "Admin %[1]s changed option %[2]s"},
	{AdminPayment, []arg{text, text}, "管理员 %[1]s 修改支付通道 %[2]s", "Admin %[1]s changed payment channel %[2]s"},
	{AdminTopupSettings, []arg{text}, "管理员 %[1]s 修改充值设置", "Admin %[1]s changed the top-up settings"},
	{Redeem, []arg{quota, id}, "通过兑换码充值 %[1]s,兑换码 ID %[2]s", "Topped up %[1]s with a redemption code (code ID %[2]s)"},
	{InviteReward, []arg{text, quota}, "邀请用户 %[1]s 首次付费,获得邀请奖励 %[2]s", "Invited user %[1]s paid for the first time: invitation reward %[2]s"},
	{InviteeBonus, []arg{quota}, "通过邀请注册,获得奖励 %[1]s", "Signed up by invitation: bonus %[1]s"},
	{OrderTopup, []arg{yuan, text, text, quota}, "在线充值 %[1]s,订单 %[2]s,支付方式 %[3]s,到账 %[4]s", "Online top-up of %[1]s, order %[2]s, paid by %[3]s: credited %[4]s"},
	{FirstStart, nil, FirstStart, "First start: created the root user"},
}

// Types of rows Render treats apart (store.LogConsume, store.LogError;
// logtext sits below store, so the values are repeated here, pinned by
// TestStoreTypes).
const (
	typeConsume = 2
	typeError   = 5
)

// Render is the content of a row of type typ in lang: a row of a known
// format rendered with amounts in CNY, an error row's message (written in
// the language of its call) in lang where msgtext knows it, anything else
// as stored.
func Render(lang msgtext.Lang, typ int, content string) string {
	if content == "" {
		return content
	}
	switch typ {
	case typeConsume:
		if s, ok := renderConsume(lang, content); ok {
			return s
		}
	case typeError:
		return msgtext.Message(lang, content)
	}
	for _, c := range compiled() {
		m := c.re.FindStringSubmatch(content)
		if m == nil {
			continue
		}
		if s, ok := c.render(lang, m[1:]); ok {
			return s
		}
	}
	return content
}

// matcher is a kind with its stored format as an anchored expression.
type matcher struct {
	kind
	re     *regexp.Regexp
	weight int
}

func (c matcher) render(lang msgtext.Lang, vals []string) (string, bool) {
	shown := make([]any, len(vals))
	for i, v := range vals {
		switch c.args[i] {
		case quota:
			q, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return "", false
			}
			shown[i] = Money(lang, q)
		case yuan:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.Abs(f) > 1e12 {
				return "", false
			}
			shown[i] = Money(lang, int64(math.Round(f*quotaPerUnit)))
		default:
			shown[i] = v
		}
	}
	format := c.zh
	if lang == msgtext.English {
		format = c.en
	}
	return fmt.Sprintf(format, shown...), true
}

var (
	compileOnce sync.Once
	matchers    []matcher
)

// compiled is every kind as a matcher, the most specific (longest literal
// text) first, so a format that is a prefix of another never wins over it.
func compiled() []matcher {
	compileOnce.Do(func() {
		for _, k := range kinds {
			re, w := pattern(k.stored)
			matchers = append(matchers, matcher{kind: k, re: re, weight: w})
		}
		slices.SortStableFunc(matchers, func(a, b matcher) int { return b.weight - a.weight })
	})
	return matchers
}

var verbRE = regexp.MustCompile(`%(?:\.2f|[sd])`)

// pattern turns a stored format into an anchored expression, one group per
// verb, and the length of its literal text.
func pattern(format string) (*regexp.Regexp, int) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	weight, last := 0, 0
	for _, loc := range verbRE.FindAllStringIndex(format, -1) {
		lit := format[last:loc[0]]
		weight += len(lit)
		b.WriteString(regexp.QuoteMeta(lit))
		last = loc[1]
		switch format[loc[0]:loc[1]] {
		case "%d":
			b.WriteString(`(-?[0-9]+)`)
		case "%.2f":
			b.WriteString(`(-?[0-9]+(?:\.[0-9]+)?)`)
		default:
			b.WriteString(`(.*?)`)
		}
	}
	weight += len(format[last:])
	b.WriteString(regexp.QuoteMeta(format[last:]) + `$`)
	return regexp.MustCompile(b.String()), weight
}
