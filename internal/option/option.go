// Package option owns the runtime settings an admin changes through
// /api/option/: their names, types, defaults and validation, and the
// in-memory snapshot readers use. The snapshot is swapped atomically, so a
// request reads one consistent set of values without locks.
package option

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/order"
	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/ratelimit"
)

// Keys of the known settings.
const (
	RegisterEnabled = "RegisterEnabled"
	NewUserQuota    = "NewUserQuota"
	SystemName      = "SystemName"
	// RetryTimes is how many other channels a failed relay call tries.
	RetryTimes = "RetryTimes"
	// ChannelCooldownSeconds is how long a channel that answered 429 is
	// skipped.
	ChannelCooldownSeconds = "ChannelCooldownSeconds"
	// RelayMaxBodyMB bounds a /v1 request body.
	RelayMaxBodyMB = "RelayMaxBodyMB"
	// RelayBodyBudgetMB bounds the /v1 request-body bytes held in memory
	// by all calls at once; a call that would go beyond it is answered 429
	// (docs/operations.md).
	RelayBodyBudgetMB = "RelayBodyBudgetMB"
	// DefaultCompletionSize is the least completion size, in tokens, a
	// reservation assumes, also when a request sets a smaller max_tokens
	// (relay reserve()); under strict billing it is also the completion
	// limit sent upstream for a request that sets none. A key name with
	// "Token" in it would be hidden as a secret.
	DefaultCompletionSize = "DefaultCompletionSize"
	// StreamDrainSeconds is how long the relay keeps reading an upstream
	// stream after its client left, for the usage the upstream reports at
	// the end; 0 cancels the upstream at once (docs/relay.md).
	StreamDrainSeconds = "StreamDrainSeconds"
	// StreamIdleTimeoutSeconds ends an upstream stream that sent no event
	// (SSE comments and keep-alive pings do not count) for that long, with
	// an error event to the client, and fails the attempt of a
	// non-streaming answer whose body sent no byte for that long (the next
	// channel, else 504); it cannot be turned off, so every answer is
	// bounded (docs/relay.md, Time bounds).
	StreamIdleTimeoutSeconds = "StreamIdleTimeoutSeconds"
	// BillingOverrunAllowed turns strict billing off: a call may then cost
	// more than it held, and a balance may end up to one call below zero
	// (docs/decisions/relay-billing.md).
	BillingOverrunAllowed = "BillingOverrunAllowed"
	// ErrorLogRetentionDays is how long error logs (type 5, failed relay
	// calls) are kept before a periodic sweep deletes them; 0 keeps them
	// (docs/operations.md).
	ErrorLogRetentionDays = "ErrorLogRetentionDays"
	// LogRetentionDays is how long logs of every type are kept before the
	// retention sweep deletes them (their usage rollups stay); 0 keeps
	// them (docs/operations.md, Log retention).
	LogRetentionDays = "LogRetentionDays"
	// ChannelRecheckMinutes is how long a channel the system disabled (its
	// key refused) waits between tests that re-enable it once it answers
	// again; 0 turns the retests off (docs/decisions/channels.md).
	ChannelRecheckMinutes = "ChannelRecheckMinutes"
	// The channel circuit breaker (docs/decisions/circuit-breakers.md):
	// per (channel, model) and per node, it skips a model's channel that
	// keeps failing and probes it before using it again.
	ChannelBreakerEnabled             = "ChannelBreakerEnabled"
	ChannelBreakerWindowSeconds       = "ChannelBreakerWindowSeconds"
	ChannelBreakerMinCalls            = "ChannelBreakerMinCalls"
	ChannelBreakerErrorRatePercent    = "ChannelBreakerErrorRatePercent"
	ChannelBreakerConsecutiveFailures = "ChannelBreakerConsecutiveFailures"
	ChannelBreakerCooldownSeconds     = "ChannelBreakerCooldownSeconds"
	ChannelBreakerMaxCooldownSeconds  = "ChannelBreakerMaxCooldownSeconds"
	// MessageLanguage is the language of the /api and /v1 messages the
	// spec does not fix: zh (the default) or en (internal/msgtext).
	MessageLanguage = "MessageLanguage"
	// GroupRateLimits maps a user group to the RPM, TPM and concurrency
	// limits each of its users gets (docs/decisions/rate-limits.md).
	GroupRateLimits = "GroupRateLimits"
	// RateLimitFailClosed refuses limited calls (503) while Redis does not
	// answer; false (the default) enforces the limits on each node alone
	// meanwhile.
	RateLimitFailClosed = "RateLimitFailClosed"
	// MaxPendingOrders is how many pending orders (top-up and plan
	// together) a user may have; one more is refused before any provider
	// call (issue 26, §2).
	MaxPendingOrders = "MaxPendingOrders"
	// OrderExpiryMinutes is how long a pending order waits for payment:
	// older, it is cancelled (status 2) and its trade closed at the
	// provider (issue 26, §2). 120 is the wallets' QR code validity.
	OrderExpiryMinutes = "OrderExpiryMinutes"

	// The top-up settings (spec: Top-up settings, category topup). They
	// are saved together through PUT /api/setting/topup (SetMany).
	TopupEnabled      = "topup.enabled"
	TopupAllowCustom  = "topup.allow_custom"
	TopupExchangeRate = "topup.exchange_rate"
	TopupPresets      = "topup.presets"
)

