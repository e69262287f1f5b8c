package option

import (
	"errors"
	"net/url"
	"strings"
	"unicode"

	"github.com/modelgate/modelgate/internal/mail"
)

// The account settings of a public site (issue 31), named as one-api names
// them so a one-api deployment's options carry over.
const (
	SMTPServer  = "SMTPServer"
	SMTPPort    = "SMTPPort"
	SMTPAccount = "SMTPAccount"
	SMTPFrom    = "SMTPFrom"
	// SMTPToken is the SMTP password; Hidden keeps it out of every read.
	SMTPToken = "SMTPToken"
	// EmailVerificationEnabled makes registration require a mailed code.
	EmailVerificationEnabled      = "EmailVerificationEnabled"
	EmailDomainRestrictionEnabled = "EmailDomainRestrictionEnabled"
	// EmailDomainWhitelist is comma-separated domains ("example.com,
	// example.org"); with the restriction on, only they may register.
	EmailDomainWhitelist = "EmailDomainWhitelist"
	// ServerAddress is the site's public base URL, the start of the
	// password reset link (empty: the address the request came to).
	ServerAddress = "ServerAddress"
	// PasswordLoginEnabled and PasswordRegisterEnabled (default true) let
	// a site run on sign-in providers only.
	PasswordLoginEnabled    = "PasswordLoginEnabled"
	PasswordRegisterEnabled = "PasswordRegisterEnabled"
	// Cloudflare Turnstile in front of registration and the mailed codes.
	TurnstileCheckEnabled = "TurnstileCheckEnabled"
	TurnstileSiteKey      = "TurnstileSiteKey"
	// TurnstileSecretKey is hidden from every read (Hidden).
	TurnstileSecretKey = "TurnstileSecretKey"
	// QuotaForInviter is credited to an inviter when an invitee's first
	// paid order is activated; QuotaForInvitee to the invitee at
	// registration (quota units).
	QuotaForInviter = "QuotaForInviter"
	QuotaForInvitee = "QuotaForInvitee"
)

// Accounts is the snapshot's account settings.
type Accounts struct {
	SMTP                   mail.Config
	EmailVerification      bool
	EmailDomainRestriction bool
	EmailDomains           []string // lower case
	ServerAddress          string   // without a trailing slash
	PasswordLogin          bool
	PasswordRegister       bool
	Turnstile              bool
	TurnstileSiteKey       string
	TurnstileSecretKey     string
	QuotaForInviter        int64
	QuotaForInvitee        int64
}

// DomainAllowed reports whether an address may register under the domain
// restriction: always when it is off.
func (a Accounts) DomainAllowed(email string) bool {
	if !a.EmailDomainRestriction {
		return true
	}
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return false
	}
	domain := strings.ToLower(email[at+1:])
	for _, d := range a.EmailDomains {
		if domain == d {
			return true
		}
	}
	return false
}

func init() {
	for k, d := range map[string]definition{
		SMTPServer: {"", func(s *Snapshot, v string) error {
			if err := plainText(v, 255); err != nil {
				return err
			}
			s.Accounts.SMTP.Server = strings.TrimSpace(v)
			return nil
		}},
		SMTPPort: {"587", func(s *Snapshot, v string) (err error) {
			s.Accounts.SMTP.Port, err = parseRange(v, 1, 65535)
			return err
		}},
		SMTPAccount: {"", func(s *Snapshot, v string) error {
			s.Accounts.SMTP.Account = strings.TrimSpace(v)
			return plainText(v, 255)
		}},
		SMTPFrom: {"", func(s *Snapshot, v string) error {
			s.Accounts.SMTP.From = strings.TrimSpace(v)
			return plainText(v, 255)
		}},
		SMTPToken: {"", func(s *Snapshot, v string) error {
			s.Accounts.SMTP.Token = v
			return plainText(v, 1024)
		}},
		EmailVerificationEnabled: {"false", func(s *Snapshot, v string) (err error) {
			s.Accounts.EmailVerification, err = parseBool(v)
			return err
		}},
		EmailDomainRestrictionEnabled: {"false", func(s *Snapshot, v string) (err error) {
			s.Accounts.EmailDomainRestriction, err = parseBool(v)
			return err
		}},
		EmailDomainWhitelist: {"", func(s *Snapshot, v string) error {
			if err := plainText(v, 4096); err != nil {
				return err
			}
			s.Accounts.EmailDomains = nil
			for _, d := range strings.Split(v, ",") {
				if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
					s.Accounts.EmailDomains = append(s.Accounts.EmailDomains, d)
				}
			}
			return nil
		}},
		ServerAddress: {"", func(s *Snapshot, v string) error {
			v = strings.TrimRight(strings.TrimSpace(v), "/")
			if v != "" {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return errors.New("必须是 http:// 或 https:// 开头的网址")
				}
			}
			s.Accounts.ServerAddress = v
			return nil
		}},
		QuotaForInviter: {"0", func(s *Snapshot, v string) (err error) {
			s.Accounts.QuotaForInviter, err = parseQuota(v)
			return err
		}},
		QuotaForInvitee: {"0", func(s *Snapshot, v string) (err error) {
			s.Accounts.QuotaForInvitee, err = parseQuota(v)
			return err
		}},
		PasswordLoginEnabled: {"true", func(s *Snapshot, v string) (err error) {
			s.Accounts.PasswordLogin, err = parseBool(v)
			return err
		}},
		PasswordRegisterEnabled: {"true", func(s *Snapshot, v string) (err error) {
			s.Accounts.PasswordRegister, err = parseBool(v)
			return err
		}},
		TurnstileCheckEnabled: {"false", func(s *Snapshot, v string) (err error) {
			s.Accounts.Turnstile, err = parseBool(v)
			return err
		}},
		TurnstileSiteKey: {"", func(s *Snapshot, v string) error {
			s.Accounts.TurnstileSiteKey = strings.TrimSpace(v)
			return plainText(v, 255)
		}},
		TurnstileSecretKey: {"", func(s *Snapshot, v string) error {
			s.Accounts.TurnstileSecretKey = strings.TrimSpace(v)
			return plainText(v, 1024)
		}},
	} {
		definitions[k] = d
	}
}

// plainText refuses control characters (a header or an SMTP command could
// be cut by a line break) and text longer than limit bytes.
func plainText(v string, limit int) error {
	if len(v) > limit {
		return errors.New("过长")
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return errors.New("不能含控制字符")
		}
	}
	return nil
}
