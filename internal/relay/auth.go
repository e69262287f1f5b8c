package relay

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/modelgate/modelgate/internal/token"
	"github.com/modelgate/modelgate/internal/user"
)

// authenticate resolves the sk- key of a request (spec: Authentication,
// scheme 3): the key's secret, an optional pinned channel, the key's status
// and its owner's. Subnet, model and pin checks need the request's model
// and happen in authorize. A key that was found but is refused (disabled,
// expired, exhausted, its owner banned) comes back with the refusal, so the
// refusal can be recorded as the owner's error log; callers must not use it
// otherwise.
func (rl *Relay) authenticate(r *http.Request) (*keyEntry, int64, error) {
	header := r.Header.Get("Authorization")
	if header == "" && r.Header.Get("x-api-key") != "" {
		header = r.Header.Get("x-api-key") // Anthropic clients send their key here
	}
	secret, pinned, _, err := token.ParseAuthKey(header)
	switch {
	case errors.Is(err, token.ErrNoKey):
		return nil, 0, unauthorized(MsgNoKey)
	case err != nil:
		return nil, 0, unauthorized(MsgInvalidKey)
	}
	hash := token.HashKeyHex(secret)
	e, err := rl.keys.get(r.Context(), &hash)
	if errors.Is(err, errUnknownKey) {
		return nil, 0, unauthorized(MsgInvalidKey)
	}
	if err != nil {
		return nil, 0, err
	}
	st := token.State{Status: e.token.Status, ExpiredTime: e.token.ExpiredTime}
	switch st.EffectiveStatus(time.Now().Unix()) {
	case token.StatusEnabled:
	case token.StatusExpired:
		return e, 0, unauthorized(MsgKeyExpired)
	case token.StatusExhausted:
		// The key is right, its quota is spent: 429 insufficient_quota as
		// OpenAI answers it, not a 401 that sends users to check the key.
		return e, 0, quotaExceeded(MsgKeyExhausted)
	default:
		return e, 0, unauthorized(MsgKeyDisabled)
	}
	if e.user.Status != user.StatusEnabled {
		return e, 0, forbidden(MsgUserBanned, "user_banned")
	}
	return e, pinned, nil
}

// authorize applies the key's subnet and model restrictions and the pinning
// rule to a call of model.
func authorize(r *http.Request, e *keyEntry, pinned int64, model string) error {
	if e.token.Subnet != "" {
		ip := clientAddr(r)
		if !ip.IsValid() || !token.SubnetAllows(e.token.Subnet, ip) {
			return forbidden(fmt.Sprintf(msgSubnetFmt, e.token.Subnet, ip), "subnet_not_allowed")
		}
	}
	if model != "" && !token.ModelAllowed(e.token.Models, model) {
		return forbidden(fmt.Sprintf(msgModelFmt, model), "model_not_allowed")
	}
	if pinned != 0 && e.user.Role < user.RoleAdmin {
		return forbidden(MsgPinNotAllowed, "channel_pin_not_allowed")
	}
	return nil
}

// clientAddr is the TCP peer's address; forwarded headers are not trusted.
func clientAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}