// Snapshot is one consistent set of settings. It is never modified after it
// is published.
type Snapshot struct {
	RegisterEnabled  bool
	NewUserQuota     int64
	SystemName       string
	RetryTimes       int64
	ChannelCooldown  time.Duration
	RelayMaxBody     int64 // bytes
	RelayBodyBudget  int64 // bytes
	DefaultMaxTokens int64
	StreamDrain      time.Duration
	StreamIdle       time.Duration
	// BillingOverrunAllowed: false (the default) is strict billing.
	BillingOverrunAllowed bool
	// ErrorLogRetention is 0 when error logs are never swept.
	ErrorLogRetention time.Duration
	// LogRetention is 0 when logs are kept (the default).
	LogRetention time.Duration
	// ChannelRecheck is 0 when auto-disabled channels are never retested.
	ChannelRecheck time.Duration
	// Breaker is the channel circuit breaker's configuration.
	Breaker breaker.Config
	// MessageLanguage renders failure messages (the spec's stay as
	// written).
	MessageLanguage msgtext.Lang
	// GroupRateLimits holds only the groups that set a limit.
	GroupRateLimits     map[string]ratelimit.Limits
	RateLimitFailClosed bool
	// MaxPendingOrders is the per-user limit of pending orders.
	MaxPendingOrders int
	// OrderExpiry is how long a pending order waits for payment.
	OrderExpiry time.Duration
	// Topup is the top-up settings (spec defaults: off, no custom amount,
	// rate 1, no presets).
	Topup order.Settings
	// Accounts is mail, verification and the domain restriction
	// (accounts.go).
	Accounts Accounts
	// OIDC and GitHub are the sign-in providers (providers.go).
	OIDC   OIDC
	GitHub GitHub
	raw    map[string]string
}

// definition describes one key: its default and how to apply a text value.
type definition struct {
	def   string
	apply func(s *Snapshot, v string) error
}

