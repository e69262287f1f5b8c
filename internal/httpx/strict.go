package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// Messages of strict decoding (DecodeStrict). Each starts with the spec's
// 无效的参数 and names the field, so a client matching the spec's text by
// its start keeps working and a person sees what to fix.
const (
	MsgBodyNotObject = "无效的参数: 请求体必须是 JSON 对象"
	MsgFieldNull     = "无效的参数: %s 不能为 null"
	MsgFieldInteger  = "无效的参数: %s 必须是整数"
	MsgFieldNumber   = "无效的参数: %s 必须是数字"
	MsgFieldString   = "无效的参数: %s 必须是字符串"
	MsgFieldBool     = "无效的参数: %s 必须是 true 或 false"
	MsgFieldArray    = "无效的参数: %s 必须是数组"
	MsgFieldObject   = "无效的参数: %s 必须是对象"
	MsgFieldRange    = "无效的参数: %s 超出范围"
)

// DecodeStrict is Decode for the settings and profile updates, where a
// silently ignored value would save something the caller did not mean
// (issue 27 §5): the body must be a JSON object, and a null anywhere in it,
// a value of the wrong type or a number its field cannot hold is refused
// with the field named (also as data.field). Invalid JSON is the spec's
// plain 无效的参数. Unknown fields are still tolerated.
func DecodeStrict(w http.ResponseWriter, r *http.Request, dst any) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return TooLarge(MaxBodyBytes)
	}
	if err != nil || !json.Valid(raw) {
		return Fail(MsgInvalidParams)
	}
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
		return Fail(MsgBodyNotObject)
	}
	if path := nullPath(raw); path != "" {
		return fieldFail(MsgFieldNull, path)
	}
	err = json.Unmarshal(raw, dst)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fieldFail(typeMessage(typeErr), cmpField(typeErr.Field))
	}
	if err != nil {
		return Fail(MsgInvalidParams)
	}
	return nil
}

// DecodeStrictPinned is DecodeStrict for a route whose refusal the spec
// fixes as 无效的参数 (PUT /api/setting/topup): the message stays the
// spec's, and data carries the field and the reason in the caller's
// language: {"field": "exchange_rate", "reason": "…"}.
func DecodeStrictPinned(w http.ResponseWriter, r *http.Request, dst any) error {
	err := DecodeStrict(w, r, dst)
	var e *Error
	if !errors.As(err, &e) || e.Message == MsgInvalidParams || e.Status != http.StatusOK {
		return err
	}
	data := map[string]string{"reason": e.Text(Lang(r))}
	if f, ok := e.Data.(map[string]string); ok {
		data["field"] = f["field"]
	}
	pinned := Fail(MsgInvalidParams)
	pinned.Data = data
	return pinned
}

func fieldFail(format, field string) *Error {
	e := Failf(format, field)
	e.Data = map[string]string{"field": field}
	return e
}

// cmpField is the field's path as the caller wrote it ("the body" for the
// top level).
func cmpField(f string) string {
	if f == "" {
		return "body"
	}
	return f
}

// typeMessage says what the field must be, or that its number is out of
// its range.
func typeMessage(e *json.UnmarshalTypeError) string {
	t := e.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	literal, isNumber := strings.CutPrefix(e.Value, "number ")
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if isNumber && !strings.ContainsAny(literal, ".eE") {
			return MsgFieldRange // an integer its field cannot hold
		}
		if isNumber {
			if f, err := strconv.ParseFloat(literal, 64); err == nil && f == math.Trunc(f) {
				return MsgFieldRange // 1e30: integral, too large
			}
		}
		return MsgFieldInteger
	case reflect.Float32, reflect.Float64:
		if isNumber {
			return MsgFieldRange
		}
		return MsgFieldNumber
	case reflect.String:
		return MsgFieldString
	case reflect.Bool:
		return MsgFieldBool
	case reflect.Slice, reflect.Array:
		return MsgFieldArray
	}
	return MsgFieldObject
}

// nullPath is the path of the first null in the JSON value raw
// ("presets[1].amount"), or "" when it holds none.
func nullPath(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		key    string // the object's current key
		index  int    // the array's next index
		expect bool   // object: the next token is a key
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for i, f := range stack {
			if f.object {
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.index-1) + "]")
			}
		}
		return b.String()
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.object && top.expect {
				if k, ok := tok.(string); ok {
					top.key, top.expect = k, false
					continue
				}
			} else if !top.object {
				if d, ok := tok.(json.Delim); !ok || d != ']' {
					top.index++
				}
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		case nil:
			if p := path(); p != "" {
				return p
			}
			return "body"
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true // a value ended: a key comes next
		}
	}
}
