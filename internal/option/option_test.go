package option

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/breaker"
	"github.com/modelgate/modelgate/internal/msgtext"
)

// memStore is an in-memory Store. block, when set, makes the next
// OptionValues call capture the values and then wait until it is closed.
type memStore struct {
	mu     sync.Mutex
	values map[string]string
	block  chan struct{}
	read   chan struct{} // closed once the blocked call has captured values
}

func (m *memStore) OptionValues(context.Context) (map[string]string, error) {
	m.mu.Lock()
	v := maps.Clone(m.values)
	block, read := m.block, m.read
	m.block = nil
	m.mu.Unlock()
	if block != nil {
		close(read)
		<-block
	}
	return v, nil
}

func (m *memStore) SetOptions(_ context.Context, values map[string]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.Copy(m.values, values)
	return nil
}

func newRegistry(t *testing.T, stored map[string]string) (*Registry, *memStore) {
	t.Helper()
	st := &memStore{values: stored}
	r, err := NewRegistry(context.Background(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return r, st
}

func TestDefaultsAndStoredValues(t *testing.T) {
	r, _ := newRegistry(t, map[string]string{
		NewUserQuota: "500", RegisterEnabled: "not-a-bool", "RetiredKey": "x", MessageLanguage: "fr",
	})
	cur := r.Current()
	if cur.NewUserQuota != 500 || !cur.RegisterEnabled || cur.SystemName != "modelgate" || cur.MessageLanguage != msgtext.Chinese {
		t.Fatalf("snapshot = %+v", cur)
	}
	want := map[string]string{GroupRateLimits: "{}", RateLimitFailClosed: "false", NewUserQuota: "500", RegisterEnabled: "true", SystemName: "modelgate",
		RetryTimes: "2", ChannelCooldownSeconds: "60", RelayMaxBodyMB: "32", RelayBodyBudgetMB: "256", DefaultCompletionSize: "16384",
		BillingOverrunAllowed: "false", StreamDrainSeconds: "5", StreamIdleTimeoutSeconds: "300", ChannelRecheckMinutes: "10", MessageLanguage: "zh",
		ErrorLogRetentionDays: "7", LogRetentionDays: "0", ChannelBreakerEnabled: "true", ChannelBreakerWindowSeconds: "60",
		ChannelBreakerMinCalls: "10", ChannelBreakerErrorRatePercent: "50", ChannelBreakerConsecutiveFailures: "5",
		ChannelBreakerCooldownSeconds: "30", ChannelBreakerMaxCooldownSeconds: "600", TopupEnabled: "false", TopupAllowCustom: "false", TopupExchangeRate: "1", TopupPresets: "[]",
		MaxPendingOrders: "5", OrderExpiryMinutes: "120",
		// Accounts (accounts.go); SMTPToken and TurnstileSecretKey are hidden.
		SMTPServer: "", SMTPPort: "587", SMTPAccount: "", SMTPFrom: "", EmailVerificationEnabled: "false",
		EmailDomainRestrictionEnabled: "false", EmailDomainWhitelist: "", ServerAddress: "", PasswordLoginEnabled: "true",
		PasswordRegisterEnabled: "true", TurnstileCheckEnabled: "false", TurnstileSiteKey: "",
		OidcEnabled: "false", OidcClientID: "", OidcWellKnown: "", OidcAuthorizationEndpoint: "", OidcTokenEndpoint: "",
		OidcUserinfoEndpoint: "", GitHubOAuthEnabled: "false", GitHubClientID: "",
		QuotaForInviter: "0", QuotaForInvitee: "0"}
	if got := cur.Values(); !maps.Equal(got, want) {
		t.Fatalf("Values() = %v, want %v (bad stored value falls back, unknown key left out)", got, want)
	}
	wantBreaker := breaker.Config{Enabled: true, Window: time.Minute, MinCalls: 10, ErrorRatePercent: 50, Consecutive: 5,
		CoolDown: 30 * time.Second, MaxCoolDown: 10 * time.Minute}
	if cur.StreamIdle != 5*time.Minute {
		t.Fatalf("stream idle timeout %v, want the documented 300 s", cur.StreamIdle)
	}
	if cur.Breaker != wantBreaker || cur.ChannelRecheck != 10*time.Minute {
		t.Fatalf("breaker %+v, recheck %v: want the documented defaults (recheck on, every 10 minutes)", cur.Breaker, cur.ChannelRecheck)
	}
}

func TestSet(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		key, value string
		wantErr    string // "" for success
	}{
		{RegisterEnabled, "false", ""},
		{RegisterEnabled, "yes", "配置项 RegisterEnabled 的值无效: 必须是 true 或 false"},
		{NewUserQuota, "1000", ""},
		{NewUserQuota, "-1", "配置项 NewUserQuota 的值无效: 必须是不小于 0 的整数"},
		{NewUserQuota, "1.5", "配置项 NewUserQuota 的值无效: 必须是不小于 0 的整数"},
		{NewUserQuota, "1000000000000000", ""},
		{NewUserQuota, "1000000000000001", "配置项 NewUserQuota 的值无效: 不能超过 1000000000000000"},
		{NewUserQuota, "9223372036854775807", "配置项 NewUserQuota 的值无效: 不能超过 1000000000000000"},
		{SystemName, "", ""},
		{SystemName, string(make([]byte, 65)), "配置项 SystemName 的值无效: 不能超过 64 字节"},
		{"NoSuchKey", "1", "未知的配置项: NoSuchKey"},
		{ChannelBreakerEnabled, "false", ""},
		{ChannelBreakerEnabled, "off", "配置项 ChannelBreakerEnabled 的值无效: 必须是 true 或 false"},
		{ChannelBreakerWindowSeconds, "9", "配置项 ChannelBreakerWindowSeconds 的值无效: 必须是 10 到 3600 之间的整数"},
		{ChannelBreakerWindowSeconds, "3600", ""},
		{ChannelBreakerMinCalls, "1", "配置项 ChannelBreakerMinCalls 的值无效: 必须是 2 到 100000 之间的整数"},
		{ChannelBreakerErrorRatePercent, "0", ""},
		{ChannelBreakerErrorRatePercent, "101", "配置项 ChannelBreakerErrorRatePercent 的值无效: 必须是 0 到 100 之间的整数"},
		{ChannelBreakerConsecutiveFailures, "0", ""},
		{ChannelBreakerConsecutiveFailures, "2", ""},
		{ChannelBreakerConsecutiveFailures, "1", "配置项 ChannelBreakerConsecutiveFailures 的值无效: 必须是 2 到 1000 之间的整数"},
		{ChannelBreakerConsecutiveFailures, "-1", "配置项 ChannelBreakerConsecutiveFailures 的值无效: 必须是 2 到 1000 之间的整数"},
		{ChannelBreakerCooldownSeconds, "0", "配置项 ChannelBreakerCooldownSeconds 的值无效: 必须是 1 到 86400 之间的整数"},
		{ChannelBreakerMaxCooldownSeconds, "86400", ""},
		{ChannelBreakerMaxCooldownSeconds, "9223372036854775808", "配置项 ChannelBreakerMaxCooldownSeconds 的值无效: 必须是 1 到 86400 之间的整数"},
		// A stream idle timeout cannot be off: every stream is bounded.
		{StreamIdleTimeoutSeconds, "1", ""},
		{StreamIdleTimeoutSeconds, "86400", ""},
		{StreamIdleTimeoutSeconds, "0", "配置项 StreamIdleTimeoutSeconds 的值无效: 必须是 1 到 86400 之间的整数"},
		{StreamIdleTimeoutSeconds, "-5", "配置项 StreamIdleTimeoutSeconds 的值无效: 必须是 1 到 86400 之间的整数"},
		{StreamIdleTimeoutSeconds, "86401", "配置项 StreamIdleTimeoutSeconds 的值无效: 必须是 1 到 86400 之间的整数"},
		{MessageLanguage, "en", ""},
		{MessageLanguage, "zh", ""},
		{MessageLanguage, "EN", "配置项 MessageLanguage 的值无效: 必须是 zh 或 en"},
		{MessageLanguage, "", "配置项 MessageLanguage 的值无效: 必须是 zh 或 en"},
	}
	for _, tt := range tests {
		r, st := newRegistry(t, map[string]string{})
		before := maps.Clone(st.values)
		err := r.Set(ctx, tt.key, tt.value)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("Set(%s, %q) = %v", tt.key, tt.value, err)
			} else if got := r.Current().Values()[tt.key]; got != tt.value {
				t.Errorf("after Set(%s, %q) the snapshot has %q", tt.key, tt.value, got)
			}
			continue
		}
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Message != tt.wantErr {
			t.Errorf("Set(%s, %q) = %v, want InvalidError %q", tt.key, tt.value, err, tt.wantErr)
		}
		if !maps.Equal(st.values, before) {
			t.Errorf("Set(%s, %q) failed but stored %v", tt.key, tt.value, st.values)
		}
	}
}

