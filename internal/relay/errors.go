package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Messages of key authentication (spec: Authentication, scheme 3). The
// spec fixes the 403 texts; the 401 ones name the precise reason.
const (
	MsgNoKey         = "未提供令牌"
	MsgInvalidKey    = "无效的令牌"
	MsgKeyDisabled   = "该令牌已被禁用"
	MsgKeyExpired    = "该令牌已过期"
	MsgKeyExhausted  = "该令牌额度已用尽"
	MsgUserBanned    = "用户已被封禁"
	msgSubnetFmt     = "该令牌只能在指定网段使用:%s,当前 ip:%s"
	msgModelFmt      = "该令牌无权使用模型:%s"
	MsgPinNotAllowed = "普通用户不支持指定渠道"
	MsgUserQuota     = "用户额度不足"
	MsgTokenQuota    = "令牌额度不足"
	msgNoPriceFmt    = "模型 %s 未设置价格,暂不可用"
	msgNoChannelFmt  = "分组 %s 下模型 %s 无可用渠道"
	msgPinnedMissing = "指定的渠道 %d 不存在、未启用或不支持该模型"
	// An endpoint no channel of the model can speak (errors: 400
	// unsupported_endpoint); %s are the group, the model and the path.
	msgUnsupportedFmt       = "分组 %s 下模型 %s 的渠道不支持接口 %s"
	msgPinnedUnsupportedFmt = "指定的渠道 %d 不支持接口 %s"
	msgMethodFmt            = "请求方法 %s 不适用于 %s,允许: %s"
	MsgBodyTooLarge         = "请求体过大"
	MsgInvalidJSON          = "请求体不是有效的 JSON"
	MsgModelRequired        = "缺少 model 参数"
	MsgUpstreamFailed       = "上游服务请求失败"
	// msgBodyIdleFmt: the upstream began a non-streaming answer and sent
	// nothing more of it for %d seconds (idleBody).
	msgBodyIdleFmt = "%s: 上游响应已开始,但 %d 秒内未再发送数据"
	// MsgOwnerUnavailable: in cluster mode, the node that owns the user's
	// balance could not grant this node a part of it (503, retryable).
	MsgOwnerUnavailable = "用户余额所属的集群节点暂时无法访问,请稍后重试"
	MsgBadUpstream      = "上游服务返回了无法解析的响应"
)

// apiError is a failure answered in the ingress dialect's error shape with
// a real HTTP status. message is the Chinese text; writeError answers it in
// the language of the option MessageLanguage (internal/msgtext).
type apiError struct {
	status  int
	message string
	typ     string
	code    string
	// format and args are errf's, kept so the message is rendered from its
	// format rather than matched back from the formatted text.
	format string
	args   []any
	// header is set on the answer (a plan limit's Retry-After and
	// rate-limit headers).
	header http.Header
}

func (e *apiError) Error() string { return e.message }

// text is the message in lang.
func (e *apiError) text(lang msgtext.Lang) string {
	if e.args == nil {
		return msgtext.Message(lang, e.message)
	}
	return msgtext.Render(lang, e.format, e.args...)
}

func errf(status int, typ, code, format string, a ...any) *apiError {
	return &apiError{status: status, typ: typ, code: code, message: fmt.Sprintf(format, a...), format: format, args: a}
}

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, message: msg, typ: "invalid_request_error", code: "invalid_api_key"}
}

func forbidden(msg, code string) *apiError {
	return &apiError{status: http.StatusForbidden, message: msg, typ: "permission_error", code: code}
}

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, message: msg, typ: "invalid_request_error", code: "invalid_request"}
}

// Codes SDKs and agents act on (docs/relay.md, Errors). OpenAI answers a
// spent balance with 429 insufficient_quota, an unknown model with 404
// model_not_found; both SDK families choose their exception by status.
const (
	codeInsufficientQuota   = "insufficient_quota"
	codeModelNotFound       = "model_not_found"
	codeUnsupportedEndpoint = "unsupported_endpoint"
)

