package order

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/modelgate/modelgate/internal/payment"
	"github.com/modelgate/modelgate/internal/pricing"
)

// Messages of a top-up order, exactly as the spec's Errors table.
const (
	MsgAmountRequired    = "amount 或 preset_amount 至少传一个"
	MsgPayMethodRequired = "pay_method 不能为空"
	MsgPayMethodUnknown  = "不支持的支付方式"
	MsgPayMethodNotSelf  = "自助充值仅支持 wechat / the service / bank"
	MsgNoChannel         = "系统尚未开通任何支付通道,请设置后开启支付"
	MsgTopupDisabled     = "充值功能未开启"
	MsgPresetUnknown     = "快捷金额未配置"
	MsgCustomDisabled    = "未开启自定义金额"
	MsgAmountNotPositive = "充值金额必须大于 0"
	MsgOrderNoFailed     = "生成订单号失败,请重试"
)

// Messages of the top-up settings, the spec's four and this service's own.
const (
	MsgPresetAmount    = "第 %d 项金额必须大于 0"
	MsgPresetBonus     = "第 %d 项额度不能为负数"
	MsgPresetDuplicate = "快捷金额重复:%s 元已存在"
	MsgRateNotPositive = "兑换比例必须大于 0"
	// Not in the spec: limits that keep the money arithmetic exact.
	MsgPresetAmountTooLarge = "第 %d 项金额超出上限 100000000 元"
	MsgPresetBonusTooLarge  = "第 %d 项额度超出上限 1000000000000000"
	MsgRateTooLarge         = "兑换比例超出上限 1000000000000000"
	MsgTooManyPresets       = "快捷金额最多 50 项"
	MsgAmountTooLarge       = "充值金额超出上限 100000000 元"
	MsgBonusTooLarge        = "充值额度超出上限 1000000000000000"
)

// MaxPresets bounds the preset list.
const MaxPresets = 50

// Preset is a quick amount (spec: TopupPreset).
type Preset struct {
	Amount     float64 `json:"amount"`
	BonusQuota int64   `json:"bonus_quota"`
}

// Settings are the top-up settings (spec: Top-up settings).
type Settings struct {
	Enabled      bool     `json:"enabled"`
	AllowCustom  bool     `json:"allow_custom"`
	ExchangeRate int64    `json:"exchange_rate"`
	Presets      []Preset `json:"presets"`
}

// Problem is a refusal with its spec message; Args fill a format.
type Problem struct {
	Format string
	Args   []any
}

func (p *Problem) Error() string { return fmt.Sprintf(p.Format, p.Args...) }

func problem(format string, args ...any) *Problem { return &Problem{Format: format, Args: args} }

// ValidatePresets checks presets in order (spec: Top-up settings,
// validation on save): each amount > 0 (and at most MaxAmountCents), each
// bonus_quota ≥ 0 (and at most pricing.MaxBalance), then no two amounts
// equal to the fen.
func ValidatePresets(presets []Preset) *Problem {
	if len(presets) > MaxPresets {
		return problem(MsgTooManyPresets)
	}
	seen := make([]int64, 0, len(presets))
	for i, p := range presets {
		n := i + 1
		if math.IsNaN(p.Amount) || p.Amount <= 0 {
			return problem(MsgPresetAmount, n)
		}
		cents, err := Cents(p.Amount)
		if err != nil {
			return problem(MsgPresetAmountTooLarge, n)
		}
		if cents <= 0 { // 0.001 CNY rounds to nothing
			return problem(MsgPresetAmount, n)
		}
		if p.BonusQuota < 0 {
			return problem(MsgPresetBonus, n)
		}
		if p.BonusQuota > pricing.MaxBalance {
			return problem(MsgPresetBonusTooLarge, n)
		}
		seen = append(seen, cents)
	}
	for i, c := range seen {
		if slices.Contains(seen[:i], c) {
			return problem(MsgPresetDuplicate, strconv.FormatFloat(CNY(c), 'f', 2, 64))
		}
	}
	return nil
}

// ValidateRate checks exchange_rate: > 0 (spec) and at most
// pricing.MaxBalance.
func ValidateRate(rate int64) *Problem {
	if rate <= 0 {
		return problem(MsgRateNotPositive)
	}
	if rate > pricing.MaxBalance {
		return problem(MsgRateTooLarge)
	}
	return nil
}

// Validate checks settings the way a save does: presets first, then the
// rate (spec order).
func (s Settings) Validate() *Problem {
	if p := ValidatePresets(s.Presets); p != nil {
		return p
	}
	return ValidateRate(s.ExchangeRate)
}

// LowRate is the exchange rate under which saving allow_custom=true warns:
// 1 CNY then credits less than 1% of the balance 1 CNY buys elsewhere
// (pricing.QuotaPerUnit quota per CNY).
const LowRate = pricing.QuotaPerUnit / 100

