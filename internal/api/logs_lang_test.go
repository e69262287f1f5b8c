package api_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/store"
	"github.com/modelgate/modelgate/internal/user"
)

// readLogs reads the caller's logs of type typ with the Accept-Language
// given ("" sends none).
func readLogs(t *testing.T, c *apptest.Client, typ, acceptLanguage string) []logRow {
	t.Helper()
	c.Header.Del("Accept-Language")
	if acceptLanguage != "" {
		c.Header.Set("Accept-Language", acceptLanguage)
	}
	defer c.Header.Del("Accept-Language")
	var rows []logRow
	c.OK("GET", "/api/log/self?type="+typ, nil).Decode(t, &rows)
	return rows
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestLogContentInReadersLanguage (issue 30 §2): one stored row reads in
// Chinese or English as the reader asks (Accept-Language, else the site's
// MessageLanguage), with its amount in CNY; a row of free text written
// before (or imported) reads as stored in both.
func TestLogContentInReadersLanguage(t *testing.T) {
	e := apptest.New(t)
	root := e.Root()
	u, id := e.NewUser("reader", user.RoleUser)
	key := createCodes(t, root, "lang", 5_000_000, 1)[0]
	u.OK("POST", "/api/user/topup", map[string]string{"key": key})
	const old = "旧版本写入的日志: 充值 5000000 额度"
	insertLogs(t, e, store.Log{UserID: id, Username: "reader", Type: store.LogTopup, Quota: 1, Content: old, CreatedAt: 1})

	zh := "通过兑换码充值 ¥5.00,兑换码 ID "
	en := "Topped up ¥5.00 with a redemption code (code ID "
	for _, c := range []struct {
		option, accept, want string
	}{
		{"", "", zh},                          // the default: MessageLanguage zh
		{"", "en-US,en;q=0.9", en},            // the reader asks for English
		{"", "fr-FR, en;q=0.5, zh;q=0.4", en}, // the best of zh and en by weight
		{"", "de", zh},                        // neither: the site's language
		{"en", "", en},                        // the site's language is English
		{"en", "zh-CN,zh;q=0.9,en;q=0.8", zh}, // the reader's choice wins over the site's
	} {
		if c.option != "" {
			root.OK("PUT", "/api/option/", map[string]any{"key": "MessageLanguage", "value": c.option})
		}
		rows := readLogs(t, u, "1", c.accept)
		if len(rows) != 2 {
			t.Fatalf("logs = %+v", rows)
		}
		if got := rows[0].Content; !strings.HasPrefix(got, c.want) || hasHan(got) != (c.want == zh) {
			t.Errorf("option %q, Accept-Language %q: content %q, want it to start with %q", c.option, c.accept, got, c.want)
		}
		if rows[1].Content != old {
			t.Errorf("option %q, Accept-Language %q: old row reads %q, want it as stored", c.option, c.accept, rows[1].Content)
		}
	}

	// The admin's list renders the same way.
	var all []logRow
	root.Header.Set("Accept-Language", "en")
	root.OK("GET", "/api/log/?type=1&username=reader", nil).Decode(t, &all)
	root.Header.Del("Accept-Language")
	if len(all) != 2 || !strings.HasPrefix(all[0].Content, en) || all[1].Content != old {
		t.Errorf("admin list in English = %+v", all)
	}
}

// TestAdminLogsInEnglish: the admin's actions (top-up with remark, balance
// change, option change) read in English with amounts in CNY, the data
// (names, the remark, an option's value) as written.
func TestAdminLogsInEnglish(t *testing.T) {
	e := apptest.New(t)
	root := e.Root()
	carol, carolID := e.NewUser("carol", user.RoleUser)
	root.OK("POST", "/api/topup", map[string]any{"user_id": carolID, "quota": 1_500_000, "remark": "补偿"})
	root.OK("PUT", "/api/user/", map[string]any{"id": carolID, "quota": 2_000_000, "quota_before": 1_500_000})
	topups := readLogs(t, carol, "1", "en")
	admins := readLogs(t, carol, "3", "en")
	if len(topups) != 1 || topups[0].Content != "Admin root topped up ¥1.50, remark: 补偿" {
		t.Errorf("top-up log = %+v", topups)
	}
	if len(admins) != 1 || admins[0].Content != "Admin root changed the balance from ¥1.50 to ¥2.00" {
		t.Errorf("admin log = %+v", admins)
	}
	if zh := readLogs(t, carol, "3", "zh-CN"); len(zh) != 1 || zh[0].Content != "管理员 root 将用户额度从 ¥1.50 修改为 ¥2.00" {
		t.Errorf("admin log in Chinese = %+v", zh)
	}
}

// TestReadersLanguageKeepsSpecMessages: Accept-Language turns the messages
// the spec does not fix into English, and leaves the spec's as written.
func TestReadersLanguageKeepsSpecMessages(t *testing.T) {
	e := apptest.New(t)
	anon := e.Client()
	anon.Header.Set("Accept-Language", "en-US,en;q=0.9")
	anon.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, "无权进行此操作,未登录且未提供 access token")
	anon.Fail("POST", "/api/user/login", "{", http.StatusOK, "无效的参数")
	anon.Fail("POST", "/api/user/login", map[string]string{"username": "nobody", "password": "wrong-password"}, http.StatusOK,
		"wrong username or password, or the user is banned")
	root := e.Root()
	root.Header.Set("Accept-Language", "en")
	root.Fail("POST", "/api/topup/order", map[string]any{"amount": 1, "pay_method": "offline"}, http.StatusOK,
		"自助充值仅支持 wechat / the service / bank")
	// Without the header the site's language (zh) applies.
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "nobody", "password": "wrong-password"}, http.StatusOK,
		"用户名或密码错误,或用户已被封禁")
}

// TestBankNoteInReadersLanguage: the bank transfer instructions follow the
// payer's language; the account's details and the operator's notes are
// data and stay as written.
func TestBankNoteInReadersLanguage(t *testing.T) {
	e := apptest.New(t)
	root := e.Root()
	enableBank(root)
	topupOn(root)
	u, _ := e.NewUser("payer", user.RoleUser)
	u.Header.Set("Accept-Language", "en")
	a := topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	want := "Account name: Example Ltd; account number: 6222 0000 1111; bank: ICBC Haidian; put the order number " +
		a.Order.OrderNo + " in the transfer remarks. put the order number in the remarks"
	if a.Pay.Note != want {
		t.Errorf("English note %q\nwant %q", a.Pay.Note, want)
	}
	u.Header.Set("Accept-Language", "zh-CN")
	a = topup(t, u, map[string]any{"preset_amount": 10, "pay_method": "bank"})
	if !strings.HasPrefix(a.Pay.Note, "户名:Example Ltd;账号:6222 0000 1111;开户行:ICBC Haidian;转账备注请填写订单号 "+a.Order.OrderNo) {
		t.Errorf("Chinese note %q", a.Pay.Note)
	}
}