var definitions = map[string]definition{
	RegisterEnabled: {"true", func(s *Snapshot, v string) (err error) {
		s.RegisterEnabled, err = parseBool(v)
		return err
	}},
	NewUserQuota: {"0", func(s *Snapshot, v string) (err error) {
		s.NewUserQuota, err = parseQuota(v)
		return err
	}},
	RetryTimes: {"2", func(s *Snapshot, v string) (err error) {
		s.RetryTimes, err = parseRange(v, 0, 10)
		return err
	}},
	ChannelCooldownSeconds: {"60", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 0, 86400)
		s.ChannelCooldown = time.Duration(n) * time.Second
		return err
	}},
	RelayMaxBodyMB: {"32", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 1024)
		s.RelayMaxBody = n << 20
		return err
	}},
	RelayBodyBudgetMB: {"256", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 65536)
		s.RelayBodyBudget = n << 20
		return err
	}},
	DefaultCompletionSize: {"16384", func(s *Snapshot, v string) (err error) {
		s.DefaultMaxTokens, err = parseRange(v, 1, 10_000_000)
		return err
	}},
	StreamDrainSeconds: {"5", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 0, 300)
		s.StreamDrain = time.Duration(n) * time.Second
		return err
	}},
	StreamIdleTimeoutSeconds: {"300", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 86400)
		s.StreamIdle = time.Duration(n) * time.Second
		return err
	}},
	BillingOverrunAllowed: {"false", func(s *Snapshot, v string) (err error) {
		s.BillingOverrunAllowed, err = parseBool(v)
		return err
	}},
	ErrorLogRetentionDays: {"7", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 0, 3650)
		s.ErrorLogRetention = time.Duration(n) * 24 * time.Hour
		return err
	}},
	MaxPendingOrders: {"5", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 1000)
		s.MaxPendingOrders = int(n)
		return err
	}},
	OrderExpiryMinutes: {"120", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 10080)
		s.OrderExpiry = time.Duration(n) * time.Minute
		return err
	}},
	LogRetentionDays: {"0", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 0, 36500)
		s.LogRetention = time.Duration(n) * 24 * time.Hour
		return err
	}},
	ChannelRecheckMinutes: {"10", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 0, 10080)
		s.ChannelRecheck = time.Duration(n) * time.Minute
		return err
	}},
	ChannelBreakerEnabled: {"true", func(s *Snapshot, v string) (err error) {
		s.Breaker.Enabled, err = parseBool(v)
		return err
	}},
	ChannelBreakerWindowSeconds: {"60", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 10, 3600)
		s.Breaker.Window = time.Duration(n) * time.Second
		return err
	}},
	ChannelBreakerMinCalls: {"10", func(s *Snapshot, v string) (err error) {
		s.Breaker.MinCalls, err = parseRange(v, 2, 100_000)
		return err
	}},
	ChannelBreakerErrorRatePercent: {"50", func(s *Snapshot, v string) (err error) {
		s.Breaker.ErrorRatePercent, err = parseRange(v, 0, 100)
		return err
	}},
	// 1 is refused: one error never opens a breaker (0 turns the rule off).
	ChannelBreakerConsecutiveFailures: {"5", func(s *Snapshot, v string) (err error) {
		if v == "0" {
			s.Breaker.Consecutive = 0
			return nil
		}
		s.Breaker.Consecutive, err = parseRange(v, 2, 1000)
		return err
	}},
	ChannelBreakerCooldownSeconds: {"30", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 86400)
		s.Breaker.CoolDown = time.Duration(n) * time.Second
		return err
	}},
	ChannelBreakerMaxCooldownSeconds: {"600", func(s *Snapshot, v string) error {
		n, err := parseRange(v, 1, 86400)
		s.Breaker.MaxCoolDown = time.Duration(n) * time.Second
		return err
	}},
	MessageLanguage: {"zh", func(s *Snapshot, v string) (err error) {
		s.MessageLanguage, err = msgtext.ParseLang(v)
		return err
	}},
	GroupRateLimits: {"{}", func(s *Snapshot, v string) (err error) {
		s.GroupRateLimits, err = ratelimit.ParseGroupLimits(v)
		return err
	}},
	RateLimitFailClosed: {"false", func(s *Snapshot, v string) (err error) {
		s.RateLimitFailClosed, err = parseBool(v)
		return err
	}},
	TopupEnabled: {"false", func(s *Snapshot, v string) (err error) {
		s.Topup.Enabled, err = parseBool(v)
		return err
	}},
	TopupAllowCustom: {"false", func(s *Snapshot, v string) (err error) {
		s.Topup.AllowCustom, err = parseBool(v)
		return err
	}},
	TopupExchangeRate: {"1", func(s *Snapshot, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New(order.MsgRateNotPositive)
		}
		if p := order.ValidateRate(n); p != nil {
			return p
		}
		s.Topup.ExchangeRate = n
		return nil
	}},
	TopupPresets: {"[]", func(s *Snapshot, v string) error {
		var presets []order.Preset
		if err := json.Unmarshal([]byte(v), &presets); err != nil {
			return errors.New("必须是快捷金额的 JSON 数组")
		}
		if p := order.ValidatePresets(presets); p != nil {
			return p
		}
		if presets == nil {
			presets = []order.Preset{}
		}
		s.Topup.Presets = presets
		return nil
	}},
	SystemName: {"modelgate", func(s *Snapshot, v string) error {
		if len(v) > 64 {
			return errors.New("不能超过 64 字节")
		}
		s.SystemName = v
		return nil
	}},
}

// parseBool reads a switch; the messages of these parsers end up in the
// admin's failure message, so they say what is expected.
func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.New("必须是 true 或 false")
	}
	return b, nil
}

// parseQuota reads an amount of quota: a whole number from 0 to
// pricing.MaxBalance.
func parseQuota(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("必须是不小于 0 的整数")
	}
	if n > pricing.MaxBalance {
		return 0, errors.New("不能超过 1000000000000000")
	}
	return n, nil
}

// parseRange reads a whole number within [lo, hi].
func parseRange(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("必须是 %d 到 %d 之间的整数", lo, hi)
	}
	return n, nil
}

// Hidden reports whether a key must never be returned by the API: keys that
// name a secret or a token. An endpoint's URL (OidcTokenEndpoint) names a
// place, not a credential, and is shown.
func Hidden(key string) bool {
	if strings.HasSuffix(key, "Endpoint") {
		return false
	}
	return strings.Contains(key, "Secret") || strings.Contains(key, "Token")
}

