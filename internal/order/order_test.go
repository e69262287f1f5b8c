package order

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"testing"
	"time"
)

func TestNewOrderNo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 8*3600))
	got := NewOrderNo(PrefixTopup, now)
	if !regexp.MustCompile(`^TP20260101190405\d{6}$`).MatchString(got) {
		t.Fatalf("order no %q", got)
	}
}

func TestCents(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
		bad  bool
	}{
		{0, 0, false}, {0.01, 1, false}, {0.005, 1, false}, {0.004, 0, false}, {19.99, 1999, false},
		{0.1 + 0.2, 30, false}, {1e8, 1e10, false},
		{1e8 + 0.01, 0, true}, {-0.01, 0, true}, {math.NaN(), 0, true}, {math.Inf(1), 0, true}, {1e308, 0, true},
	} {
		got, err := Cents(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("Cents(%v) = %d, %v; want %d, bad %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestUpgradeCents(t *testing.T) {
	day := int64(86400)
	for _, c := range []struct {
		name                          string
		newP, paid, remaining, length int64
		want                          int64
	}{
		{"half of a 30-day plan left", 10000, 3000, 15 * day, 30 * day, 8500},
		{"the issue's example: 100 paid, 12 of 30 days left, 200 plan", 20000, 10000, 12 * day, 30 * day, 16000},
		{"nothing left", 10000, 3000, 0, 30 * day, 10000},
		{"negative remaining", 10000, 3000, -5, 30 * day, 10000},
		{"more left than the length", 10000, 3000, 90 * day, 30 * day, 7000},
		{"old paid more than new", 1000, 9000, 29 * day, 30 * day, 0},
		{"rounds half up to the fen", 1000, 1, day / 2, day, 1000 - 1}, // 0.5 fen → 1
		{"one third", 1000, 1000, 10 * day, 30 * day, 1000 - 333},
		{"nothing paid (admin grant, free)", 1000, 0, day, 30 * day, 1000},
		{"zero length", 1000, 500, day, 0, 1000},
		{"negative length", 1000, 500, day, -day, 1000},
		{"huge values do not overflow", 1e10, 1e10, 36500 * day, 36500 * day, 0},
		{"int64 limits", 1 << 62, 1 << 62, 1 << 62, 1 << 62, 0},
	} {
		if got := UpgradeCents(c.newP, c.paid, c.remaining, c.length); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

func TestUpgradeStillCovered(t *testing.T) {
	for _, c := range []struct {
		price, amount int64
		want          bool
	}{{100, 100, true}, {101, 100, true}, {102, 100, false}, {0, 0, true}, {50, 100, true}} {
		if got := UpgradeStillCovered(c.price, c.amount); got != c.want {
			t.Errorf("UpgradeStillCovered(%d, %d) = %v", c.price, c.amount, got)
		}
	}
}

func TestWholeFen(t *testing.T) {
	for _, c := range []struct {
		cny  float64
		want bool
	}{{0, true}, {100, true}, {0.01, true}, {19.99, true}, {0.1 + 0.2, true}, {0.005, false}, {1.234, false}, {-1, false}} {
		if got := WholeFen(c.cny); got != c.want {
			t.Errorf("WholeFen(%v) = %v", c.cny, got)
		}
	}
}

func TestValidatePresets(t *testing.T) {
	for _, c := range []struct {
		name    string
		presets []Preset
		want    string
	}{
		{"ok", []Preset{{10, 100}, {20, 0}}, ""},
		{"empty", nil, ""},
		{"zero amount", []Preset{{10, 1}, {0, 1}}, "第 2 项金额必须大于 0"},
		{"negative amount", []Preset{{-1, 1}}, "第 1 项金额必须大于 0"},
		{"rounds to zero", []Preset{{0.001, 1}}, "第 1 项金额必须大于 0"},
		{"too large", []Preset{{1e308, 1}}, "第 1 项金额超出上限 100000000 元"},
		{"negative bonus", []Preset{{1, -1}}, "第 1 项额度不能为负数"},
		{"bonus too large", []Preset{{1, math.MaxInt64}}, "第 1 项额度超出上限 1000000000000000"},
		{"duplicate", []Preset{{10, 1}, {5, 1}, {10.001, 2}}, "快捷金额重复:10.00 元已存在"},
		{"amount checked before duplicate", []Preset{{10, 1}, {10, 1}, {0, 1}}, "第 3 项金额必须大于 0"},
	} {
		got := ""
		if p := ValidatePresets(c.presets); p != nil {
			got = p.Error()
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestResolveTopup(t *testing.T) {
	on := Settings{Enabled: true, AllowCustom: true, ExchangeRate: 1_000_000, Presets: []Preset{{10, 12_000_000}}}
	for _, c := range []struct {
		name    string
		req     TopupRequest
		s       Settings
		channel bool
		want    Topup
		msg     string
	}{
		{"preset", TopupRequest{PresetAmount: 10, Amount: 3, PayMethod: "bank"}, on, true, Topup{1000, 12_000_000, 1_000_000}, ""},
		{"custom", TopupRequest{Amount: 2.5, PayMethod: "mobile_a"}, on, true, Topup{250, 2_500_000, 1_000_000}, ""},
		{"custom default rate", TopupRequest{Amount: 2.5, PayMethod: "mobile_b"}, Settings{Enabled: true, AllowCustom: true, ExchangeRate: 1}, true, Topup{250, 3, 1}, ""},
		{"no amount", TopupRequest{PayMethod: "bank"}, on, true, Topup{}, MsgAmountRequired},
		{"negative amount", TopupRequest{Amount: -1, PayMethod: "bank"}, on, true, Topup{}, MsgAmountNotPositive},
		{"negative preset", TopupRequest{PresetAmount: -10, PayMethod: "bank"}, on, true, Topup{}, MsgAmountNotPositive},
		{"negative amount with a preset", TopupRequest{PresetAmount: 10, Amount: -1, PayMethod: "bank"}, on, true, Topup{}, MsgAmountNotPositive},
		{"no method", TopupRequest{Amount: 1}, on, true, Topup{}, MsgPayMethodRequired},
		{"unknown method", TopupRequest{Amount: 1, PayMethod: "paypal"}, on, true, Topup{}, MsgPayMethodUnknown},
		{"offline", TopupRequest{Amount: 1, PayMethod: "offline"}, on, true, Topup{}, MsgPayMethodNotSelf},
		{"free", TopupRequest{Amount: 1, PayMethod: "free"}, on, true, Topup{}, MsgPayMethodNotSelf},
		{"no channel", TopupRequest{Amount: 1, PayMethod: "bank"}, on, false, Topup{}, MsgNoChannel},
		{"disabled", TopupRequest{Amount: 1, PayMethod: "bank"}, Settings{ExchangeRate: 1}, true, Topup{}, MsgTopupDisabled},
		{"preset unknown", TopupRequest{PresetAmount: 11, PayMethod: "bank"}, on, true, Topup{}, MsgPresetUnknown},
		{"custom off", TopupRequest{Amount: 1, PayMethod: "bank"}, Settings{Enabled: true, ExchangeRate: 1}, true, Topup{}, MsgCustomDisabled},
		{"rounds to zero", TopupRequest{Amount: 0.004, PayMethod: "bank"}, on, true, Topup{}, MsgAmountNotPositive},
		{"huge", TopupRequest{Amount: 1e308, PayMethod: "bank"}, on, true, Topup{}, MsgAmountTooLarge},
		{"bonus overflow", TopupRequest{Amount: 1e8, PayMethod: "bank"}, Settings{Enabled: true, AllowCustom: true, ExchangeRate: 1e15}, true, Topup{}, MsgBonusTooLarge},
	} {
		got, p := ResolveTopup(c.req, c.s, c.channel)
		msg := ""
		if p != nil {
			msg = p.Format
		}
		if got != c.want || msg != c.msg {
			t.Errorf("%s: got %+v %q, want %+v %q", c.name, got, msg, c.want, c.msg)
		}
	}
}

func TestSettingsWarnings(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Settings
		want []string
	}{
		{"sound", Settings{ExchangeRate: 1_000_000, Presets: []Preset{{10, 10_000_000}, {20, 25_000_000}}}, nil},
		{"rate 1", Settings{ExchangeRate: 1}, []string{MsgWarnRateOne}},
		{"credits 0", Settings{ExchangeRate: 1_000_000, Presets: []Preset{{10, 0}}}, []string{"第 1 项售价 10.00 元,到账 0 额度"}},
		{"credits less", Settings{ExchangeRate: 1_000_000, Presets: []Preset{{10, 12_000_000}, {10.5, 10_000_000}}},
			[]string{"第 2 项售价 10.50 元,只到账 10.00 元(按兑换比例应到账 10500000 额度)"}},
		{"rate 1 and a zero preset", Settings{ExchangeRate: 1, Presets: []Preset{{1, 0}, {1, 1}}},
			[]string{MsgWarnRateOne, "第 1 项售价 1.00 元,到账 0 额度"}},
	} {
		var got []string
		for _, w := range c.s.Warnings() {
			got = append(got, fmt.Sprintf(w.Format, w.Args...))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
