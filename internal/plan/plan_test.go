package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/planlimit"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		text      string
		canonical string // "" when the text fails
		format    string
	}{
		{``, `{}`, ""},
		{`{}`, `{}`, ""},
		{` {"b":{"request_period":10},"a":{}} `, `{"a":{"period_h":5},"b":{"period_h":5,"request_period":10}}`, ""},
		{`{" gpt ":{"period_h":3,"token_month":1e3,"request_week":5.0}}`, `{"gpt":{"period_h":3,"request_week":5,"token_month":1000}}`, ""},
		{`{"m":{"request_period":0}}`, `{"m":{"period_h":5}}`, ""},
		{`{"m":{"token_week":1000000000000000}}`, `{"m":{"period_h":5,"token_week":1000000000000000}}`, ""},
		{`{"m":{"token_week":1000000000000001}}`, "", MsgLimitsTooLarge},
		{`not json`, "", MsgLimitsNotObject},
		{`[]`, "", MsgLimitsNotObject},
		{`null`, "", MsgLimitsNotObject},
		{`"x"`, "", MsgLimitsNotObject},
		{`{"m":{}} {}`, "", MsgLimitsNotObject},
		{`{"m":{}`, "", MsgLimitsNotObject},
		{`{"":{}}`, "", MsgLimitsModelInvalid},
		{`{"  ":{}}`, "", MsgLimitsModelInvalid},
		{`{"a\u0000":{}}`, "", MsgLimitsModelInvalid},
		{`{"` + strings.Repeat("m", 192) + `":{}}`, "", MsgLimitsModelInvalid},
		{`{"m":{}," m":{}}`, "", MsgLimitsModelRepeat},
		{`{"m":5}`, "", MsgLimitsRuleObject},
		{`{"m":[]}`, "", MsgLimitsRuleObject},
		{`{"m":{"requests":1}}`, "", MsgLimitsUnknownField},
		{`{"m":{"period_h":1,"period_h":2}}`, "", MsgLimitsFieldRepeat},
		{`{"m":{"request_period":"5"}}`, "", MsgLimitsNotInteger},
		{`{"m":{"request_period":null}}`, "", MsgLimitsNotInteger},
		{`{"m":{"request_period":1.5}}`, "", MsgLimitsNotInteger},
		{`{"m":{"request_period":{}}}`, "", MsgLimitsNotInteger},
		{`{"m":{"token_week":-1}}`, "", MsgLimitsNegative},
		{`{"m":{"token_week":-1e30}}`, "", MsgLimitsNegative},
		{`{"m":{"token_week":1000000000000000001}}`, "", MsgLimitsTooLarge},
		{`{"m":{"token_week":9223372036854775808}}`, "", MsgLimitsTooLarge},
		{`{"m":{"token_week":1e400}}`, "", MsgLimitsTooLarge},
		{`{"m":{"period_h":0}}`, "", MsgLimitsPeriodH},
		{`{"m":{"period_h":721}}`, "", MsgLimitsPeriodH},
		{`{"m":{"period_h":-3}}`, "", MsgLimitsNegative},
	}
	for _, tt := range tests {
		got, p := ParseLimits(tt.text)
		if tt.format != "" {
			if p == nil || p.Format != tt.format {
				t.Errorf("ParseLimits(%q) = %v, %v; want problem %q", tt.text, got, p, tt.format)
			}
			continue
		}
		if p != nil {
			t.Errorf("ParseLimits(%q): %v", tt.text, p)
			continue
		}
		if c := got.Canonical(); c != tt.canonical {
			t.Errorf("ParseLimits(%q).Canonical() = %s, want %s", tt.text, c, tt.canonical)
		}
		// The canonical form parses back to itself.
		again, p := ParseLimits(got.Canonical())
		if p != nil || again.Canonical() != tt.canonical {
			t.Errorf("reparse of %s = %s, %v", tt.canonical, again.Canonical(), p)
		}
	}
}

func TestParseLimitsNamesModelAndField(t *testing.T) {
	_, p := ParseLimits(`{"gpt-4o":{"request_week":-2}}`)
	if p == nil || p.Error() != `model_limits 中模型 "gpt-4o" 的 request_week 不能为负数` {
		t.Fatalf("problem = %v", p)
	}
}

