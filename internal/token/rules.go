package token

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Validation messages.
const (
	MsgNameLength      = "令牌名称长度必须在 1 到 50 个字符之间"
	MsgExpiredTimePast = "过期时间不能早于当前时间"
	MsgRemainQuotaNeg  = "剩余额度不能为负数"
	MsgRemainQuotaMax  = "剩余额度不能超过 1000000000000000"
	MsgSubnetInvalid   = "无效的网段:%s" // the offending entry
	MsgSubnetTooLong   = "网段列表过长,上限 1024 个字符"
	MsgModelNameLength = "模型名称不能超过 191 个字符"
	MsgStatusInvalid   = "无效的令牌状态,只能设置为 1 (启用) 或 2 (禁用)"
	MsgEnableExpired   = "令牌已过期,无法启用,请先修改令牌过期时间,或者设置为永不过期"
	MsgEnableExhausted = "令牌可用额度已用尽,无法启用,请先修改令牌剩余额度,或者设置为无限额度"
)

// Limits of the stored columns.
const (
	MaxNameLength      = 50
	MaxModelNameLength = 191
	MaxSubnetLength    = 1024
)

// Text rules of the stored fields (columns: store.Token): a model of the
// allow list is one line; the list is a TEXT column.
var (
	nameText      = textfield.Field{Label: "令牌名称", MaxChars: 64}
	modelText     = textfield.Field{Label: "模型名称", MaxChars: MaxModelNameLength}
	modelListText = textfield.Field{Label: "模型列表", MaxBytes: textfield.TextColumnBytes}
)

// ValidateName checks a (trimmed) name: 1 to 50 characters of text.
func ValidateName(name string) string {
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameLength {
		return MsgNameLength
	}
	return nameText.Validate(name)
}

// ValidateExpiry allows NeverExpires or a time not before now.
func ValidateExpiry(expiredTime, now int64) string {
	if expiredTime != NeverExpires && expiredTime < now {
		return MsgExpiredTimePast
	}
	return ""
}

// ValidateRemainQuota refuses a negative balance and one above
// pricing.MaxBalance.
func ValidateRemainQuota(q int64) string {
	switch {
	case q < 0:
		return MsgRemainQuotaNeg
	case q > pricing.MaxBalance:
		return MsgRemainQuotaMax
	}
	return ""
}

// NormalizeModels cleans a comma-separated model allow list: entries are
// trimmed, empty ones dropped and repeats removed, keeping the first order.
// An empty result allows every model.
func NormalizeModels(list string) (string, string) {
	var out []string
	seen := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		if m == "" || seen[m] {
			continue
		}
		if utf8.RuneCountInString(m) > MaxModelNameLength {
			return "", MsgModelNameLength
		}
		if msg := modelText.Validate(m); msg != "" {
			return "", msg
		}
		seen[m] = true
		out = append(out, m)
	}
	joined := strings.Join(out, ",")
	if msg := modelListText.Validate(joined); msg != "" {
		return "", msg
	}
	return joined, ""
}

// ModelAllowed reports whether a normalized allow list admits model.
func ModelAllowed(list, model string) bool {
	if strings.TrimSpace(list) == "" {
		return true
	}
	for _, m := range strings.Split(list, ",") {
		if strings.TrimSpace(m) == model {
			return true
		}
	}
	return false
}

// NormalizeSubnets cleans a comma-separated list of CIDRs: a bare address
// becomes a single-host prefix (/32 or /128), host bits are cleared
// (10.1.2.3/8 is 10.0.0.0/8), IPv4-mapped IPv6 prefixes become IPv4, and
// repeats are removed. An empty result allows any address. On failure the
// second result names the offending entry.
func NormalizeSubnets(list string) (string, string) {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, ok := parseSubnet(part)
		if !ok {
			return "", fmt.Sprintf(MsgSubnetInvalid, part)
		}
		if s := p.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	joined := strings.Join(out, ",")
	if len(joined) > MaxSubnetLength {
		return "", MsgSubnetTooLong
	}
	return joined, ""
}

func parseSubnet(s string) (netip.Prefix, bool) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, false
		}
	} else {
		a, err := netip.ParseAddr(s)
		// A zone (fe80::1%eth0) names a local interface, not a network.
		if err != nil || a.Zone() != "" {
			return p, false
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	// Clients are matched by their unmapped address, so a mapped prefix
	// would never match.
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), true
}

// SubnetAllows reports whether a subnet list admits the client address ip.
// An entry that does not parse admits nothing: a damaged row fails closed.
func SubnetAllows(list string, ip netip.Addr) bool {
	if strings.TrimSpace(list) == "" {
		return true
	}
	ip = ip.Unmap().WithZone("")
	for _, part := range strings.Split(list, ",") {
		if p, ok := parseSubnet(strings.TrimSpace(part)); ok && p.Contains(ip) {
			return true
		}
	}
	return false
}

// State is the part of a key the status rules read.
type State struct {
	Status         int
	ExpiredTime    int64
	RemainQuota    int64
	UnlimitedQuota bool
}

// Expired reports whether the key's expiry has passed at now.
func (s State) Expired(now int64) bool {
	return s.ExpiredTime != NeverExpires && s.ExpiredTime < now
}

// EffectiveStatus is the status to report and enforce at now: an enabled
// key past its expiry is Expired even while the stored row still says
// Enabled.
func (s State) EffectiveStatus(now int64) int {
	if s.Status == StatusEnabled && s.Expired(now) {
		return StatusExpired
	}
	return s.Status
}

// StatusRequest interprets the status sent in an update of a key whose
// reported status is current. Sending the current status back is no change
// (clients echo what they read, 3 or 4 included); Enabled and Disabled are
// changes; anything else is invalid.
func StatusRequest(requested, current int) (change bool, msg string) {
	switch {
	case requested == current:
		return false, ""
	case requested == StatusEnabled || requested == StatusDisabled:
		return true, ""
	}
	return false, MsgStatusInvalid
}

// CheckEnable is the careful-operator rule for a change to Enabled: after is
// the key as the update leaves it, so the same update may lift the cause.
// The key must not be past its expiry (move it to the future or -1) and must
// have quota (remain_quota > 0 or unlimited). It looks at the result, not at
// the old status, so disabling an exhausted key and enabling it again does
// not get round it.
func CheckEnable(after State, now int64) string {
	if after.Expired(now) {
		return MsgEnableExpired
	}
	if !after.UnlimitedQuota && after.RemainQuota <= 0 {
		return MsgEnableExhausted
	}
	return ""
}
