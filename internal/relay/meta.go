package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"unicode/utf8"
)

// requestMeta is what routing and billing read from a request body.
type requestMeta struct {
	model        string
	stream       bool
	maxTokens    int64
	includeUsage bool // the client asked for the final usage chunk
	// choices is how many completions one call generates (OpenAI n,
	// best_of), each up to maxTokens: at least 1, at most maxChoices.
	choices int64
}

// maxChoices bounds n and best_of as OpenAI does; the upstream refuses more.
const maxChoices = 128

// parseMeta reads the model and the few fields billing needs, without
// keeping the decoded body: same-dialect calls forward the bytes as sent.
func parseMeta(ep *endpoint, r *http.Request, body []byte) (requestMeta, error) {
	if ep.multipart {
		return multipartMeta(r, body)
	}
	if meta, err, ok := scanMeta(body); ok {
		return meta, err
	}
	return decodeMeta(body)
}

// scanMeta is decodeMeta in one walk over the top-level members, without
// reflection: it reads the fields as json.Unmarshal does (names matched
// case-insensitively, the last of duplicates winning, null leaving a field
// as it is, a value of another type failing the whole) and keeps nothing
// of the rest. ok is false for what it leaves to encoding/json: a name
// with an escape or a non-ASCII byte (Unicode case folding), a model
// string with an escape or invalid UTF-8.
func scanMeta(body []byte) (meta requestMeta, err error, ok bool) {
	if !json.Valid(body) {
		return requestMeta{}, badRequest(MsgInvalidJSON), true
	}
	body = body[skipSpace(body, 0):]
	if isNull(bytes.TrimRight(body, " \t\r\n")) {
		return requestMeta{}, badRequest(MsgModelRequired), true
	}
	if body[0] != '{' {
		return requestMeta{}, badRequest(MsgInvalidJSON), true
	}
	var maxTokens, maxCompletion, maxOutput int64
	var n, bestOf []byte
	var options bool // stream_options is an object (its pointer set)
	for name, v, next := firstMember(body); name != nil; name, v, next = nextMember(body, next) {
		if !plainName(name) {
			return requestMeta{}, nil, false
		}
		good := true
		switch {
		case bytes.EqualFold(name, []byte("model")):
			switch {
			case isNull(v):
			case v[0] != '"':
				good = false
			case bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v):
				return requestMeta{}, nil, false // unescaping, or U+FFFD for bad bytes
			default:
				meta.model = string(v[1 : len(v)-1])
			}
		case bytes.EqualFold(name, []byte("stream")):
			good = scanBool(v, &meta.stream)
		case bytes.EqualFold(name, []byte("max_tokens")):
			good = scanInt(v, &maxTokens)
		case bytes.EqualFold(name, []byte("max_completion_tokens")):
			good = scanInt(v, &maxCompletion)
		case bytes.EqualFold(name, []byte("max_output_tokens")):
			good = scanInt(v, &maxOutput)
		case bytes.EqualFold(name, []byte("n")):
			n = v
		case bytes.EqualFold(name, []byte("best_of")):
			bestOf = v
		case bytes.EqualFold(name, []byte("stream_options")):
			switch {
			case isNull(v):
				options, meta.includeUsage = false, false
			case v[0] != '{':
				good = false
			default:
				if !options {
					options, meta.includeUsage = true, false
				}
				for oname, ov, onext := firstMember(v); oname != nil; oname, ov, onext = nextMember(v, onext) {
					if !plainName(oname) {
						return requestMeta{}, nil, false
					}
					if bytes.EqualFold(oname, []byte("include_usage")) && !scanBool(ov, &meta.includeUsage) {
						good = false
					}
				}
			}
		}
		if !good {
			return requestMeta{}, badRequest(MsgInvalidJSON), true
		}
	}
	if strings.TrimSpace(meta.model) == "" {
		return requestMeta{}, badRequest(MsgModelRequired), true
	}
	meta.maxTokens = max(maxTokens, maxCompletion, maxOutput)
	meta.choices = max(choiceCount(n), choiceCount(bestOf))
	return meta, nil, true
}

// scanBool reads a JSON value into a bool as encoding/json does: null
// leaves it, true and false set it, anything else fails.
func scanBool(v []byte, b *bool) bool {
	switch string(v) {
	case "null":
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return false
	}
	return true
}

// decodeMeta is parseMeta by encoding/json.
func decodeMeta(body []byte) (requestMeta, error) {
	var m struct {
		Model               string `json:"model"`
		Stream              bool   `json:"stream"`
		MaxTokens           int64  `json:"max_tokens"`
		MaxCompletionTokens int64  `json:"max_completion_tokens"`
		MaxOutputTokens     int64  `json:"max_output_tokens"`
		// Read leniently: a bad n is the upstream's to refuse.
		N             json.RawMessage `json:"n"`
		BestOf        json.RawMessage `json:"best_of"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return requestMeta{}, badRequest(MsgInvalidJSON)
	}
	if strings.TrimSpace(m.Model) == "" {
		return requestMeta{}, badRequest(MsgModelRequired)
	}
	meta := requestMeta{model: m.Model, stream: m.Stream, maxTokens: max(m.MaxTokens, m.MaxCompletionTokens, m.MaxOutputTokens)}
	meta.includeUsage = m.StreamOptions != nil && m.StreamOptions.IncludeUsage
	meta.choices = max(choiceCount(m.N), choiceCount(m.BestOf))
	return meta, nil
}

// choiceCount reads n or best_of: a number from 1 to maxChoices, 1 when
// absent or not a number.
func choiceCount(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 1 // absent: nothing decoded, nothing allocated
	}
	var n float64
	if json.Unmarshal(raw, &n) != nil || !(n >= 1) {
		return 1
	}
	return int64(min(n, maxChoices))
}

// multipartMeta finds the model field of a multipart upload (audio
// transcriptions).
func multipartMeta(r *http.Request, body []byte) (requestMeta, error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		return requestMeta{}, badRequest("需要 multipart/form-data 请求体")
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return requestMeta{}, badRequest(MsgModelRequired)
		}
		if err != nil {
			return requestMeta{}, badRequest("multipart 请求体无效")
		}
		if part.FormName() == "model" {
			v, _ := io.ReadAll(io.LimitReader(part, 256))
			if model := strings.TrimSpace(string(v)); model != "" {
				return requestMeta{model: model, choices: 1}, nil
			}
			return requestMeta{}, badRequest(MsgModelRequired)
		}
	}
}

// rewriteJSON returns body with top-level fields replaced (nil removes the
// field). Only called when something must change, so same-dialect calls
// without a model mapping forward the client's bytes untouched.
func rewriteJSON(body []byte, set map[string]any) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	for k, v := range set {
		if v == nil {
			delete(fields, k)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		fields[k] = b
	}
	return json.Marshal(fields)
}

// rewriteMultipartModel rebuilds a multipart body with another model field.
func rewriteMultipartModel(contentType string, body []byte, model string) ([]byte, string, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, "", err
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var out bytes.Buffer
	mw := multipart.NewWriter(&out)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		w, err := mw.CreatePart(part.Header)
		if err != nil {
			return nil, "", err
		}
		if part.FormName() == "model" {
			io.WriteString(w, model)
			continue
		}
		if _, err := io.Copy(w, part); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), mw.FormDataContentType(), nil
}
