package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// A function call's thought signature survives the trip through an OpenAI
// client: it rides in the tool call id and is sent back on replay.
func TestThoughtSignatureRoundTrip(t *testing.T) {
	resp := &GenerateResponse{Candidates: []Candidate{{Content: Content{Role: RoleModel, Parts: []Part{
		{FunctionCall: &FunctionCall{Name: "lookup", Args: json.RawMessage(`{"q":"x"}`)}, ThoughtSignature: "sig/+=bytes"},
		{FunctionCall: &FunctionCall{Name: "plain", Args: json.RawMessage(`{}`)}},
	}}, FinishReason: "STOP"}}}
	out, err := ToChatResponse(resp, "gemini-3", "chatcmpl-abc", 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := out.Choices[0].Message.ToolCalls
	for _, c := range calls {
		if strings.Trim(c.ID, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Fatalf("tool call id %q has characters outside [A-Za-z0-9_-]", c.ID)
		}
	}
	req := &openai.ChatRequest{Messages: []openai.Message{
		{Role: "user", Content: openai.TextContent("go")},
		{Role: "assistant", ToolCalls: calls},
		{Role: "tool", ToolCallID: calls[0].ID, Content: openai.TextContent(`{"r":1}`)},
		{Role: "tool", ToolCallID: calls[1].ID, Content: openai.TextContent(`{"r":2}`)},
	}}
	g, err := FromChatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	parts := g.Contents[1].Parts
	if parts[0].ThoughtSignature != "sig/+=bytes" || parts[1].ThoughtSignature != "" {
		t.Fatalf("replayed signatures = %q, %q", parts[0].ThoughtSignature, parts[1].ThoughtSignature)
	}
	if signatureOf("call_1__ts__!!!") != "" {
		t.Fatal("a malformed signature was decoded")
	}
}
