// Package httpx owns the /api wire conventions: the JSON envelope, decoding
// request bodies with a size limit, path and query parsing, and the adapter
// that turns a handler's returned error into a response.
package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/internal/msgtext"
	"github.com/modelgate/modelgate/internal/textfield"
)

// MaxBodyBytes bounds every /api request body.
const MaxBodyBytes = 1 << 20

// Messages of the wire layer.
const (
	MsgInvalidParams = "无效的参数" // spec: invalid JSON
	MsgBodyTooLarge  = "请求体过大,上限 1 MiB"
	// MsgBodyOverLimit takes the limit in MiB of a route with a larger one.
	MsgBodyOverLimit = "请求体过大,上限 %d MiB"
	MsgInvalidID     = "无效的ID" // spec: invalid id
	MsgNotFoundPath  = "接口不存在"
	MsgInternal      = "服务器内部错误,请稍后再试"
)

// Error is a failure to report to the client: Message is shown, Status is
// the HTTP status (200 for application-level failures, see docs/api.md).
// Message is the Chinese text; Adapt answers it in the language of the
// option MessageLanguage (internal/msgtext).
type Error struct {
	Status  int
	Message string
	// Data, when set, is the envelope's data: what a caller needs to act
	// on the refusal (a cluster sync's expected_id).
	Data any
	// format and args are Failf's, kept so the message is rendered from
	// its format rather than matched back from the formatted text.
	format string
	args   []any
}

func (e *Error) Error() string { return e.Message }

// Text is the message in lang.
func (e *Error) Text(lang msgtext.Lang) string {
	if e.args == nil {
		return msgtext.Message(lang, e.Message)
	}
	return msgtext.Render(lang, e.format, e.args...)
}

// Fail is an application-level failure: HTTP 200, success=false, msg.
func Fail(msg string) *Error { return &Error{Status: http.StatusOK, Message: msg} }

// FailStatus is a failure with an explicit HTTP status.
func FailStatus(status int, msg string) *Error { return &Error{Status: status, Message: msg} }

// Failf formats the failure message.
func Failf(format string, a ...any) *Error {
	e := Fail(fmt.Sprintf(format, a...))
	e.format, e.args = format, a
	return e
}

// Envelope is the /api response body. Extra top-level fields (total) are
// written by handlers that declare them in their own struct.
type Envelope struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// OK writes a success envelope carrying data.
func OK(w http.ResponseWriter, data any) error {
	return WriteJSON(w, http.StatusOK, Envelope{Success: true, Data: data})
}

// OKMessage writes a success envelope with a message and no data. The
// message is shown as it is: "" or text that is not Chinese (OKText
// renders a Chinese one).
func OKMessage(w http.ResponseWriter, msg string) error {
	return WriteJSON(w, http.StatusOK, Envelope{Success: true, Message: msg})
}

// OKText writes a success envelope whose message is a Chinese constant,
// in the language Adapt found for r.
func OKText(w http.ResponseWriter, r *http.Request, msg string) error {
	return OKMessage(w, msgtext.Message(Lang(r), msg))
}

type langKey struct{}

// Lang is the message language Adapt found for r: Chinese outside Adapt.
func Lang(r *http.Request) msgtext.Lang {
	if l, ok := r.Context().Value(langKey{}).(msgtext.Lang); ok {
		return l
	}
	return msgtext.Chinese
}

// List is the success envelope of paginated lists: data is the page, total
// counts all matching rows.
type List struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Data    any    `json:"data"`
	Total   int64  `json:"total"`
}

// OKList writes a page of a list.
func OKList(w http.ResponseWriter, items any, total int64) error {
	return WriteJSON(w, http.StatusOK, List{Success: true, Data: items, Total: total})
}

// Decode reads the JSON body into dst. Unknown fields are tolerated (clients
// send extras); invalid JSON and oversized bodies give a client error.
func Decode(w http.ResponseWriter, r *http.Request, dst any) error {
	return DecodeLimit(w, r, dst, MaxBodyBytes)
}

// DecodeLimit is Decode with a body limit of its own, for the internal
// endpoints whose bodies are larger than a person's (cluster sync).
func DecodeLimit(w http.ResponseWriter, r *http.Request, dst any, limit int64) error {
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		// Trailing data after the object ({"a":1} junk) is not valid JSON.
		return Fail(MsgInvalidParams)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooLarge):
		return TooLarge(limit)
	}
	return Fail(MsgInvalidParams)
}

// TooLarge is the failure of a body over limit bytes (HTTP 413).
func TooLarge(limit int64) *Error {
	if limit == MaxBodyBytes {
		return FailStatus(http.StatusRequestEntityTooLarge, MsgBodyTooLarge)
	}
	e := Failf(MsgBodyOverLimit, limit>>20)
	e.Status = http.StatusRequestEntityTooLarge
	return e
}

// PathID parses the {id} path value as a positive integer.
func PathID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, Fail(MsgInvalidID)
	}
	return id, nil
}

// QueryInt parses an optional integer query parameter; absent gives def.
func QueryInt(r *http.Request, name string, def int64) (int64, error) {
	v := strings.TrimSpace(r.URL.Query().Get(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, Failf("参数 %s 必须是整数", name)
	}
	return n, nil
}

// QueryText reads an optional text query parameter, trimmed. A value no
// column could hold or match (not UTF-8, a NUL or control character, more
// than maxChars characters) is refused here, before it reaches a query:
// PostgreSQL would fail the query on it (textfield).
func QueryText(r *http.Request, name string, maxChars int) (string, error) {
	v := strings.TrimSpace(r.URL.Query().Get(name))
	f := textfield.Field{Label: "参数 " + name, MaxChars: maxChars}
	if msg := f.Validate(v); msg != "" {
		return "", Fail(msg)
	}
	return v, nil
}

// HandlerFunc is the one handler shape: it writes a success response itself
// and returns an error for anything else.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Adapt turns h into an http.Handler that writes returned errors as the
// envelope, in the reader's language: the one the request's
// Accept-Language asks for (zh or en, msgtext.FromAcceptLanguage; the
// console sends its chosen language), else the one lang returns (the
// site's MessageLanguage; nil: Chinese), read once per request so a change
// of the option applies to the next request. Errors
// that are not *Error are internal: logged, and answered with a generic
// message so no detail leaks.
func Adapt(log *slog.Logger, lang func() msgtext.Lang, h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := msgtext.Chinese
		if asked, ok := msgtext.FromAcceptLanguage(r.Header.Get("Accept-Language")); ok {
			l = asked
		} else if lang != nil {
			l = lang()
		}
		r = r.WithContext(context.WithValue(r.Context(), langKey{}, l))
		defer func() {
			// A bug answers a logged 500 envelope, never a dropped connection.
			if p := recover(); p != nil {
				log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				_ = WriteJSON(w, http.StatusInternalServerError, Envelope{Success: false, Message: msgtext.Message(l, MsgInternal)})
			}
		}()
		err := h(w, r)
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			e = FailStatus(http.StatusInternalServerError, MsgInternal)
		}
		_ = WriteJSON(w, e.Status, Envelope{Success: false, Message: e.Text(l), Data: e.Data})
	})
}