func TestHidden(t *testing.T) {
	for key, want := range map[string]bool{
		"SessionSecret": true, "GitHubClientSecret": true, "RootAccessToken": true,
		"SystemName": false, "NewUserQuota": false, "secret": false,
	} {
		if Hidden(key) != want {
			t.Errorf("Hidden(%q) = %v, want %v", key, !want, want)
		}
	}
}

// A periodic reload that read the table before a Set committed must not
// publish after the Set's own reload and bring the old value back.
func TestSetWinsOverConcurrentReload(t *testing.T) {
	ctx := context.Background()
	r, st := newRegistry(t, map[string]string{NewUserQuota: "1"})
	st.mu.Lock()
	st.block, st.read = make(chan struct{}), make(chan struct{})
	block, read := st.block, st.read
	st.mu.Unlock()

	reloaded := make(chan error)
	go func() { reloaded <- r.Reload(ctx) }() // captures the old value, then waits
	<-read
	set := make(chan error)
	go func() { set <- r.Set(ctx, NewUserQuota, "2") }()
	// Let the stale reload finish only once the Set has stored its value.
	for {
		st.mu.Lock()
		stored := st.values[NewUserQuota]
		st.mu.Unlock()
		if stored == "2" {
			break
		}
		runtime.Gosched()
	}
	close(block)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	if got := r.Current().NewUserQuota; got != 2 {
		t.Fatalf("NewUserQuota after Set during a reload = %d, want 2", got)
	}
}

func TestSetManyIsAllOrNothing(t *testing.T) {
	r, st := newRegistry(t, map[string]string{})
	err := r.SetMany(context.Background(), map[string]string{TopupEnabled: "true", TopupExchangeRate: "0"})
	if err == nil || st.values[TopupEnabled] != "" {
		t.Fatalf("bad rate: err %v, stored %v", err, st.values)
	}
	err = r.SetMany(context.Background(), map[string]string{TopupEnabled: "true", TopupPresets: `[{"amount":10,"bonus_quota":5}]`})
	if err != nil || !r.Current().Topup.Enabled || len(r.Current().Topup.Presets) != 1 {
		t.Fatalf("save: %v %+v", err, r.Current().Topup)
	}
}
