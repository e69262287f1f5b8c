package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Rule is a ModelLimitRule: the allowances of one model of a plan. A zero
// limit means no limit on that measure; PeriodH is the length of the
// rolling window of RequestPeriod and TokenPeriod, in hours.
type Rule struct {
	PeriodH       int   `json:"period_h"`
	RequestPeriod int64 `json:"request_period,omitempty"`
	RequestWeek   int64 `json:"request_week,omitempty"`
	RequestMonth  int64 `json:"request_month,omitempty"`
	TokenPeriod   int64 `json:"token_period,omitempty"`
	TokenWeek     int64 `json:"token_week,omitempty"`
	TokenMonth    int64 `json:"token_month,omitempty"`
}

// Limits maps a model name to its rule: the models a plan serves.
type Limits map[string]Rule

// Bounds of a rule (spec: Limits, period_h default 5 hours).
const (
	DefaultPeriodH = 5
	// MaxPeriodH is 30 days: the month window is 30 days, so a longer
	// period could never bind before it.
	MaxPeriodH = planlimit.MaxPeriodHours
	// MaxLimitsBytes bounds the stored model_limits text, which must fit a
	// MySQL TEXT column.
	MaxLimitsBytes = textfield.TextColumnBytes
)

// ruleFields are the fields of a rule in their documented order.
var ruleFields = []string{"period_h", "request_period", "request_week", "request_month",
	"token_period", "token_week", "token_month"}

// Messages of model_limits. %q is a model or field name as the request
// wrote it.
const (
	MsgLimitsNotObject    = "model_limits 必须是 JSON 对象:键为模型名称,值为限额规则对象"
	MsgLimitsModelInvalid = "model_limits 中的模型名称必须是 1 到 191 个字符的文本,不能含控制字符"
	MsgLimitsModelRepeat  = "model_limits 中的模型 %q 重复"
	MsgLimitsRuleObject   = "model_limits 中模型 %q 的规则必须是 JSON 对象"
	MsgLimitsUnknownField = "model_limits 中模型 %q 的规则含有未知字段 %q,可用字段:period_h, request_period, request_week, request_month, token_period, token_week, token_month"
	MsgLimitsFieldRepeat  = "model_limits 中模型 %q 的字段 %q 重复"
	MsgLimitsNotInteger   = "model_limits 中模型 %q 的 %s 必须是整数"
	MsgLimitsNegative     = "model_limits 中模型 %q 的 %s 不能为负数"
	MsgLimitsTooLarge     = "model_limits 中模型 %q 的 %s 不能超过 1000000000000000"
	MsgLimitsPeriodH      = "model_limits 中模型 %q 的 period_h 必须在 1 到 720 之间"
	MsgLimitsTooLong      = "model_limits 不能超过 65535 字节"
)

// errLimits carries a message and its arguments out of the parser.
type errLimits struct{ p *Problem }

func (e errLimits) Error() string { return e.p.Error() }

func fail(format string, args ...any) error { return errLimits{&Problem{Format: format, Args: args}} }

// ParseLimits reads model_limits text: empty (or blank) is no models; else
// a JSON object whose keys are model names (trimmed) and whose values are
// rules with only the known fields, each a non-negative integer. An absent
// period_h is DefaultPeriodH. The first problem is returned, naming the
// model and the field.
func ParseLimits(text string) (Limits, *Problem) {
	text = strings.TrimSpace(text)
	limits := Limits{}
	if text == "" {
		return limits, nil
	}
	if len(text) > 1<<20 { // the body limit; a stored text is far below
		return nil, &Problem{Format: MsgLimitsTooLong}
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := parseObject(dec, limits); err != nil {
		var e errLimits
		if errors.As(err, &e) {
			return nil, e.p
		}
		return nil, &Problem{Format: MsgLimitsNotObject}
	}
	// Nothing may follow the object.
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Problem{Format: MsgLimitsNotObject}
	}
	return limits, nil
}