// TopupRequest is the body of POST /api/topup/order.
type TopupRequest struct {
	Amount       float64 `json:"amount"`
	PresetAmount float64 `json:"preset_amount"`
	PayMethod    string  `json:"pay_method"`
}

// Topup is a resolved top-up: what is charged and what is credited.
type Topup struct {
	AmountCents  int64
	BonusQuota   int64
	ExchangeRate int64
}

// ResolveTopup applies the spec's rules 1–3 and its Errors table in the
// table's order. anyChannel says whether at least one payment channel is
// enabled.
func ResolveTopup(req TopupRequest, s Settings, anyChannel bool) (Topup, *Problem) {
	if req.Amount < 0 || req.PresetAmount < 0 {
		// Sent, but not an amount one can pay (issue 26, §4).
		return Topup{}, problem(MsgAmountNotPositive)
	}
	if !(req.Amount > 0) && !(req.PresetAmount > 0) {
		return Topup{}, problem(MsgAmountRequired)
	}
	switch req.PayMethod {
	case "":
		return Topup{}, problem(MsgPayMethodRequired)
	case payment.MethodWechat, payment.MethodAlipay, payment.MethodBank:
	case payment.MethodOffline, payment.MethodFree:
		return Topup{}, problem(MsgPayMethodNotSelf)
	default:
		return Topup{}, problem(MsgPayMethodUnknown)
	}
	if !anyChannel {
		return Topup{}, problem(MsgNoChannel)
	}
	if !s.Enabled {
		return Topup{}, problem(MsgTopupDisabled)
	}
	if req.PresetAmount > 0 {
		want, err := Cents(req.PresetAmount)
		for _, p := range s.Presets {
			if c, e := Cents(p.Amount); err == nil && e == nil && c == want && c > 0 {
				return Topup{AmountCents: c, BonusQuota: p.BonusQuota, ExchangeRate: s.ExchangeRate}, nil
			}
		}
		return Topup{}, problem(MsgPresetUnknown)
	}
	if !s.AllowCustom {
		return Topup{}, problem(MsgCustomDisabled)
	}
	cents, err := Cents(req.Amount)
	if err != nil {
		return Topup{}, problem(MsgAmountTooLarge)
	}
	if cents <= 0 {
		return Topup{}, problem(MsgAmountNotPositive)
	}
	bonus, ok := CustomBonus(cents, s.ExchangeRate)
	if !ok {
		return Topup{}, problem(MsgBonusTooLarge)
	}
	return Topup{AmountCents: cents, BonusQuota: bonus, ExchangeRate: s.ExchangeRate}, nil
}

// CustomBonus is amount × exchange_rate (spec rule 3) for an amount in fen,
// rounded to the nearest quota, exactly (no float). ok is false when it
// exceeds pricing.MaxBalance.
func CustomBonus(cents, rate int64) (int64, bool) {
	v := new(big.Int).Mul(big.NewInt(cents), big.NewInt(rate))
	v.Add(v, big.NewInt(50)).Quo(v, big.NewInt(100))
	if !v.IsInt64() || v.Int64() > pricing.MaxBalance {
		return 0, false
	}
	return v.Int64(), true
}

// Warnings of top-up settings that save but sell less than they charge
// (issue 26, §5). Preset numbers count from 1.
const (
	MsgWarnPresetZero  = "第 %d 项售价 %.2f 元,到账 0 额度"
	MsgWarnPresetBelow = "第 %d 项售价 %.2f 元,只到账 %.2f 元(按兑换比例应到账 %d 额度)"
	MsgWarnRateOne     = "兑换比例为 1:每支付 1 元只到账 1 额度(0.000001 元);1 元余额是 1000000 额度"
)

// Warnings lists what in s sells less than it charges: a preset that
// credits 0, a preset that credits less than its price at the exchange
// rate (amount × rate), and a rate of 1. Each is a format and its
// arguments, for the answer's warnings.
func (s Settings) Warnings() []Problem {
	var out []Problem
	if s.ExchangeRate == 1 {
		out = append(out, Problem{Format: MsgWarnRateOne})
	}
	for i, p := range s.Presets {
		cents, err := Cents(p.Amount)
		if err != nil {
			continue // refused by Validate
		}
		due, ok := CustomBonus(cents, s.ExchangeRate)
		switch {
		case p.BonusQuota == 0:
			out = append(out, Problem{Format: MsgWarnPresetZero, Args: []any{i + 1, CNY(cents)}})
		case ok && p.BonusQuota < due:
			out = append(out, Problem{Format: MsgWarnPresetBelow,
				Args: []any{i + 1, CNY(cents), float64(p.BonusQuota) / pricing.QuotaPerUnit, due}})
		}
	}
	return out
}