// quotaExceeded is a balance or key quota too low for the call: 429 with
// OpenAI's insufficient_quota type and code. Not a 401: the key is right.
func quotaExceeded(msg string) *apiError {
	return &apiError{status: http.StatusTooManyRequests, message: msg, typ: codeInsufficientQuota, code: codeInsufficientQuota}
}

// modelNotFound is a model this caller is not offered (not priced, or no
// enabled channel for it in the caller's group): 404, which SDKs do not
// retry. Channels that exist but all fail stay a 5xx.
func modelNotFound(format string, a ...any) *apiError {
	return errf(http.StatusNotFound, "invalid_request_error", codeModelNotFound, format, a...)
}

// unsupportedEndpoint is an endpoint the model's channels cannot speak
// (embeddings on an Anthropic-only model): 400, as no retry can help.
func unsupportedEndpoint(format string, a ...any) *apiError {
	return errf(http.StatusBadRequest, "invalid_request_error", codeUnsupportedEndpoint, format, a...)
}

// writeError answers err in the ingress dialect, in the message language
// of the request (langWriter). Errors that are not *apiError are internal:
// their text is not shown.
func writeError(w http.ResponseWriter, ingress dialect.API, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{status: http.StatusInternalServerError, message: "internal error", typ: "server_error", code: "internal_error"}
	}
	msg := e.text(langOf(w))
	var body any = openai.ErrorBody{Error: openai.ErrorDetail{Message: msg, Type: e.typ, Code: e.code}}
	if ingress == dialect.Anthropic {
		body = anthropic.ErrorResponse{Type: "error", Error: anthropic.ErrorDetail{Type: anthropicErrorType(e), Message: msg}}
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range e.header {
		w.Header()[k] = v
	}
	if e.code == codeInsufficientQuota {
		// Both official SDKs retry every 429 unless told not to; a spent
		// balance does not come back within their backoff, so each refused
		// call would be sent three times.
		w.Header().Set("X-Should-Retry", "false")
	}
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(body)
}

// langWriter carries a /v1 request's message language to writeError, which
// every failure path reaches with the ResponseWriter alone. Handler puts
// it around the writer once per request; Unwrap keeps
// http.ResponseController (flush, deadlines) reaching the real writer.
//
// It also times the answer for Server-Timing and the observer (observe.go):
// one allocation per request carries both.
type langWriter struct {
	http.ResponseWriter
	lang msgtext.Lang

	start      time.Time     // when the relay got the request
	upstream   time.Duration // upstream time so far (call.addUpstream)
	headerDone bool
	status     int
	// upAtHeader and gwAtHeader are the Server-Timing figures.
	upAtHeader, gwAtHeader time.Duration
}

func (w *langWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// langOf finds the language Handler gave w: Chinese without one.
func langOf(w http.ResponseWriter) msgtext.Lang {
	for {
		switch v := w.(type) {
		case *langWriter:
			return v.lang
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return msgtext.Chinese
		}
	}
}

// lang is the message language now (option MessageLanguage).
func (rl *Relay) lang() msgtext.Lang {
	if rl.Options == nil {
		return msgtext.Chinese
	}
	return rl.Options.Current().MessageLanguage
}

// anthropicErrorType maps an error to the type Anthropic uses for it: by
// its status, except a spent balance, which is billing_error (the type
// Anthropic documents for billing problems and @anthropic-ai/sdk lists in
// ErrorType) under status 429, so the SDK still raises RateLimitError.
// Statuses Anthropic does not document (405, 408) are
// invalid_request_error, which it uses for "other 4XX status codes".
func anthropicErrorType(e *apiError) string {
	if e.code == codeInsufficientQuota {
		return "billing_error"
	}
	switch status := e.status; {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusGatewayTimeout:
		return "timeout_error" // Anthropic's type for its own 504
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "api_error"
}
