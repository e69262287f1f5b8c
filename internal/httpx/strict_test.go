package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type strictBody struct {
	Name    *string `json:"name"`
	On      bool    `json:"on"`
	Rate    *int64  `json:"rate"`
	Small   int32   `json:"small"`
	Presets []struct {
		Amount float64 `json:"amount"`
		Bonus  int64   `json:"bonus"`
	} `json:"presets"`
}

func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		body, want, field string
	}{
		{`{"name":"a","on":true,"rate":5,"presets":[{"amount":1,"bonus":2}],"extra":null2}`, MsgInvalidParams, ""},
		{`{"name":"a","on":true,"rate":5,"presets":[{"amount":1,"bonus":2}],"extra":1}`, "", ""},
		{`null`, MsgBodyNotObject, ""},
		{`[]`, MsgBodyNotObject, ""},
		{`"x"`, MsgBodyNotObject, ""},
		{`{"a":1} {}`, MsgInvalidParams, ""},
		{`{"name":null}`, "无效的参数: name 不能为 null", "name"},
		{`{"presets":[{"amount":1},{"amount":null}]}`, "无效的参数: presets[1].amount 不能为 null", "presets[1].amount"},
		{`{"presets":[{"amount":1},null]}`, "无效的参数: presets[1] 不能为 null", "presets[1]"},
		{`{"x":{"y":[1,[2,null]]}}`, "无效的参数: x.y[1][1] 不能为 null", "x.y[1][1]"},
		{`{"rate":"5"}`, "无效的参数: rate 必须是整数", "rate"},
		{`{"rate":1.5}`, "无效的参数: rate 必须是整数", "rate"},
		{`{"rate":9223372036854775808}`, "无效的参数: rate 超出范围", "rate"},
		{`{"rate":-9223372036854775809}`, "无效的参数: rate 超出范围", "rate"},
		{`{"rate":1e30}`, "无效的参数: rate 超出范围", "rate"},
		{`{"small":2147483648}`, "无效的参数: small 超出范围", "small"},
		{`{"name":5}`, "无效的参数: name 必须是字符串", "name"},
		{`{"on":"true"}`, "无效的参数: on 必须是 true 或 false", "on"},
		{`{"presets":{}}`, "无效的参数: presets 必须是数组", "presets"},
		{`{"presets":[1]}`, "无效的参数: presets 必须是对象", "presets"},
		{`{"presets":[{"bonus":"1"}]}`, "无效的参数: presets.bonus 必须是整数", "presets.bonus"},
		{`{"presets":[{"amount":"1"}]}`, "无效的参数: presets.amount 必须是数字", "presets.amount"},
	} {
		r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(tc.body))
		var dst strictBody
		err := DecodeStrict(httptest.NewRecorder(), r, &dst)
		got := ""
		var field string
		if err != nil {
			e := err.(*Error)
			got = e.Message
			if m, ok := e.Data.(map[string]string); ok {
				field = m["field"]
			}
		}
		if got != tc.want || field != tc.field {
			t.Errorf("%s: got %q field %q, want %q field %q", tc.body, got, field, tc.want, tc.field)
		}
	}
	big := `{"name":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	err := DecodeStrict(httptest.NewRecorder(), httptest.NewRequest(http.MethodPut, "/", strings.NewReader(big)), &strictBody{})
	if e, ok := err.(*Error); !ok || e.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversized body: %v", err)
	}
}
