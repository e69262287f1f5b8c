package relay

import (
	"fmt"
	"testing"
)

// metaScanCases are request bodies scanMeta must read exactly as
// encoding/json does (decodeMeta).
var metaScanCases = []string{
	`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"max_tokens":64}`,
	`{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"stream_options":{}}`,
	`{"model":"gpt-test","stream_options":{"include_usage":true},"stream_options":null}`,
	`{"model":"gpt-test","stream_options":null,"stream_options":{"include_usage":true}}`,
	`{"model":"gpt-test","stream_options":{"include_usage":"yes"}}`,
	`{"model":"gpt-test","stream_options":[]}`,
	`{"model":"gpt-test","stream_options":{"include_usage":null}}`,
	`{"model":"gpt-test","stream_options":{"INCLUDE_USAGE":true,"x":[1,{"a":"}"}]}}`,
	`{"MODEL":"a","Stream":true,"Max_Tokens":5,"max_completion_tokens":9,"max_output_tokens":7}`,
	`{"model":"a","model":"b"}`,
	`{"model":"a","model":null}`,
	`{"model":null}`,
	`{"model":"  "}`,
	`{"model":5}`,
	`{"model":"a","stream":"true"}`,
	`{"model":"a","stream":null,"stream":false}`,
	`{"model":"a","max_tokens":1.5}`,
	`{"model":"a","max_tokens":-3}`,
	`{"model":"a","max_tokens":99999999999999999999}`,
	`{"model":"a","max_tokens":"5"}`,
	`{"model":"a","n":3,"best_of":5}`,
	`{"model":"a","n":"x","best_of":null}`,
	`{"model":"a","n":1000,"best_of":0.5}`,
	`{"model":"a","n":2.7}`,
	`{"model":"gpt-\u00e9","n":2}`,
	`{"model":"gpt-é"}`,
	`{"model":"a\"b"}`,
	`{"m\u006fdel":"a"}`,
	`{"model":"a","ſtream":true}`,
	`{"model":"a","stream_options":{"include_uſage":true}}`,
	"{\"model\":\"a\xff\"}",
	` { "model" : "a" , "stream" : true } `,
	`{}`,
	`null`,
	` null `,
	`[]`,
	`"model"`,
	`5`,
	`{"model":"a"`,
	``,
	`{"model":"a"} {}`,
}

func TestScanMetaMatchesEncodingJSON(t *testing.T) {
	for _, c := range metaScanCases {
		checkScanMeta(t, c)
	}
}

func FuzzScanMeta(f *testing.F) {
	for _, c := range metaScanCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) { checkScanMeta(t, c) })
}

func checkScanMeta(t *testing.T, c string) {
	t.Helper()
	fast, fastErr, ok := scanMeta([]byte(c))
	if !ok {
		return // left to decodeMeta
	}
	slow, slowErr := decodeMeta([]byte(c))
	if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || fast != slow {
		t.Fatalf("%q: scanMeta %+v %v, decodeMeta %+v %v", c, fast, fastErr, slow, slowErr)
	}
}
