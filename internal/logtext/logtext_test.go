package logtext

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/msgtext"
)

func TestRender(t *testing.T) {
	zh, en := msgtext.Chinese, msgtext.English
	for _, c := range []struct {
		lang    msgtext.Lang
		typ     int
		content string
		want    string
	}{
		{en, 1, fmt.Sprintf(Redeem, 5000000, 3), "Topped up ¥5.00 with a redemption code (code ID 3)"},
		{zh, 1, fmt.Sprintf(Redeem, 5000000, 3), "通过兑换码充值 ¥5.00,兑换码 ID 3"},
		{en, 1, fmt.Sprintf(AdminTopup, "root", 1234567891), "Admin root topped up ¥1,234.567891"},
		{en, 1, fmt.Sprintf(AdminTopup, "root", -500000), "Admin root topped up -¥0.50"},
		// The remark format wins over its prefix; data is never translated.
		{en, 1, fmt.Sprintf(AdminTopupRemark, "root", 1000000, "补偿 5 额度"), "Admin root topped up ¥1.00, remark: 补偿 5 额度"},
		{en, 3, fmt.Sprintf(AdminSetQuota, "admin", 0, 2500000), "Admin admin changed the balance from ¥0.00 to ¥2.50"},
		{en, 3, fmt.Sprintf(AdminOption, "root", "MessageLanguage", "en"), "Admin root set option MessageLanguage = en"},
		{en, 3, fmt.Sprintf(AdminOptionSecret, "root", "SMTPToken"), "Admin root changed option SMTPToken"},
		{en, 3, fmt.Sprintf(AdminPayment, "root", "bank"), "Admin root changed payment channel bank"},
		{en, 3, fmt.Sprintf(AdminTopupSettings, "root"), "Admin root changed the top-up settings"},
		{en, 1, fmt.Sprintf(InviteReward, "bob", 2000000), "Invited user bob paid for the first time: invitation reward ¥2.00"},
		{en, 1, fmt.Sprintf(InviteeBonus, 100), "Signed up by invitation: bonus ¥0.0001"},
		{en, 1, fmt.Sprintf(OrderTopup, 10.5, "TP20261127", "bank", 10500000), "Online top-up of ¥10.50, order TP20261127, paid by bank: credited ¥10.50"},
		{zh, 1, fmt.Sprintf(OrderTopup, 10.5, "TP20261127", "bank", 10500000), "在线充值 ¥10.50,订单 TP20261127,支付方式 bank,到账 ¥10.50"},
		{en, 4, FirstStart, "First start: created the root user"},
		{zh, 4, FirstStart, FirstStart},

		// Consume rows: prices in CNY per million tokens, notes with quota in CNY.
		{en, 2, "输入 2 元/百万 tokens, 输出 4 元/百万 tokens, 缓存 2 元/百万 tokens, 分组倍率 1",
			"input ¥2 / 1M tokens, output ¥4 / 1M tokens, cache read ¥2 / 1M tokens, group ratio 1"},
		{zh, 2, "输入 2 元/百万 tokens, 输出 4 元/百万 tokens, 缓存 2 元/百万 tokens, 分组倍率 1",
			"输入 2 元/百万 tokens, 输出 4 元/百万 tokens, 缓存 2 元/百万 tokens, 分组倍率 1"},
		{en, 2, "输入 2.5e-05 元/百万 tokens, 输出 1500 元/百万 tokens, 缓存 0.5 元/百万 tokens, 缓存写入 3 元/百万 tokens, 1 小时缓存写入 4 元/百万 tokens, 上下文超过 200000 tokens 档, 分组倍率 0.8 (上游未返回用量, tokens 为本地估算) (超出预扣 12 额度未收取)",
			"input ¥0.000025 / 1M tokens, output ¥1,500 / 1M tokens, cache read ¥0.5 / 1M tokens, cache write ¥3 / 1M tokens, 1-hour cache write ¥4 / 1M tokens, tier above 200,000 prompt tokens, group ratio 0.8 (the upstream reported no usage: tokens counted locally) (¥0.000012 beyond the hold not collected)"},
		{zh, 2, "按次 0.01 元, 分组倍率 1 (预扣已在进程失联后退回, 3000 额度未收取)", "按次 0.01 元, 分组倍率 1 (预扣已在进程失联后退回, ¥0.003 未收取)"},
		{en, 2, "按次 0.01 元, 分组倍率 1 (预扣已在进程失联后退回, 3000 额度未收取)", "per request ¥0.01, group ratio 1 (the hold was returned after its process was lost: ¥0.003 not collected)"},

		// Rows of no known format are shown as stored, in every language.
		{en, 2, "输入 2 元/百万 tokens, 分组倍率 x", "输入 2 元/百万 tokens, 分组倍率 x"},
		{en, 2, "模型倍率 1.5,补全倍率 2", "模型倍率 1.5,补全倍率 2"},
		{en, 1, "通过兑换码充值 abc 额度,兑换码 ID 3", "通过兑换码充值 abc 额度,兑换码 ID 3"},
		{en, 1, "通过兑换码充值 99999999999999999999 额度,兑换码 ID 3", "通过兑换码充值 99999999999999999999 额度,兑换码 ID 3"},
		{en, 3, "operator note", "operator note"},
		{en, 1, "", ""},
		// Error rows: the message their call answered, rendered where known.
		{en, 5, "用户不存在", "user not found"},
		{zh, 5, "用户不存在", "用户不存在"},
	} {
		if got := Render(c.lang, c.typ, c.content); got != c.want {
			t.Errorf("Render(%s, %d, %q)\n got %q\nwant %q", c.lang, c.typ, c.content, got, c.want)
		}
	}
}

// TestKindsComplete: every stored format has a display in both languages
// with one argument kind per verb, and no English display holds Chinese.
func TestKindsComplete(t *testing.T) {
	for _, k := range kinds {
		if n := len(verbRE.FindAllString(k.stored, -1)); n != len(k.args) {
			t.Errorf("%q: %d verbs, %d argument kinds", k.stored, n, len(k.args))
		}
		for _, r := range k.en {
			if r >= 0x4e00 && r <= 0x9fff {
				t.Errorf("%q: English display %q holds Chinese", k.stored, k.en)
				break
			}
		}
		args := make([]any, len(k.args))
		for i := range args {
			args[i] = "x"
		}
		for _, f := range []string{k.zh, k.en} {
			if s := fmt.Sprintf(f, args...); len(args) > 0 && (strings.Contains(s, "%!")) {
				t.Errorf("%q: display %q does not use its arguments: %q", k.stored, f, s)
			}
		}
	}
}

func TestMoney(t *testing.T) {
	for q, want := range map[int64]string{
		0: "¥0.00", 1: "¥0.000001", 10000: "¥0.01", 5000000: "¥5.00", 1234567890000: "¥1,234,567.89",
		-1: "-¥0.000001", -9223372036854775808: "-¥9,223,372,036,854.775808",
	} {
		if got := Money(msgtext.English, q); got != want {
			t.Errorf("Money(%d) = %q, want %q", q, got, want)
		}
	}
}
