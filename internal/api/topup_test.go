package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/user"
)

// orderInfo is an order view as tests read it.
type orderInfo struct {
	ID         int64   `json:"id"`
	Type       int     `json:"type"`
	Source     int     `json:"source"`
	OrderNo    string  `json:"order_no"`
	UserID     int64   `json:"user_id"`
	PlanID     int64   `json:"plan_id"`
	PlanInfo   string  `json:"plan_info"`
	Amount     float64 `json:"amount"`
	BonusQuota int64   `json:"bonus_quota"`
	Mode       string  `json:"mode"`
	ReplacesID int64   `json:"replaces_id"`
	Status     int     `json:"status"`
	PayStatus  int     `json:"pay_status"`
	PayMethod  string  `json:"pay_method"`
	PayTradeNo string  `json:"pay_trade_no"`
	PayTime    int64   `json:"pay_time"`
}

type payInfo struct {
	Status  string `json:"status"`
	PayURL  string `json:"pay_url"`
	QRCode  string `json:"qr_code"`
	TradeNo string `json:"trade_no"`
	Note    string `json:"note"`
	Warning string `json:"warning"`
}

type topupAnswer struct {
	Success    bool      `json:"success"`
	Message    string    `json:"message"`
	Order      orderInfo `json:"order"`
	Amount     float64   `json:"amount"`
	BonusQuota int64     `json:"bonus_quota"`
	Pay        payInfo   `json:"pay"`
}

// enableBank turns the bank channel on with transfer instructions.
func enableBank(root *apptest.Client) {
	root.OK("PUT", "/api/setting/payment/bank", map[string]any{"enabled": true, "config": map[string]any{
		"account_name": "Example Ltd", "account_no": "6222 0000 1111", "bank_name": "ICBC", "branch": "Haidian", "notes": "put the order number in the remarks"}})
}

// topupOn enables top-up with a 10 CNY preset and custom amounts at the
// recommended rate.
func topupOn(root *apptest.Client) {
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 1_000_000,
		"presets": []map[string]any{{"amount": 10, "bonus_quota": 12_000_000}}})
}

func topup(t *testing.T, c *apptest.Client, body any) topupAnswer {
	t.Helper()
	r := c.OK("POST", "/api/topup/order", body)
	var a topupAnswer
	if err := json.Unmarshal(r.Raw, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestTopupOrderMessages(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	u, _ := e.NewUser("buyer", user.RoleUser)
	fail := func(body any, msg string) {
		t.Helper()
		u.Fail("POST", "/api/topup/order", body, http.StatusOK, msg)
	}
	e.Client().Fail("POST", "/api/topup/order", map[string]any{"amount": 1, "pay_method": "bank"}, http.StatusUnauthorized, "未登录")
	fail("{", "无效的参数")
	fail(`{"amount":"1"}`, "无效的参数")
	fail(map[string]any{"pay_method": "bank"}, "amount 或 preset_amount 至少传一个")
	fail(map[string]any{"amount": -5, "preset_amount": -1, "pay_method": "bank"}, "充值金额必须大于 0")
	fail(map[string]any{"amount": -5, "pay_method": "bank"}, "充值金额必须大于 0")
	fail(map[string]any{"amount": 0, "pay_method": "bank"}, "amount 或 preset_amount 至少传一个")
	fail(map[string]any{"amount": 1}, "pay_method 不能为空")
	fail(map[string]any{"amount": 1, "pay_method": "paypal"}, "不支持的支付方式")
	fail(map[string]any{"amount": 1, "pay_method": "offline"}, "自助充值仅支持 wechat / the service / bank")
	fail(map[string]any{"amount": 1, "pay_method": "free"}, "自助充值仅支持 wechat / the service / bank")
	fail(map[string]any{"amount": 1, "pay_method": "bank"}, "系统尚未开通任何支付通道,请设置后开启支付")
	enableBank(root)
	fail(map[string]any{"amount": 1, "pay_method": "bank"}, "充值功能未开启")
	root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "presets": []map[string]any{{"amount": 10, "bonus_quota": 5}}})
	fail(map[string]any{"preset_amount": 20, "pay_method": "bank"}, "快捷金额未配置")
	fail(map[string]any{"amount": 20, "pay_method": "bank"}, "未开启自定义金额")
	topupOn(root)
	fail(map[string]any{"amount": 0.004, "pay_method": "bank"}, "充值金额必须大于 0")
	fail(map[string]any{"amount": 1e308, "pay_method": "bank"}, order.MsgAmountTooLarge)
	fail(map[string]any{"amount": 1, "pay_method": "bank\x00"}, "不支持的支付方式")

	// Nothing above created an order.
	var list []orderInfo
	u.OK("GET", "/api/order/self", nil).Decode(t, &list)
	if len(list) != 0 {
		t.Fatalf("refused top-ups created orders: %+v", list)
	}

	// Preset: its bonus; the preset wins over amount (rule 2).
	a := topup(t, u, map[string]any{"preset_amount": 10, "amount": 3, "pay_method": "bank"})
	if a.Amount != 10 || a.BonusQuota != 12_000_000 || a.Order.Type != order.TypeTopup || a.Order.Status != 0 ||
		!strings.HasPrefix(a.Order.OrderNo, "TP") || len(a.Order.OrderNo) != 22 || a.Pay.Status != "success" ||
		!strings.Contains(a.Pay.Note, "6222 0000 1111") || !strings.Contains(a.Pay.Note, a.Order.OrderNo) {
		t.Fatalf("preset top-up: %+v", a)
	}
	var info map[string]any
	_ = json.Unmarshal([]byte(a.Order.PlanInfo), &info)
	if info["amount"] != 10.0 || info["bonus_quota"] != 12e6 || info["exchange_rate"] != 1e6 {
		t.Fatalf("plan_info %s", a.Order.PlanInfo)
	}
	// Custom: amount × rate.
	a = topup(t, u, map[string]any{"amount": 2.5, "pay_method": "bank"})
	if a.Amount != 2.5 || a.BonusQuota != 2_500_000 {
		t.Fatalf("custom top-up: %+v", a)
	}
	// A channel that is off, or without a provider: the order is created
	// with a warning.
	a = topup(t, u, map[string]any{"amount": 1, "pay_method": "mobile_a"})
	if a.Pay.Status != "warning" || a.Pay.Warning == "" || a.Order.ID == 0 {
		t.Fatalf("channel off: %+v", a)
	}
}

