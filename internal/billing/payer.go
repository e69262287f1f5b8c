package billing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/planlimit"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/store"
)

// Who pays for a relayed call (docs/architecture.md, Money: who pays). The
// relay describes the call (Call), asks a Payer to reserve for it before
// forwarding and gets a Charge; after the call it gives the same Payer the
// outcome, and the Payer bills it or gives the reservation back. The
// balance (Balance) pays with money; the subscriptions (Plans) with usage
// counters, and go before it.

// Kind is how an endpoint's cost depends on its completion.
type Kind uint8

const (
	KindChat       Kind = iota // chat, completions, Anthropic Messages: a completion limit bounds the answer
	KindResponses              // the Responses API: the same, with a least limit of minResponsesOutput
	KindEmbeddings             // no completion at all
	KindOther                  // images and audio: per-request prices or local counts
)

// Call is what the relay knows about a call before forwarding it: who
// calls, at what price, and how large the call can be. It also carries
// the consume log's labels, so a payer writes the whole row.
type Call struct {
	UserID       int64
	TokenID      int64
	TokenLimited bool // the key has its own quota

	Price    pricing.Price
	Discount float64 // the group's multiplier

	// PromptBound is an upper bound of the prompt's tokens (the relay
	// computes it from the body); MaxTokens the completion limit the client
	// asked for (0: none), per choice; Choices the completions asked (n).
	PromptBound int64
	MaxTokens   int64
	Choices     int64
	Kind        Kind
	Multipart   bool // an upload: no completion limit can be set upstream
	// DefaultMaxTokens is the least completion the estimate assumes
	// (option DefaultMaxTokens); Strict says the settled cost never exceeds
	// the hold (option BillingOverrunAllowed off).
	DefaultMaxTokens int64
	Strict           bool
	// OutputLimit is the most the model writes in one completion, when
	// known (0: unknown; the model price's max_output_tokens): an open call
	// holds it in place of DefaultMaxTokens, on the balance and on a plan.
	OutputLimit int64

	// SubscriptionID, PlanID and Rule are the subscription asked to pay
	// (the Plans payer) and its plan's limits of Model; zero for the
	// balance.
	SubscriptionID, PlanID int64
	Rule                   planlimit.Rule

	// The consume log's labels.
	Username, Group, TokenName, Model string
	RequestID, SessionKey             string
	Stream                            bool
	Start                             time.Time
}

// Outcome is how a call ended: ChannelID 0 when nothing billable happened
// (the reservation is given back), else the channel that answered and the
// usage it reported (Estimated: counted locally, the upstream reported none).
type Outcome struct {
	ChannelID int64
	Usage     pricing.Usage
	Estimated bool
}

// Charge is one call's reservation, answered by the payer that settles it.
type Charge struct {
	Payer Payer
	// Hold is the money held (the balance payer).
	Hold Hold
	// CompletionLimit, when > 0, is the completion size per choice the
	// reservation buys: the relay sends it upstream as the call's limit.
	CompletionLimit int64
	// Covered: the reservation covers the model's whole output
	// (CompletionLimit is Call.OutputLimit), so an upstream that needs no
	// limit (the OpenAI API) gets none and the body stays as sent; one
	// that needs one (Anthropic's max_tokens) gets exactly the model's.
	Covered bool
	// Uncollected is what the settled cost exceeded the hold by (strict
	// billing): not charged, noted in the consume log.
	Uncollected int64
	// Usage is the plan usage held (the Plans payer); its Decision has the
	// tightest limits for the rate-limit headers. usage is the slice it
	// was held from (shared server databases).
	Usage store.UsageReservation
	usage *usageSlice
	// Cost is the quota the settled call cost (balance) or would have cost
	// at balance prices (a plan), set by Settle; 0 when nothing was billed.
	// Metrics read it.
	Cost int64
}

// Reserved reports whether the charge holds a reservation to settle.
func (ch *Charge) Reserved() bool { return ch.Payer != nil }

// Payer is one way a call can be paid. Reserve holds what the call may
// cost, or refuses: the balance payer with store.ErrUserQuota,
// store.ErrTokenQuotaShort or store.ErrTokenQuota. Settle bills the
// outcome exactly once and never blocks on the database.
type Payer interface {
	Reserve(ctx context.Context, c *Call) (Charge, error)
	Settle(c *Call, ch *Charge, o Outcome)
}

// Balance pays from the user's balance (and the key's quota when it has
// one), through the group-commit ledger.
type Balance struct {
	Ledger *Ledger
	Log    *slog.Logger
}

// Reserve holds the call's estimate (Estimate), and under strict billing at
// least LeastHold, all or nothing; it then caps an open completion at what
// the hold buys (CompletionLimit). The ledger caps the hold by what is
// available, so a low balance stays usable (its calls are served one at a
// time) and a large one is never blocked.
func (b *Balance) Reserve(ctx context.Context, c *Call) (Charge, error) {
	op := store.ReserveOp{UserID: c.UserID, TokenID: c.TokenID, TokenLimited: c.TokenLimited, Amount: max(Estimate(c), 1)}
	if c.Strict {
		op.Min = LeastHold(c)
		op.Amount = max(op.Amount, op.Min)
	}
	hold, err := b.Ledger.Reserve(ctx, op)
	if err != nil {
		return Charge{}, err
	}
	ch := Charge{Payer: b, Hold: hold}
	switch {
	case c.Strict && CapsCompletion(c):
		if ch.CompletionLimit = CompletionLimit(c, hold.Amount); ch.CompletionLimit < 0 {
			b.Settle(c, &ch, Outcome{}) // rounding left the hold short of one token: give it back
			return Charge{}, store.ErrUserQuota
		}
		coverOutput(c, &ch)
	case CapsCompletion(c) && c.OutputLimit > 0:
		// Overruns allowed: the estimate held the model's limit.
		ch.CompletionLimit, ch.Covered = c.OutputLimit, true
	}
	return ch, nil
}

