package msgtext

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

func hasHan(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
}

// TestTable: every English text keeps its format's verbs in order, is not
// Chinese, and labels point at text verbs; the spec's messages are not in
// the table.
func TestTable(t *testing.T) {
	for zh, e := range english {
		if got, want := verbs(e.text), verbs(zh); !slices.Equal(got, want) {
			t.Errorf("%q: English %q has verbs %v, want %v", zh, e.text, got, want)
		}
		if hasHan(e.text) {
			t.Errorf("%q: English %q is not English", zh, e.text)
		}
		if e.text == "" || strings.TrimSpace(e.text) != strings.TrimRight(e.text, " ") {
			t.Errorf("%q: English %q is empty or starts with space", zh, e.text)
		}
		for _, i := range e.labels {
			if v := verbs(zh); i >= len(v) || (v[i] != "%s" && v[i] != "%v") {
				t.Errorf("%q: label %d is not a text argument", zh, i)
			}
		}
		if Fixed(zh) {
			t.Errorf("%q is a spec message: it must not be translated", zh)
		}
	}
}

func TestParseLang(t *testing.T) {
	for _, v := range []string{"zh", "en"} {
		if l, err := ParseLang(v); err != nil || string(l) != v {
			t.Errorf("ParseLang(%q) = %q, %v", v, l, err)
		}
	}
	for _, v := range []string{"", "EN", "zh-CN", " en", "fr", "en\x00"} {
		if _, err := ParseLang(v); !errors.Is(err, ErrLang) {
			t.Errorf("ParseLang(%q) accepted", v)
		}
	}
}

func TestRender(t *testing.T) {
	cases := []struct {
		lang   Lang
		format string
		args   []any
		want   string
	}{
		{Chinese, "用户名已存在", nil, "用户名已存在"},
		{Chinese, "%s 不能超过 %d 个字符", []any{"用户名", 64}, "用户名 不能超过 64 个字符"},
		{English, "用户名已存在", nil, "username already taken"},
		{English, "%s 不能超过 %d 个字符", []any{"用户名", 64}, "username must be at most 64 characters"},
		// A formatted message is matched back; a nested label too.
		{English, "参数 keyword 不能超过 64 个字符", nil, "parameter keyword must be at most 64 characters"},
		{English, "配置项 RetryTimes 的值无效: 必须是 0 到 10 之间的整数", nil, "invalid value for option RetryTimes: must be an integer from 0 to 10"},
		{English, "配置项 %s 的值无效: %v", []any{"SystemName", errors.New("不能超过 64 字节")}, "invalid value for option SystemName: must be at most 64 bytes"},
		{English, "%s: 上游返回 %d", []any{"上游服务请求失败", 502}, "upstream request failed: upstream answered 502"},
		{English, "渠道测试失败: 上游返回 401: 用户名", nil, "channel test failed: upstream answered 401: 用户名"},
		// Data is never translated, even when it reads like a label.
		{English, "无效的网段:%s", []any{"用户名"}, "invalid subnet: 用户名"},
		{English, "无效的网段:用户名", nil, "invalid subnet: 用户名"},
		{English, "分组 %s 下模型 %s 无可用渠道", []any{"默认", "模型名称"}, "group 默认 has no available channel for model 模型名称"},
		{English, "重放结算失败: connection refused", nil, "settlement replay failed: connection refused"},
		// The spec's messages stay as written.
		{English, "无效的参数", nil, "无效的参数"},
		{English, "无权进行此操作,未登录且未提供 access token", nil, "无权进行此操作,未登录且未提供 access token"},
		{English, "该令牌无权使用模型:%s", []any{"gpt-4o"}, "该令牌无权使用模型:gpt-4o"},
		{English, "该令牌无权使用模型:模型 x 未设置价格,暂不可用", nil, "该令牌无权使用模型:模型 x 未设置价格,暂不可用"},
		{English, "该令牌只能在指定网段使用:10.0.0.0/8,当前 ip:1.2.3.4", nil, "该令牌只能在指定网段使用:10.0.0.0/8,当前 ip:1.2.3.4"},
		// Text no format produced stays as it is.
		{English, "Unknown request URL: %s %s", []any{"GET", "/v1/x"}, "Unknown request URL: GET /v1/x"},
		{English, "某个新的消息", nil, "某个新的消息"},
		{English, "", nil, ""},
		{English, "%s 不能超过 %d 个字符", []any{"用户名\x00\xff", 64}, "用户名\x00\xff must be at most 64 characters"},
	}
	for _, c := range cases {
		if got := Render(c.lang, c.format, c.args...); got != c.want {
			t.Errorf("Render(%s, %q, %v) = %q, want %q", c.lang, c.format, c.args, got, c.want)
		}
	}
}

// TestEveryMessageTranslated parses every non-test Go file of internal/
// and cmd/modelgate and requires each string literal holding a Chinese
// character to be in the English table or among the spec's messages. Out
// of scope, and skipped: text logged through slog (operators' logs) and
// the content of log rows (store.Log.Content, built in a field or variable
// named content), which are records written once, not answers; the test
// harnesses internal/apptest and internal/payment/paytest (whose Chinese
// is the fake providers' own text); this package's own tables; the mail
// templates, which hold both languages (internal/mail/templates.go).
func TestEveryMessageTranslated(t *testing.T) {
	var roots = []string{"../../internal", "../../cmd/modelgate"}
	seen := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "apptest", "paytest", "msgtext", "testdata", "logtext":
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			// The account mails keep their zh and en texts side by side
			// in this one file (internal/mail).
			if strings.HasSuffix(filepath.ToSlash(path), "internal/mail/templates.go") {
				return nil
			}
			for _, lit := range chineseLiterals(t, path) {
				seen++
				if _, ok := english[lit.text]; !ok && !slices.Contains(specFixed, lit.text) {
					t.Errorf("%s: %q has no English in internal/msgtext/table.go (or is it a spec message? spec.go)", lit.pos, lit.text)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 100 {
		t.Fatalf("found only %d Chinese literals: is the walk looking in the right place?", seen)
	}
}

type literal struct {
	pos  token.Position
	text string
}

// slogMethods are the calls whose string arguments are log text.
var slogMethods = map[string]bool{
	"Debug": true, "Info": true, "Warn": true, "Error": true, "Log": true,
	"DebugContext": true, "InfoContext": true, "WarnContext": true, "ErrorContext": true,
}

func chineseLiterals(t *testing.T, path string) []literal {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []literal
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slogMethods[sel.Sel.Name] && len(n.Args) > 0 {
				return false // a log line
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Content" {
				return false
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == "content" {
					return false
				}
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(n.Value)
			if err == nil && hasHan(s) {
				out = append(out, literal{fset.Position(n.Pos()), s})
			}
		}
		return true
	}
	ast.Inspect(f, walk)
	return out
}

// TestConcurrentUse: requests render messages in parallel (run under
// -race; with -run TestConcurrentUse alone it also covers the first use,
// which builds the patterns).
func TestConcurrentUse(t *testing.T) {
	done := make(chan string)
	for range 8 {
		go func() { done <- Message(English, "参数 p 不能超过 64 个字符") }()
	}
	for range 8 {
		if got := <-done; got != "parameter p must be at most 64 characters" {
			t.Errorf("got %q", got)
		}
	}
}