func TestTopupSettingsMessages(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	type settings struct {
		Enabled      bool           `json:"enabled"`
		AllowCustom  bool           `json:"allow_custom"`
		ExchangeRate int64          `json:"exchange_rate"`
		Presets      []order.Preset `json:"presets"`
		QuotaPerUnit int64          `json:"quota_per_unit"`
	}
	got := apptest.OKData[settings](root, "GET", "/api/setting/topup", nil)
	if got.Enabled || got.AllowCustom || got.ExchangeRate != 1 || got.Presets == nil || len(got.Presets) != 0 || got.QuotaPerUnit != 1_000_000 {
		t.Fatalf("defaults: %+v", got)
	}
	topupOn(root)
	before := apptest.OKData[settings](root, "GET", "/api/setting/topup", nil)
	fail := func(body any, msg string) {
		t.Helper()
		root.Fail("PUT", "/api/setting/topup", body, http.StatusOK, msg)
		if after := apptest.OKData[settings](root, "GET", "/api/setting/topup", nil); after.ExchangeRate != before.ExchangeRate || len(after.Presets) != len(before.Presets) || !after.Enabled {
			t.Fatalf("a refused save changed the settings: %+v", after)
		}
	}
	p := func(items ...[2]float64) []map[string]any {
		out := []map[string]any{}
		for _, it := range items {
			out = append(out, map[string]any{"amount": it[0], "bonus_quota": int64(it[1])})
		}
		return out
	}
	fail("{", "无效的参数")
	fail(map[string]any{"exchange_rate": 1.5}, "无效的参数")
	fail(map[string]any{"exchange_rate": 1, "presets": p([2]float64{5, 1}, [2]float64{0, 1})}, "第 2 项金额必须大于 0")
	fail(map[string]any{"exchange_rate": 1, "presets": p([2]float64{-5, 1})}, "第 1 项金额必须大于 0")
	fail(map[string]any{"exchange_rate": 1, "presets": p([2]float64{5, -1})}, "第 1 项额度不能为负数")
	fail(map[string]any{"exchange_rate": 1, "presets": p([2]float64{5, 1}, [2]float64{5.001, 2})}, "快捷金额重复:5.00 元已存在")
	fail(map[string]any{"exchange_rate": 0}, "兑换比例必须大于 0")
	fail(map[string]any{"exchange_rate": -3}, "兑换比例必须大于 0")
	fail(map[string]any{"exchange_rate": 1, "presets": p([2]float64{1e308, 1})}, "第 1 项金额超出上限 100000000 元")

	// A list replaces the old one; a low rate with custom amounts warns.
	r := root.OK("PUT", "/api/setting/topup", map[string]any{"enabled": true, "allow_custom": true, "exchange_rate": 1,
		"presets": p([2]float64{1, 1_000_000}, [2]float64{2, 2_100_000})})
	if !strings.Contains(r.Message, "1000000") {
		t.Fatalf("low rate saved without a warning: %q", r.Message)
	}
	got = apptest.OKData[settings](root, "GET", "/api/setting/topup", nil)
	if len(got.Presets) != 2 || got.Presets[1].BonusQuota != 2_100_000 || got.ExchangeRate != 1 {
		t.Fatalf("after replace: %+v", got)
	}
	if r := root.OK("PUT", "/api/setting/topup", map[string]any{"allow_custom": true, "exchange_rate": 1_000_000}); r.Message != "已保存" {
		t.Fatalf("saved message %q", r.Message)
	}
	u, _ := e.NewUser("plain", user.RoleUser)
	u.Fail("GET", "/api/setting/topup", nil, http.StatusOK, "无权进行此操作,权限不足")
	admin, _ := e.NewUser("admin1", user.RoleAdmin)
	admin.Fail("PUT", "/api/setting/topup", map[string]any{"enabled": true}, http.StatusOK, "无权进行此操作,权限不足")
}
