package relay

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelgate/modelgate/internal/relay/dialect"
)

// MsgMessagesRequired refuses a count_tokens body without a messages array.
const MsgMessagesRequired = "缺少 messages 参数"

// maxCountAnswer bounds what is read of an upstream's count_tokens answer:
// {"input_tokens": N}.
const maxCountAnswer = 64 << 10

// countTokens answers POST /v1/messages/count_tokens (the Anthropic SDK's
// messages.countTokens) once the call is authorized and the model offered.
// It is free: nothing is held or logged. An Anthropic channel of the
// caller's group (or the pinned one) answers when it can; otherwise, or when
// it fails, the count is local: the text of the request counted with the
// relay's tokenizer, an estimate for other vendors' models (docs/relay.md).
func (c *call) countTokens() error {
	var body struct {
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(c.body, &body) != nil || len(body.Messages) == 0 || body.Messages[0] != '[' {
		return badRequest(MsgMessagesRequired)
	}
	if u := c.countingChannel(); u != nil {
		done, err := c.countUpstream(u)
		c.endUpstream()
		if done {
			return err
		}
	}
	n := c.rl.tokens.Count(c.meta.model, collectText(c.body, promptKeys))
	c.w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(c.w).Encode(countAnswer{InputTokens: n})
}

type countAnswer struct {
	InputTokens int64 `json:"input_tokens"`
}

// countingChannel is the Anthropic channel that counts this call: the
// pinned one when it is Anthropic, else one of the group's for the model
// that is not cooling down; nil when there is none.
func (c *call) countingChannel() *upstream {
	anthropicOnly := func(u *upstream) bool { return u.api != dialect.Anthropic || u.framed != nil }
	if c.pinned != 0 {
		if u := c.snap.channels[c.pinned]; u != nil && !anthropicOnly(u) {
			return u
		}
		return nil
	}
	return pick(c.tiers, func(u *upstream) bool { return anthropicOnly(u) || c.rl.coolingDown(u) })
}

// countUpstream asks channel u to count. done is false when the local count
// should answer instead: the upstream failed, answered something other than
// a count, or does not offer the endpoint (many Anthropic-compatible
// services do not). Its 400, a request it finds invalid, reaches the client
// as it came, like any same-dialect refusal.
func (c *call) countUpstream(u *upstream) (done bool, err error) {
	body := c.body
	model := u.upstreamModel(c.meta.model)
	if model != c.bodyModel {
		m, err := json.Marshal(model)
		if err != nil {
			return true, err
		}
		if body, err = withFields(body, []bodyField{{"model", m}}); err != nil {
			return true, badRequest(MsgInvalidJSON)
		}
	}
	resp, err := c.post(u, u.native.NativeURL(u.BaseURL, c.ep.path, model, false), body, "application/json")
	if err != nil {
		if c.r.Context().Err() != nil {
			return true, err // the client left
		}
		c.rl.Log.Warn("count_tokens upstream failed; counting locally", "channel", u.ID, "request_id", c.requestID,
			"err", scrub(err.Error(), c.cred.Key))
		return false, nil
	}
	switch resp.StatusCode {
	case http.StatusOK:
		defer resp.Body.Close()
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCountAnswer))
		var a struct {
			InputTokens *int64 `json:"input_tokens"`
		}
		if err != nil || json.Unmarshal(raw, &a) != nil || a.InputTokens == nil || *a.InputTokens < 0 {
			c.rl.Log.Warn("count_tokens upstream answer unreadable; counting locally", "channel", u.ID, "request_id", c.requestID)
			return false, nil
		}
		c.copyHeaders(resp.Header)           // its request-id and rate-limit state
		c.w.Header().Del("Content-Encoding") // the answer is re-encoded
		c.w.Header().Del("Content-Disposition")
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(http.StatusOK)
		return true, json.NewEncoder(c.w).Encode(countAnswer{InputTokens: *a.InputTokens})
	case http.StatusBadRequest:
		return true, c.relayVerbatim(resp)
	}
	resp.Body.Close()
	c.rl.Log.Warn("count_tokens upstream refused; counting locally", "channel", u.ID, "request_id", c.requestID, "status", resp.StatusCode)
	return false, nil
}