func valid() Plan {
	limits, _ := ParseLimits(`{"a":{},"b":{"request_period":3}}`)
	return Plan{Name: "Pro", Price: 9.9, Tokens: 0, Limits: limits, DurationDays: 30, Status: StatusListed}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		change func(*Plan)
		want   string
	}{
		{func(p *Plan) {}, ""},
		{func(p *Plan) { p.DefaultModel = "b" }, ""},
		{func(p *Plan) { p.DefaultModel = "c" }, MsgDefaultModel},
		{func(p *Plan) { p.Limits = Limits{}; p.DefaultModel = "a" }, MsgDefaultModel},
		{func(p *Plan) { p.Name = "" }, MsgNameLength},
		{func(p *Plan) { p.Name = strings.Repeat("套", 65) }, MsgNameLength},
		{func(p *Plan) { p.Name = strings.Repeat("套", 64) }, ""},
		{func(p *Plan) { p.Name = "a\x00" }, "%s 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{func(p *Plan) { p.Price = -0.01 }, MsgPriceInvalid},
		{func(p *Plan) { p.Price = 1e6 + 1 }, MsgPriceInvalid},
		{func(p *Plan) { p.Tokens = -1 }, MsgTokensRange},
		{func(p *Plan) { p.DurationDays = 0 }, MsgDurationRange},
		{func(p *Plan) { p.DurationDays = 3651 }, MsgDurationRange},
		{func(p *Plan) { p.Status = 2 }, MsgStatusInvalid},
		{func(p *Plan) { p.Description = "line 1\nline 2" }, ""},
		{func(p *Plan) { p.DurationText = "a\nb" }, "%s 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
	}
	for i, tt := range tests {
		p := valid()
		tt.change(&p)
		got := p.Validate()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("case %d: %v", i, got)
		case tt.want != "" && (got == nil || !strings.HasPrefix(tt.want, "%s") && got.Format != tt.want):
			t.Errorf("case %d: got %v, want %q", i, got, tt.want)
		}
	}
}

func TestServe(t *testing.T) {
	p := valid()
	if m, ok := p.Serve("b"); !ok || m != "b" {
		t.Errorf("Serve(b) = %q, %v", m, ok)
	}
	if m, ok := p.Serve("z"); ok {
		t.Errorf("Serve(z) without default = %q, %v; want not servable", m, ok)
	}
	p.DefaultModel = "a"
	if m, ok := p.Serve("z"); !ok || m != "a" {
		t.Errorf("Serve(z) with default a = %q, %v", m, ok)
	}
}

func TestFeatures(t *testing.T) {
	tests := []struct {
		raw  string
		want []string
		bad  bool
	}{
		{``, []string{}, false},
		{`null`, []string{}, false},
		{`"a\n\n  b \r\nc\r"`, []string{"a", "b", "c"}, false},
		{`""`, []string{}, false},
		{`[" x ","","y"]`, []string{"x", "y"}, false},
		{`[1]`, nil, true},
		{`5`, nil, true},
		{`{}`, nil, true},
		{`["a\nb"]`, nil, true},
		{`"` + strings.Repeat("x\n", 51) + `"`, nil, true},
	}
	for _, tt := range tests {
		got, p := ParseFeatures(json.RawMessage(tt.raw))
		if tt.bad != (p != nil) || !tt.bad && !slices.Equal(got, tt.want) {
			t.Errorf("ParseFeatures(%s) = %q, %v", tt.raw, got, p)
		}
	}
	if got := DecodeFeatures(EncodeFeatures([]string{"a", "b"})); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("round trip = %q", got)
	}
	if got := EncodeFeatures(nil); got != "[]" {
		t.Errorf("EncodeFeatures(nil) = %s", got)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		stored   int
		end, now int64
		want     int
	}{
		{SubActive, 100, 99, SubActive},
		{SubActive, 100, 100, SubExpired},
		{SubCancelled, 100, 200, SubCancelled},
		{SubExpired, 100, 50, SubExpired},
	}
	for _, tt := range tests {
		if got := Status(tt.stored, tt.end, tt.now); got != tt.want {
			t.Errorf("Status(%d, %d, %d) = %d, want %d", tt.stored, tt.end, tt.now, got, tt.want)
		}
	}
	if ValidateBillingType("token") != "" || ValidateBillingType("request") != "" || ValidateBillingType("TOKEN") == "" {
		t.Error("billing types")
	}
	if ValidateEndTime(10, 10) == "" || ValidateEndTime(10, 11) != "" || ValidateEndTime(0, MaxEndTime+1) == "" {
		t.Error("end times")
	}
	if d, msg := SubscriptionDays(0, 30); d != 30 || msg != "" {
		t.Error("days from plan")
	}
	if _, msg := SubscriptionDays(3651, 30); msg == "" {
		t.Error("days too many")
	}
}

// Every rule the catalogue accepts, at its bounds, is one the usage
// counters accept: a plan must never be sold with a limit they refuse.
func TestCountedRulesAreValidForTheCounters(t *testing.T) {
	for _, text := range []string{
		`{"m":{}}`,
		`{"m":{"period_h":1,"request_period":1}}`,
		`{"m":{"period_h":720,"request_period":1000000000000000,"request_week":1000000000000000,"request_month":1000000000000000,"token_period":1000000000000000,"token_week":1000000000000000,"token_month":1000000000000000}}`,
	} {
		limits, err := ParseLimits(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		for model, r := range limits {
			c := r.Counted(planlimit.MaxAmount)
			if err := c.Validate(); err != nil {
				t.Errorf("%s: model %s: the counters refuse %+v: %v", text, model, c, err)
			}
			if c.PeriodHours != int64(r.PeriodH) || c.TokenMonth != r.TokenMonth || c.LifetimeTokens != planlimit.MaxAmount {
				t.Errorf("%s: Counted = %+v from %+v", text, c, r)
			}
		}
	}
}
