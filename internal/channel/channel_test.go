package channel

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/user"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a", []string{"a"}},
		{" gpt-4o , gpt-4o-mini,gpt-4o ", []string{"gpt-4o", "gpt-4o-mini"}},
		{"b,a,b,,a,c", []string{"b", "a", "c"}},
		{"claude 3", []string{"claude 3"}}, // inner spaces are part of the name
		{"GPT-4o,gpt-4o,Gpt-4O", []string{"GPT-4o"}},
	}
	for _, tt := range tests {
		if got := Split(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeModels(t *testing.T) {
	tests := []struct {
		in, want, msg string
	}{
		{"gpt-4o", "gpt-4o", ""},
		{" gpt-4o, gpt-4o ,o1 ", "gpt-4o,o1", ""},
		{"", "", MsgModelsEmpty},
		{" , , ", "", MsgModelsEmpty},
		{strings.Repeat("m", 191), strings.Repeat("m", 191), ""},
		{"ok," + strings.Repeat("m", 192), "", MsgModelNameTooLong},
		{"ok,gpt\x00", "", "模型名称 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"模型-1", "模型-1", ""},
	}
	for _, tt := range tests {
		got, msg := NormalizeModels(tt.in)
		if got != tt.want || msg != tt.msg {
			t.Errorf("NormalizeModels(%q) = %q, %q; want %q, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
}

func TestNormalizeGroups(t *testing.T) {
	long := strings.Repeat("g", 30)
	repeated := strings.Repeat(long+"x,", 20) // one name, deduped well under the limit
	distinct := make([]string, 20)
	for i := range distinct {
		distinct[i] = long + string(rune('a'+i))
	}
	tests := []struct {
		in, want, msg string
	}{
		{"", "default", ""},
		{" , ", "default", ""},
		{"vip, default ,vip", "vip,default", ""},
		{strings.Repeat("g", 33), "", user.MsgGroupInvalid},
		{repeated, long + "x", ""},
		{strings.Join(distinct, ","), "", MsgGroupsTooLong},
	}
	for _, tt := range tests {
		got, msg := NormalizeGroups(tt.in)
		if got != tt.want || msg != tt.msg {
			t.Errorf("NormalizeGroups(%q) = %q, %q; want %q, %q", tt.in, got, msg, tt.want, tt.msg)
		}
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	tests := []struct {
		typ       int
		in, want  string
		wantValid bool
	}{
		{TypeOpenAI, "", "https://api.openai.com", true},
		{TypeAnthropic, "  ", "https://api.anthropic.com", true},
		{TypeGemini, "", "https://generativelanguage.googleapis.com", true},
		{TypeOpenAI, "http://127.0.0.1:8080/", "http://127.0.0.1:8080", true},
		{TypeOpenAI, "https://proxy.example.com/openai//", "https://proxy.example.com/openai", true},
		{TypeOpenAI, "ftp://example.com", "", false},
		{TypeOpenAI, "example.com", "", false},
		{TypeOpenAI, "https://", "", false},
		{TypeOpenAI, "https://example.com/?x=1", "", false},
		{TypeOpenAI, "https://example.com/#top", "", false},
		{TypeOpenAI, "http://exa mple.com", "", false},
		{TypeOpenAI, "https://example.com/" + strings.Repeat("p", 600), "", false},
	}
	for _, tt := range tests {
		got, msg := NormalizeBaseURL(tt.typ, tt.in)
		if got != tt.want || (msg == "") != tt.wantValid {
			t.Errorf("NormalizeBaseURL(%d, %q) = %q, %q; want %q valid=%v", tt.typ, tt.in, got, msg, tt.want, tt.wantValid)
		}
	}
}

func TestNormalizeModelMapping(t *testing.T) {
	tests := []struct {
		in, want  string
		wantValid bool
	}{
		{"", "", true},
		{"  ", "", true},
		{`{}`, `{}`, true},
		{` {"gpt-4":"gpt-4o"} `, `{"gpt-4":"gpt-4o"}`, true},
		{`{"a":"b","c":"d"}`, `{"a":"b","c":"d"}`, true},
		{`null`, "", false},
		{`[]`, "", false},
		{`"x"`, "", false},
		{`{"a":1}`, "", false},
		{`{"a":"b"`, "", false},
		{`{"":"b"}`, "", false},
		{`{"a":" "}`, "", false},
		{`{"a":null}`, "", false},
	}
	for _, tt := range tests {
		got, msg := NormalizeModelMapping(tt.in)
		if got != tt.want || (msg == "") != tt.wantValid {
			t.Errorf("NormalizeModelMapping(%q) = %q, %q; want %q valid=%v", tt.in, got, msg, tt.want, tt.wantValid)
		}
	}
	m, err := ParseModelMapping(`{"gpt-4":"gpt-4o"}`)
	if err != nil || m["gpt-4"] != "gpt-4o" || len(m) != 1 {
		t.Fatalf("ParseModelMapping = %v, %v", m, err)
	}
}

func TestFieldsNormalize(t *testing.T) {
	valid := func() Fields {
		return Fields{Type: TypeOpenAI, Name: " main ", Models: "a, b", Weight: 1, Status: StatusEnabled}
	}
	f := valid()
	if msg := f.Normalize(); msg != "" {
		t.Fatalf("valid fields: %q", msg)
	}
	want := Fields{Type: TypeOpenAI, Name: "main", BaseURL: "https://api.openai.com", Models: "a,b",
		Groups: "default", Weight: 1, Status: StatusEnabled}
	if f != want {
		t.Fatalf("normalized = %+v, want %+v", f, want)
	}
	tests := []struct {
		name   string
		change func(*Fields)
		msg    string
	}{
		{"type 0", func(f *Fields) { f.Type = 0 }, MsgTypeInvalid},
		{"type 2", func(f *Fields) { f.Type = 2 }, MsgTypeInvalid},
		{"type 42", func(f *Fields) { f.Type = 42 }, MsgTypeInvalid},
		{"azure without endpoint", func(f *Fields) { f.Type = TypeAzure }, MsgAzureBaseURL},
		{"azure bad version", func(f *Fields) { f.Type, f.BaseURL, f.Other = TypeAzure, "https://r.openai.azure.com", "2024-13-01" }, MsgAzureAPIVersion},
		{"vertex bad region", func(f *Fields) { f.Type, f.Other = TypeVertex, "us-central1/../x" }, MsgVertexRegion},
		{"other with NUL", func(f *Fields) { f.Other = "a\x00b" }, "other 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"},
		{"empty name", func(f *Fields) { f.Name = "  " }, MsgNameLength},
		{"long name", func(f *Fields) { f.Name = strings.Repeat("名", 129) }, MsgNameLength},
		{"bad url", func(f *Fields) { f.BaseURL = "localhost:8080" }, MsgBaseURLInvalid},
		{"no models", func(f *Fields) { f.Models = "," }, MsgModelsEmpty},
		{"bad group", func(f *Fields) { f.Groups = strings.Repeat("g", 40) }, user.MsgGroupInvalid},
		{"bad mapping", func(f *Fields) { f.ModelMapping = "{" }, MsgModelMappingInvalid},
		{"negative weight", func(f *Fields) { f.Weight = -1 }, MsgWeightNegative},
		{"status 0", func(f *Fields) { f.Status = 0 }, MsgStatusInvalid},
		{"status 4", func(f *Fields) { f.Status = 4 }, MsgStatusInvalid},
	}
	for _, tt := range tests {
		f := valid()
		tt.change(&f)
		if msg := f.Normalize(); msg != tt.msg {
			t.Errorf("%s: Normalize() = %q, want %q", tt.name, msg, tt.msg)
		}
	}
	zero := valid()
	zero.Weight = 0
	if msg := zero.Normalize(); msg != "" {
		t.Errorf("weight 0: %q", msg)
	}
}

func TestKeyAndLastErrorText(t *testing.T) {
	if key, msg := NormalizeKey("  sk-1\nline-2  "); key != "sk-1\nline-2" || msg != "" {
		t.Errorf("NormalizeKey multi-line = %q, %q", key, msg)
	}
	if _, msg := NormalizeKey("sk-\x00"); msg != "密钥 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符" {
		t.Errorf("NormalizeKey NUL: %q", msg)
	}
	long := strings.Repeat("错", 2000) // 6,000 bytes
	got := CleanLastError("上游返回 401: " + long[:2048] + "\x00")
	if !utf8.ValidString(got) || strings.ContainsRune(got, 0) || !strings.HasPrefix(got, "上游返回 401: 错") {
		t.Errorf("CleanLastError kept bytes no column holds: %q", got)
	}
	if got := CleanLastError(long); len(got) > 4096 || !utf8.ValidString(got) {
		t.Errorf("CleanLastError: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

func TestCloudTypeDefaults(t *testing.T) {
	for _, tc := range []struct {
		typ              int
		other, wantOther string
	}{
		{TypeAzure, "", "2024-10-21"},
		{TypeAzure, " v1 ", "v1"},
		{TypeBedrock, "", ""},
		{TypeVertex, "", "us-central1"},
		{TypeVertex, "global", "global"},
	} {
		f := Fields{Type: tc.typ, Name: "c", Models: "m", Weight: 1, Status: StatusEnabled, Other: tc.other}
		if tc.typ == TypeAzure {
			f.BaseURL = "https://r.openai.azure.com/"
		}
		if msg := f.Normalize(); msg != "" || f.Other != tc.wantOther {
			t.Errorf("type %d other %q: %q, other %q, want %q", tc.typ, tc.other, msg, f.Other, tc.wantOther)
		}
		if tc.typ != TypeAzure && f.BaseURL != "" {
			t.Errorf("type %d: base_url defaulted to %q; the region's endpoint is the provider package's", tc.typ, f.BaseURL)
		}
	}
	if msg := CheckKey(TypeBedrock, "AKIAGATEWAYTEST00001|s|us-east-1|"); msg != MsgBedrockKey {
		t.Errorf("empty session token part: %q", msg)
	}
	if msg := CheckKey(TypeOpenAI, "anything goes"); msg != "" {
		t.Errorf("openai key refused: %q", msg)
	}
}
