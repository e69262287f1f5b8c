package api

import (
	"errors"
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
)

// QuotaPerUnit is the quota of 1 CNY (docs/architecture.md, Money).
const QuotaPerUnit = 1_000_000

var errNotImplemented = httpx.FailStatus(http.StatusNotImplemented, "not implemented")

var _ = errors.New

type statusResponse struct {
	Version         string `json:"version"`
	QuotaPerUnit    int64  `json:"quota_per_unit"`
	StartTime       int64  `json:"start_time"`
	RegisterEnabled bool   `json:"register_enabled"`
	SystemName      string `json:"system_name"`
	// ConfigVersion counts the configuration changes this node has
	// applied (docs/operations.md, Config propagation): equal on every
	// node of one database once they agree.
	ConfigVersion int64 `json:"config_version"`
	// ConfigSync is how changes reach this node now: redis, postgres or
	// poll.
	ConfigSync string `json:"config_sync"`
	// The account features a login or registration page shows (one-api's
	// names): docs/accounts.md.
	EmailVerification bool   `json:"email_verification"`
	PasswordLogin     bool   `json:"password_login"`
	PasswordRegister  bool   `json:"password_register"`
	TurnstileCheck    bool   `json:"turnstile_check"`
	TurnstileSiteKey  string `json:"turnstile_site_key"`
	OIDC              bool   `json:"oidc"`
	GitHubOAuth       bool   `json:"github_oauth"`
	GitHubClientID    string `json:"github_client_id"`
	// GitHubOAuthURL is GITHUB_OAUTH_BASE_URL, where the console sends the
	// browser to authorize.
	GitHubOAuthURL string `json:"github_oauth_url"`
	// EmailBind says mail can be sent (SMTP configured), so the profile
	// page offers to bind an email address with a mailed code.
	EmailBind bool `json:"email_bind"`
}

// status is the public settings a console needs and the readiness probe: it
// fails while the database does not answer.
func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	if err := s.Store.Ping(r.Context()); err != nil {
		s.Log.Error("status: database not answering", "err", err)
		return httpx.FailStatus(http.StatusServiceUnavailable, "数据库不可用")
	}
	opts := s.Options.Current()
	version, via := int64(0), "poll"
	if s.ConfigVersion != nil {
		version, via = s.ConfigVersion()
	}
	return httpx.OK(w, statusResponse{
		ConfigVersion:   version,
		ConfigSync:      via,
		Version:         s.Version,
		QuotaPerUnit:    QuotaPerUnit,
		StartTime:       s.StartTime.Unix(),
		RegisterEnabled: opts.RegisterEnabled,
		SystemName:      opts.SystemName,

		EmailVerification: opts.Accounts.EmailVerification,
		PasswordLogin:     opts.Accounts.PasswordLogin,
		PasswordRegister:  opts.Accounts.PasswordRegister,
		TurnstileCheck:    opts.Accounts.Turnstile,
		TurnstileSiteKey:  opts.Accounts.TurnstileSiteKey,
		OIDC:              opts.OIDC.Enabled,
		GitHubOAuth:       opts.GitHub.Enabled,
		GitHubClientID:    opts.GitHub.ClientID,
		GitHubOAuthURL:    s.githubURLs().OAuth,
		EmailBind:         opts.Accounts.SMTP.Configured(),
	})
}
