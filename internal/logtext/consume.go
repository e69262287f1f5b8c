package logtext

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/msgtext"
)

// A consume row's content is written by billing (consumeContent, appended
// rather than formatted: it is built on every call) and, for a call
// settled after its hold was given back, extended by store's settlement.
// Its grammar: the price clauses joined by ", ", the group ratio last,
// then notes in parentheses:
//
//	按次 <price> 元, 分组倍率 <ratio>
//	输入 <p> 元/百万 tokens, 输出 <p> 元/百万 tokens, 缓存 <p> 元/百万 tokens
//	  [, 缓存写入 <p> 元/百万 tokens][, 1 小时缓存写入 <p> 元/百万 tokens]
//	  [, 上下文超过 <n> tokens 档], 分组倍率 <ratio>
//	  [ (上游未返回用量, tokens 为本地估算)][ (超出预扣 <quota> 额度未收取)]
//	  [ (预扣已在进程失联后退回, <quota> 额度未收取)]
//
// Prices are CNY per million tokens (or per request) as strconv's shortest
// 'g' writes them; num matches one as written.
const num = `(-?[0-9][0-9.eE+-]*)`

// clause is one price clause: its stored form (one number) and display.
type clause struct {
	re     *regexp.Regexp
	zh, en string // %s: the number as shown
	count  bool   // an integer count of tokens
}

var clauses = []clause{
	{re: regexp.MustCompile(`^按次 ` + num + ` 元$`), zh: "按次 %s 元", en: "per request ¥%s"},
	{re: regexp.MustCompile(`^输入 ` + num + ` 元/百万 tokens$`), zh: "输入 %s 元/百万 tokens", en: "input ¥%s / 1M tokens"},
	{re: regexp.MustCompile(`^输出 ` + num + ` 元/百万 tokens$`), zh: "输出 %s 元/百万 tokens", en: "output ¥%s / 1M tokens"},
	{re: regexp.MustCompile(`^缓存 ` + num + ` 元/百万 tokens$`), zh: "缓存 %s 元/百万 tokens", en: "cache read ¥%s / 1M tokens"},
	{re: regexp.MustCompile(`^缓存写入 ` + num + ` 元/百万 tokens$`), zh: "缓存写入 %s 元/百万 tokens", en: "cache write ¥%s / 1M tokens"},
	{re: regexp.MustCompile(`^1 小时缓存写入 ` + num + ` 元/百万 tokens$`), zh: "1 小时缓存写入 %s 元/百万 tokens", en: "1-hour cache write ¥%s / 1M tokens"},
	{re: regexp.MustCompile(`^上下文超过 ([0-9]+) tokens 档$`), zh: "上下文超过 %s tokens 档", en: "tier above %s prompt tokens", count: true},
	{re: regexp.MustCompile(`^分组倍率 ` + num + `$`), zh: "分组倍率 %s", en: "group ratio %s"},
}

// note is one parenthesised note at the end of a consume row.
type note struct {
	re     *regexp.Regexp // anchored at the end; group 1 is what precedes it
	zh, en string         // %s: the uncollected quota in CNY, when it has one
}

var notes = []note{
	{re: regexp.MustCompile(`(?s)^(.*) \(上游未返回用量, tokens 为本地估算\)$`),
		zh: "(上游未返回用量, tokens 为本地估算)", en: "(the upstream reported no usage: tokens counted locally)"},
	{re: regexp.MustCompile(`(?s)^(.*) \(超出预扣 (-?[0-9]+) 额度未收取\)$`),
		zh: "(超出预扣的 %s 未收取)", en: "(%s beyond the hold not collected)"},
	{re: regexp.MustCompile(`(?s)^(.*) \(预扣已在进程失联后退回, (-?[0-9]+) 额度未收取\)$`),
		zh: "(预扣已在进程失联后退回, %s 未收取)", en: "(the hold was returned after its process was lost: %s not collected)"},
}

// renderConsume renders a consume row; ok is false when content does not
// follow the grammar (an imported row), which is then shown as stored.
func renderConsume(lang msgtext.Lang, content string) (string, bool) {
	rest := content
	var tail []string // rendered notes, last first
	for found := true; found; {
		found = false
		for _, n := range notes {
			m := n.re.FindStringSubmatch(rest)
			if m == nil {
				continue
			}
			format := n.zh
			if lang == msgtext.English {
				format = n.en
			}
			if len(m) > 2 {
				q, err := strconv.ParseInt(m[2], 10, 64)
				if err != nil {
					return "", false
				}
				format = strings.Replace(format, "%s", Money(lang, q), 1)
			}
			tail = append(tail, format)
			rest, found = m[1], true
			break
		}
	}
	parts := strings.Split(rest, ", ")
	if !strings.HasPrefix(parts[len(parts)-1], "分组倍率 ") {
		return "", false
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		s, ok := renderClause(lang, p)
		if !ok {
			return "", false
		}
		out = append(out, s)
	}
	b := strings.Join(out, ", ")
	for i := len(tail) - 1; i >= 0; i-- {
		b += " " + tail[i]
	}
	return b, true
}

func renderClause(lang msgtext.Lang, p string) (string, bool) {
	for _, c := range clauses {
		m := c.re.FindStringSubmatch(p)
		if m == nil {
			continue
		}
		v := Decimal(lang, m[1])
		if c.count {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return "", false
			}
			v = Count(lang, n)
		}
		if _, err := strconv.ParseFloat(m[1], 64); err != nil {
			return "", false
		}
		format := c.zh
		if lang == msgtext.English {
			format = c.en
		}
		return strings.Replace(format, "%s", v, 1), true
	}
	return "", false
}
