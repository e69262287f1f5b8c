// Package plan holds the rules of plans and subscriptions: what a valid
// plan is (its fields, its model_limits and default_model, spec: Plan
// rules), which model a plan serves for a requested one, and the status of
// a subscription at a given time. It is pure: the store keeps the rows, the
// api and the relay feed them in here.
package plan

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Plan statuses (spec: Plan status).
const (
	StatusUnlisted = 0
	StatusListed   = 1
)

// Bounds of the plan fields.
const (
	MaxNameLength   = 64
	MinDurationDays = 1
	// MaxDurationDays is ten years: longer is a typo, and start + days
	// stays far from any overflow.
	MaxDurationDays = 3650
	MaxFeatures     = 50
)

// Messages of the plan fields.
const (
	MsgNameLength      = "套餐名称长度必须在 1 到 64 个字符之间"
	MsgPriceInvalid    = "套餐价格必须是 0 到 1000000 之间的有限数"
	MsgPriceNotFen     = "套餐价格必须是整分(最多两位小数)"
	MsgTokensRange     = "套餐 tokens 必须在 0 到 1000000000000000 之间"
	MsgDurationRange   = "套餐有效天数必须在 1 到 3650 之间"
	MsgStatusInvalid   = "套餐状态只能是 1(上架)或 0(下架)"
	MsgDefaultModel    = "默认模型 %q 必须是 model_limits 中配置的模型"
	MsgFeaturesInvalid = "features 必须是字符串(每行一项)或字符串数组"
	MsgFeaturesTooMany = "features 不能超过 50 项"
)

// Text rules of the stored fields (columns: store.Plan).
var (
	nameText         = textfield.Field{Label: "套餐名称", MaxChars: MaxNameLength}
	descriptionText  = textfield.Field{Label: "套餐描述", MaxChars: 2000, Multiline: true}
	durationTextText = textfield.Field{Label: "有效期说明", MaxChars: 64}
	featureText      = textfield.Field{Label: "套餐特性", MaxChars: 200}
	modelText        = textfield.Field{Label: "模型名称", MaxChars: pricing.MaxModelNameLength}
	defaultModelText = textfield.Field{Label: "默认模型", MaxChars: pricing.MaxModelNameLength}
)

// Problem is a validation failure: a message or a format with its
// arguments, which the api renders in the client's language.
type Problem struct {
	Format string
	Args   []any
}

func (p *Problem) Error() string { return fmt.Sprintf(p.Format, p.Args...) }

// problem wraps a plain message; "" is no problem.
func problem(msg string) *Problem {
	if msg == "" {
		return nil
	}
	return &Problem{Format: msg}
}

// Plan is what the rules need of a plan.
type Plan struct {
	Name         string
	Price        float64
	Tokens       int64
	Limits       Limits
	DefaultModel string
	Description  string
	Features     []string
	Sort         int
	Status       int
	DurationDays int
	DurationText string
	Recommended  bool
}

// Validate checks every field of p, which the caller has normalised
// (names trimmed, model_limits parsed), and rule 3: default_model is empty
// or a model of the limits.
func (p *Plan) Validate() *Problem {
	if n := utf8.RuneCountInString(p.Name); n < 1 || n > MaxNameLength {
		return problem(MsgNameLength)
	}
	checks := []string{
		nameText.Validate(p.Name),
		priceProblem(p.Price),
		tokensProblem(p.Tokens),
		durationProblem(p.DurationDays),
		statusProblem(p.Status),
		descriptionText.Validate(p.Description),
		durationTextText.Validate(p.DurationText),
		defaultModelText.Validate(p.DefaultModel),
	}
	for _, msg := range checks {
		if msg != "" {
			return problem(msg)
		}
	}
	if len(p.Limits.Canonical()) > MaxLimitsBytes {
		return problem(MsgLimitsTooLong)
	}
	if p.DefaultModel != "" {
		if _, ok := p.Limits[p.DefaultModel]; !ok {
			return &Problem{Format: MsgDefaultModel, Args: []any{p.DefaultModel}}
		}
	}
	return nil
}

func priceProblem(v float64) string {
	if !(v >= 0 && v <= pricing.MaxPrice) { // also refuses NaN
		return MsgPriceInvalid
	}
	if !order.WholeFen(v) { // an order is charged in whole fen
		return MsgPriceNotFen
	}
	return ""
}

func tokensProblem(n int64) string {
	if n < 0 || n > planlimit.MaxAmount {
		return MsgTokensRange
	}
	return ""
}

func durationProblem(days int) string {
	if days < MinDurationDays || days > MaxDurationDays {
		return MsgDurationRange
	}
	return ""
}

func statusProblem(s int) string {
	if s != StatusListed && s != StatusUnlisted {
		return MsgStatusInvalid
	}
	return ""
}

// Serve applies plan rules 1 and 2 to a requested model: a model of the
// limits is served as itself; another is served as default_model when it
// is set; otherwise the plan cannot serve it (the relay answers 422).
func (p *Plan) Serve(model string) (served string, ok bool) {
	if _, in := p.Limits[model]; in {
		return model, true
	}
	if p.DefaultModel != "" {
		return p.DefaultModel, true
	}
	return "", false
}

// NormalizeName trims a plan name.
func NormalizeName(name string) string { return strings.TrimSpace(name) }
