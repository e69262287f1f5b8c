// Package gemini speaks Google's Gemini generateContent API: its wire types
// and the conversion from and to the OpenAI chat dialect, JSON and streaming.
//
// The package is pure: it builds request bodies and reads response bodies and
// stream events; the relay core does the HTTP. Where the two APIs do not line
// up, docs/decisions/gemini.md records the choice made.
package gemini

import (
	"encoding/json"
	"net/url"
	"strings"
)

// APIKeyHeader is the request header that carries a Gemini API key.
const APIKeyHeader = "x-goog-api-key"

// DefaultBaseURL is the Gemini API's public host, for channels without a
// base URL of their own.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Endpoint returns the URL of a generateContent call for model, or of its
// streaming form (server-sent events) when stream is true. baseURL may
// already end in "/v1beta"; a "models/" prefix on model is tolerated because
// Google's own model list names models that way.
func Endpoint(baseURL, model string, stream bool) string {
	base := strings.TrimRight(baseURL, "/")
	if !strings.HasSuffix(base, "/v1beta") {
		base += "/v1beta"
	}
	u := base + "/models/" + url.PathEscape(strings.TrimPrefix(model, "models/"))
	if stream {
		return u + ":streamGenerateContent?alt=sse"
	}
	return u + ":generateContent"
}

// GenerateRequest is a generateContent (or streamGenerateContent) body.
type GenerateRequest struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolConfig        *ToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	// SafetySettings is passed through untouched; conversions leave it
	// empty for the relay to fill from channel settings.
	SafetySettings json.RawMessage `json:"safetySettings,omitempty"`
}

// Content is one turn of a conversation. Role is "user" or "model"; it is
// empty in a system instruction.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a turn; exactly one of Text, InlineData, FileData,
// FunctionCall and FunctionResponse is set.
type Part struct {
	Text string `json:"text,omitempty"`
	// Thought marks a part as the model's reasoning, not its answer.
	Thought bool `json:"thought,omitempty"`
	// ThoughtSignature is the opaque token Gemini 3 models attach to
	// function calls and expect back on replay. The OpenAI dialect has no
	// place for it, so conversions carry it inside the tool call id
	// (withSignature, signatureOf).
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *Blob             `json:"inlineData,omitempty"`
	FileData         *FileData         `json:"fileData,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// Blob is inline media: Data is base64.
type Blob struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
}

// FileData is media by URI.
type FileData struct {
	MIMEType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

// FunctionCall is a call the model made; Args is a JSON object.
type FunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is the result of a call, sent back in a user turn;
// Response is a JSON object.
type FunctionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool groups the functions the model may call.
type Tool struct {
	FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
}

// FunctionDeclaration describes a function; Parameters is an OpenAPI-style
// schema of its arguments object, absent for functions without arguments.
type FunctionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolConfig constrains function calling.
type ToolConfig struct {
	FunctionCallingConfig FunctionCallingConfig `json:"functionCallingConfig"`
}

// FunctionCallingConfig holds a mode (AUTO, ANY or NONE) and, with ANY, the
// functions the model must choose among.
type FunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// Function calling modes.
const (
	ModeAuto = "AUTO"
	ModeAny  = "ANY"
	ModeNone = "NONE"
)

// GenerationConfig holds sampling parameters; nil fields are not sent.
type GenerationConfig struct {
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"topP,omitempty"`
	TopK            *int     `json:"topK,omitempty"`
	MaxOutputTokens *int     `json:"maxOutputTokens,omitempty"`
	StopSequences   []string `json:"stopSequences,omitempty"`
	CandidateCount  *int     `json:"candidateCount,omitempty"`
}

// GenerateResponse is a generateContent response, and also the payload of
// each streamed event.
type GenerateResponse struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
}

// Candidate is one generated answer.
type Candidate struct {
	Content      Content `json:"content"`
	FinishReason string  `json:"finishReason,omitempty"`
	Index        int     `json:"index"`
}

// PromptFeedback explains a prompt Gemini refused to answer.
type PromptFeedback struct {
	BlockReason   string          `json:"blockReason,omitempty"`
	SafetyRatings json.RawMessage `json:"safetyRatings,omitempty"`
}

// UsageMetadata counts tokens. In a stream each event carries the running
// totals so far.
type UsageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
}

// ErrorBody is the shape of a Gemini error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes a failure: Code is the HTTP status, Status the
// gRPC-style name such as "INVALID_ARGUMENT".
type ErrorDetail struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}
