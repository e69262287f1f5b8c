package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Messages of key authentication (spec: Authentication, scheme 3). The
// spec fixes the 403 texts; the 401 ones name the precise reason.
const (
	MsgNoKey          = "未提供令牌"
	MsgInvalidKey     = "无效的令牌"
	MsgKeyDisabled    = "该令牌已被禁用"
	MsgKeyExpired     = "该令牌已过期"
	MsgKeyExhausted   = "该令牌额度已用尽"
	MsgUserBanned     = "用户已被封禁"
	msgSubnetFmt      = "该令牌只能在指定网段使用:%s,当前 ip:%s"
	msgModelFmt       = "该令牌无权使用模型:%s"
	MsgPinNotAllowed  = "普通用户不支持指定渠道"
	MsgUserQuota      = "用户额度不足"
	MsgTokenQuota     = "令牌额度不足"
	msgNoPriceFmt     = "模型 %s 未设置价格,暂不可用"
	msgNoChannelFmt   = "分组 %s 下模型 %s 无可用渠道"
	msgPinnedMissing  = "指定的渠道 %d 不存在、未启用或不支持该模型"
	MsgBodyTooLarge   = "请求体过大"
	MsgInvalidJSON    = "请求体不是有效的 JSON"
	MsgModelRequired  = "缺少 model 参数"
	MsgUpstreamFailed = "上游服务请求失败"
	MsgBadUpstream    = "上游服务返回了无法解析的响应"
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

// dialect is the wire format of an ingress or a channel.
type dialect int

const (
	dialectOpenAI dialect = iota
	dialectAnthropic
	dialectGemini
)

// writeError answers err in the ingress dialect, in the message language
// of the request (langWriter). Errors that are not *apiError are internal:
// their text is not shown.
func writeError(w http.ResponseWriter, ingress dialect, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{status: http.StatusInternalServerError, message: "internal error", typ: "server_error", code: "internal_error"}
	}
	msg := e.text(langOf(w))
	var body any = openai.ErrorBody{Error: openai.ErrorDetail{Message: msg, Type: e.typ, Code: e.code}}
	if ingress == dialectAnthropic {
		body = anthropic.ErrorResponse{Type: "error", Error: anthropic.ErrorDetail{Type: anthropicErrorType(e.status), Message: msg}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(body)
}

// langWriter carries a /v1 request's message language to writeError, which
// every failure path reaches with the ResponseWriter alone. Handler puts
// it around the writer once per request; Unwrap keeps
// http.ResponseController (flush, deadlines) reaching the real writer.
type langWriter struct {
	http.ResponseWriter
	lang msgtext.Lang
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

// anthropicErrorType maps a status to the error type Anthropic uses for it.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return "invalid_request_error"
	}
	return "api_error"
}
