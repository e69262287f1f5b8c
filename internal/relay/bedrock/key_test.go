package bedrock_test

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/bedrock"
)

func TestParseKey(t *testing.T) {
	good := []struct {
		key  string
		want bedrock.Credentials
	}{
		{"AKIAIOSFODNN7EXAMPLE|wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY|us-east-1",
			bedrock.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Region: "us-east-1"}},
		{" ASIAIOSFODNN7EXAMPLE | secret+/= | eu-central-1 | FwoGZXIvYXdzEJr//token= \n",
			bedrock.Credentials{AccessKeyID: "ASIAIOSFODNN7EXAMPLE", SecretAccessKey: "secret+/=", Region: "eu-central-1", SessionToken: "FwoGZXIvYXdzEJr//token="}},
		{"AKIAIOSFODNN7EXAMPLE|s|us-gov-west-1", bedrock.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "s", Region: "us-gov-west-1"}},
	}
	for _, tc := range good {
		got, err := bedrock.ParseKey(tc.key)
		if err != nil || got != tc.want {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
	for _, key := range []string{
		"",
		"AKIAIOSFODNN7EXAMPLE|secret",
		"AKIAIOSFODNN7EXAMPLE|secret|us-east-1|token|extra",
		"akiaiosfodnn7example|secret|us-east-1",
		"AKIA|secret|us-east-1",
		"AKIAIOSFODNN7EXAMPLE||us-east-1",
		"AKIAIOSFODNN7EXAMPLE|sec ret|us-east-1",
		"AKIAIOSFODNN7EXAMPLE|sec\x00ret|us-east-1",
		"AKIAIOSFODNN7EXAMPLE|sec\xffret|us-east-1",
		"AKIAIOSFODNN7EXAMPLE|secret|US-EAST-1",
		"AKIAIOSFODNN7EXAMPLE|secret|useast1",
		"AKIAIOSFODNN7EXAMPLE|secret|us-east-1/../x",
		"AKIAIOSFODNN7EXAMPLE|secret|us-east-1|",
	} {
		if _, err := bedrock.ParseKey(key); err == nil {
			t.Errorf("ParseKey(%q) accepted", key)
		}
	}
}

func TestCredentialsStringHidesSecrets(t *testing.T) {
	c, err := bedrock.ParseKey("AKIAIOSFODNN7EXAMPLE|topsecret|us-east-1|sessiontok")
	if err != nil {
		t.Fatal(err)
	}
	if s := c.String(); strings.Contains(s, "topsecret") || strings.Contains(s, "sessiontok") {
		t.Fatalf("String() = %q", s)
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		op   bedrock.Operation
		id   string
		want string
	}{
		{bedrock.Invoke, "anthropic.claude-3-5-sonnet-20240620-v1:0", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke"},
		{bedrock.InvokeStream, "us.anthropic.claude-sonnet-4-20250514-v1:0", "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream"},
		{bedrock.Converse, "meta.llama3-70b-instruct-v1:0", "/model/meta.llama3-70b-instruct-v1%3A0/converse"},
		{bedrock.ConverseStream, "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0",
			"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.amazon.nova-pro-v1%3A0/converse-stream"},
	} {
		got, err := bedrock.Path(tc.op, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("Path(%d, %q) = %q, %v; want %q", tc.op, tc.id, got, err, tc.want)
		}
	}
}

func TestIsAnthropic(t *testing.T) {
	for id, want := range map[string]bool{
		"anthropic.claude-3-haiku-20240307-v1:0":                                                     true,
		"us.anthropic.claude-sonnet-4-20250514-v1:0":                                                 true,
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                                           true,
		"apac.anthropic.claude-3-5-sonnet-20240620-v1:0":                                             true,
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0": true,
		"amazon.nova-pro-v1:0":                                                                       false,
		"us.meta.llama3-2-90b-instruct-v1:0":                                                         false,
		"mistral.mistral-large-2402-v1:0":                                                            false,
		"notanthropic.claude":                                                                        false,
	} {
		if got := bedrock.IsAnthropic(id); got != want {
			t.Errorf("IsAnthropic(%q) = %v", id, got)
		}
	}
}

func TestMessagesBody(t *testing.T) {
	in := `{"model":"claude","max_tokens":100,"stream":true,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"EqQBCkYIBxgCKkB/+ab=="}]}],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]}`
	got, err := bedrock.MessagesBody([]byte(in), []string{"interleaved-thinking-2025-05-14, fine-grained-tool-streaming-2025-05-14"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":100,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"EqQBCkYIBxgCKkB/+ab=="}]}],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14","fine-grained-tool-streaming-2025-05-14"]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{`[1]`, `{"a":1} {"b":2}`, "{\"a\":\"\xff\"}", `{"a":`, ``} {
		if _, err := bedrock.MessagesBody([]byte(bad), nil); err == nil {
			t.Errorf("MessagesBody(%q) accepted", bad)
		}
	}
}