// Known reports whether key is a setting this version understands.
func Known(key string) bool {
	_, ok := definitions[key]
	return ok
}

// build makes a snapshot from stored values over the defaults. Stored values
// that no longer parse fall back to the default and are reported.
func build(stored map[string]string) (*Snapshot, []error) {
	s := &Snapshot{raw: map[string]string{}}
	var errs []error
	for k, d := range definitions {
		_ = d.apply(s, d.def)
		s.raw[k] = d.def
	}
	for k, v := range stored {
		d, ok := definitions[k]
		if !ok {
			continue
		}
		if err := d.apply(s, v); err != nil {
			_ = d.apply(s, d.def)
			errs = append(errs, fmt.Errorf("option %s=%q: %w", k, v, err))
			continue
		}
		s.raw[k] = v
	}
	return s, errs
}

// Values returns the visible settings as text, hidden keys left out.
func (s *Snapshot) Values() map[string]string {
	out := make(map[string]string, len(s.raw))
	for k, v := range s.raw {
		if !Hidden(k) {
			out[k] = v
		}
	}
	return out
}

// Store is what the registry needs from persistence.
type Store interface {
	OptionValues(ctx context.Context) (map[string]string, error)
	SetOptions(ctx context.Context, values map[string]string) error
}

// Registry publishes the current snapshot.
type Registry struct {
	store Store
	log   *slog.Logger
	cur   atomic.Pointer[Snapshot]
	// reload serialises Reload: without it a periodic reload that read the
	// table before a Set committed could publish after that Set's own
	// reload, bringing the old value back until the next tick.
	reload sync.Mutex
}

// InvalidError is a Set refused for an unknown key or a bad value; its
// message is meant for the admin who sent it.
type InvalidError struct {
	Message string
}

func (e *InvalidError) Error() string { return e.Message }

// NewRegistry loads the stored settings.
func NewRegistry(ctx context.Context, st Store, log *slog.Logger) (*Registry, error) {
	r := &Registry{store: st, log: log}
	if err := r.Reload(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Current returns the snapshot in force.
func (r *Registry) Current() *Snapshot { return r.cur.Load() }

// Reload reads the stored settings again. Nodes that share one database call
// it periodically so a change made on another node is seen.
func (r *Registry) Reload(ctx context.Context) error {
	r.reload.Lock()
	defer r.reload.Unlock()
	stored, err := r.store.OptionValues(ctx)
	if err != nil {
		return fmt.Errorf("load options: %w", err)
	}
	s, errs := build(stored)
	for _, e := range errs {
		r.log.Warn("ignoring stored option", "err", e)
	}
	r.cur.Store(s)
	return nil
}

// Set validates and stores one setting, then publishes a new snapshot. An
// unknown key or a value that does not parse changes nothing and gives an
// *InvalidError.
func (r *Registry) Set(ctx context.Context, key, value string) error {
	d, ok := definitions[key]
	if !ok {
		return &InvalidError{fmt.Sprintf("未知的配置项: %s", key)}
	}
	if err := d.apply(&Snapshot{}, value); err != nil {
		return &InvalidError{fmt.Sprintf("配置项 %s 的值无效: %v", key, err)}
	}
	if err := r.store.SetOptions(ctx, map[string]string{key: value}); err != nil {
		return err
	}
	return r.Reload(ctx)
}

// SetMany validates and stores several settings in one transaction, then
// publishes them: all or nothing (the top-up settings are saved together).
func (r *Registry) SetMany(ctx context.Context, values map[string]string) error {
	for key, value := range values {
		d, ok := definitions[key]
		if !ok {
			return &InvalidError{fmt.Sprintf("未知的配置项: %s", key)}
		}
		if err := d.apply(&Snapshot{}, value); err != nil {
			return &InvalidError{fmt.Sprintf("配置项 %s 的值无效: %v", key, err)}
		}
	}
	if err := r.store.SetOptions(ctx, values); err != nil {
		return err
	}
	return r.Reload(ctx)
}

// Validate checks one setting as Set would, without storing it (the
// importer checks the settings it brings over).
func Validate(key, value string) error {
	d, ok := definitions[key]
	if !ok {
		return &InvalidError{fmt.Sprintf("未知的配置项: %s", key)}
	}
	if err := d.apply(&Snapshot{}, value); err != nil {
		return &InvalidError{fmt.Sprintf("配置项 %s 的值无效: %v", key, err)}
	}
	return nil
}