// Settle bills the exact cost (Cost), or releases the hold when nothing
// billable happened.
func (b *Balance) Settle(c *Call, ch *Charge, o Outcome) {
	op := store.SettleOp{UserID: c.UserID, TokenID: c.TokenID, TokenLimited: c.TokenLimited,
		Held: ch.Hold.Amount, ReservationID: ch.Hold.ReservationID, Key: settleKey()}
	if o.ChannelID != 0 {
		cost, uncollected := Cost(c, o.Usage, ch.Hold.Amount)
		if ch.Uncollected = uncollected; uncollected > 0 && b.Log != nil {
			b.Log.Warn("call cost more than its hold; charged the hold", "request_id", c.RequestID,
				"user_id", c.UserID, "held", ch.Hold.Amount, "uncollected", uncollected)
		}
		ch.Cost = cost
		if cost > 0 {
			op.ChannelID, op.Cost = o.ChannelID, cost
			op.Log = ConsumeLog(c, o, cost, uncollected)
		}
	}
	b.Ledger.SettleHold(ch.Hold, op)
}

// settleKey names one call's settlement for the store, which applies a
// settlement once per key. It is never the client's X-Request-Id (a client
// could reuse that and have its calls go unbilled): a random prefix drawn
// once per process, and a counter, so keys never repeat across processes
// and restarts, and a call costs no random read.
func settleKey() string {
	var b [32]byte
	hex.Encode(b[:16], settleKeyPrefix[:])
	n := settleKeyCounter.Add(1)
	for i := 31; i >= 16; i-- {
		b[i] = "0123456789abcdef"[n&0xf]
		n >>= 4
	}
	return string(b[:])
}

var (
	settleKeyPrefix  = func() (p [8]byte) { rand.Read(p[:]); return p }() // never fails (crypto/rand)
	settleKeyCounter atomic.Uint64
)

// ConsumeLog is the consume log row of a call billed cost: the prices and
// multiplier it was billed at, and notes when the usage was counted locally
// or part of the cost was not collected.
func ConsumeLog(c *Call, o Outcome, cost, uncollected int64) *store.Log {
	return &store.Log{
		UserID: c.UserID, Username: c.Username, Group: c.Group,
		TokenID: c.TokenID, TokenName: c.TokenName, Type: store.LogConsume,
		ModelName: c.Model, Quota: cost, Content: consumeContent(c.Price, o.Usage, c.Discount, o.Estimated, uncollected),
		PromptTokens: o.Usage.PromptTokens, CompletionTokens: o.Usage.CompletionTokens, CachedTokens: o.Usage.CachedTokens,
		CacheWriteTokens: o.Usage.CacheWriteTokens, CacheWrite1hTokens: o.Usage.CacheWrite1hTokens,
		ChannelID: o.ChannelID, RequestID: c.RequestID, ElapsedTime: time.Since(c.Start).Milliseconds(),
		IsStream: c.Stream, SessionKey: c.SessionKey,
	}
}

// consumeContent is the consume log's content column: the prices the call
// was billed at (its tier's, cache prices of 0 shown as the input price
// they mean), the cache-write prices only when the call wrote to the cache.
func consumeContent(p pricing.Price, u pricing.Usage, disc float64, estimated bool, uncollected int64) string {
	// Appended, not formatted: it is built on every call, and fmt was most
	// of its cost. strconv's shortest 'g' is what %g printed.
	content := make([]byte, 0, 160)
	if p.BillingType == pricing.BillingPerRequest {
		content = appendNumber(content, "按次 ", p.PerRequestPrice, " 元")
	} else {
		t := p.TokenPrices(u.PromptTokens)
		content = appendNumber(content, "输入 ", t.InputPrice, " 元/百万 tokens")
		content = appendNumber(content, ", 输出 ", t.OutputPrice, " 元/百万 tokens")
		content = appendNumber(content, ", 缓存 ", t.CachedPrice, " 元/百万 tokens")
		if u.CacheWriteTokens > 0 {
			content = appendNumber(content, ", 缓存写入 ", t.CacheWritePrice, " 元/百万 tokens")
		}
		if u.CacheWrite1hTokens > 0 {
			content = appendNumber(content, ", 1 小时缓存写入 ", t.CacheWrite1hPrice, " 元/百万 tokens")
		}
		if t.Above > 0 {
			content = strconv.AppendInt(append(content, ", 上下文超过 "...), t.Above, 10)
			content = append(content, " tokens 档"...)
		}
	}
	content = appendNumber(content, ", 分组倍率 ", disc, "")
	if estimated {
		content = append(content, " (上游未返回用量, tokens 为本地估算)"...)
	}
	if uncollected > 0 {
		content = strconv.AppendInt(append(content, " (超出预扣 "...), uncollected, 10)
		content = append(content, " 额度未收取)"...)
	}
	return string(content)
}

// appendNumber appends before, x as %g prints it, and after.
func appendNumber(b []byte, before string, x float64, after string) []byte {
	return append(strconv.AppendFloat(append(b, before...), x, 'g', -1, 64), after...)
}

// coverOutput marks a charge whose completion limit reaches the model's
// output limit as covering it, the limit then being exactly the model's
// (a hold rounds up to a little more).
func coverOutput(c *Call, ch *Charge) {
	if c.OutputLimit > 0 && (ch.CompletionLimit == 0 || ch.CompletionLimit >= c.OutputLimit) {
		ch.CompletionLimit, ch.Covered = min(c.OutputLimit, MaxCompletionSent), true
	}
}