func parseObject(dec *json.Decoder, limits Limits) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fail(MsgLimitsNotObject)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		model := strings.TrimSpace(tok.(string))
		if model == "" || modelText.Validate(model) != "" {
			return fail(MsgLimitsModelInvalid)
		}
		if _, dup := limits[model]; dup {
			return fail(MsgLimitsModelRepeat, model)
		}
		rule, err := parseRule(dec, model)
		if err != nil {
			return err
		}
		limits[model] = rule
	}
	_, err := dec.Token() // the closing brace
	return err
}

func parseRule(dec *json.Decoder, model string) (Rule, error) {
	if tok, err := dec.Token(); err != nil {
		return Rule{}, err
	} else if tok != json.Delim('{') {
		return Rule{}, fail(MsgLimitsRuleObject, model)
	}
	values := map[string]int64{"period_h": DefaultPeriodH}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Rule{}, err
		}
		field := tok.(string)
		if !slices.Contains(ruleFields, field) {
			return Rule{}, fail(MsgLimitsUnknownField, model, field)
		}
		if seen[field] {
			return Rule{}, fail(MsgLimitsFieldRepeat, model, field)
		}
		seen[field] = true
		if tok, err = dec.Token(); err != nil {
			return Rule{}, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return Rule{}, fail(MsgLimitsNotInteger, model, field)
		}
		n, ok := parseCount(num)
		switch {
		case !ok:
			return Rule{}, fail(MsgLimitsNotInteger, model, field)
		case n < 0:
			return Rule{}, fail(MsgLimitsNegative, model, field)
		case field == "period_h" && (n < 1 || n > MaxPeriodH):
			return Rule{}, fail(MsgLimitsPeriodH, model)
		case n > planlimit.MaxAmount:
			return Rule{}, fail(MsgLimitsTooLarge, model, field)
		}
		values[field] = n
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Rule{}, err
	}
	return Rule{
		PeriodH:       int(values["period_h"]),
		RequestPeriod: values["request_period"],
		RequestWeek:   values["request_week"],
		RequestMonth:  values["request_month"],
		TokenPeriod:   values["token_period"],
		TokenWeek:     values["token_week"],
		TokenMonth:    values["token_month"],
	}, nil
}

// parseCount reads a JSON number as an integer: "1e3" and "5.0" are
// integers written another way, "1.5" is not. A value beyond int64 comes
// back as just above planlimit.MaxAmount (or -1), so the caller's bounds name it.
func parseCount(num json.Number) (int64, bool) {
	if n, err := strconv.ParseInt(num.String(), 10, 64); err == nil {
		return n, true
	}
	f, _ := strconv.ParseFloat(num.String(), 64) // a range error gives ±Inf
	switch {
	case math.IsInf(f, 1) || f > float64(planlimit.MaxAmount):
		return planlimit.MaxAmount + 1, true
	case math.IsInf(f, -1) || f < 0 && f == math.Trunc(f):
		return -1, true
	case f != math.Trunc(f):
		return 0, false
	}
	return int64(f), true
}

// Canonical is the stored form of limits: a JSON object with its models
// sorted, each rule with period_h and only the limits that are set.
func (l Limits) Canonical() string {
	if len(l) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]Rule(l)) // maps of plain structs always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// Models is the model names of l, sorted.
func (l Limits) Models() []string {
	names := make([]string, 0, len(l))
	for m := range l {
		names = append(names, m)
	}
	slices.Sort(names)
	return names
}

// Counted is r as the usage counters enforce it (internal/planlimit), with
// the plan's lifetime token allowance (its tokens field; 0 = none). The
// catalogue's bounds are the counters' (planlimit.MaxAmount, MaxPeriodH),
// so a rule the catalogue accepts is one the counters can keep.
func (r Rule) Counted(lifetimeTokens int64) planlimit.Rule {
	return planlimit.Rule{
		PeriodHours:   int64(r.PeriodH),
		RequestPeriod: r.RequestPeriod, RequestWeek: r.RequestWeek, RequestMonth: r.RequestMonth,
		TokenPeriod: r.TokenPeriod, TokenWeek: r.TokenWeek, TokenMonth: r.TokenMonth,
		LifetimeTokens: lifetimeTokens,
	}
}
