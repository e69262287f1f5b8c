package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/relay/openai"
)

// convertTools puts all functions into one Gemini tool.
func convertTools(tools []openai.Tool) ([]Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	decls := make([]FunctionDeclaration, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, fmt.Errorf("tool %d: unsupported type %q, only function", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, fmt.Errorf("tool %d: function without a name", i)
		}
		params, err := cleanSchema(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %d (%s): parameters: %w", i, t.Function.Name, err)
		}
		decls = append(decls, FunctionDeclaration{
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  params,
		})
	}
	return []Tool{{FunctionDeclarations: decls}}, nil
}

// rejectedKeys are JSON Schema keywords Gemini's schema subset rejects with
// "Invalid JSON payload received. Unknown name ...", yet OpenAI clients and
// schema generators commonly emit. Other unsupported keywords pass through:
// Gemini's accepted set grows, and silently dropping constraints the model
// should honour is worse than a clear upstream error.
var rejectedKeys = map[string]bool{
	"$schema":              true,
	"additionalProperties": true,
}

// cleanSchema strips rejectedKeys from a parameters schema at every depth.
// It returns nil for a schema that declares no properties, because Gemini
// answers "properties: should be non-empty for OBJECT type" to an empty
// object schema but accepts a function with no parameters at all.
func cleanSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers such as bounds exactly as written
	var schema map[string]any
	if !json.Valid(raw) || dec.Decode(&schema) != nil {
		return nil, errors.New("not a JSON object")
	}
	stripSchema(schema)
	if props, _ := schema["properties"].(map[string]any); len(props) == 0 {
		return nil, nil
	}
	return marshal(schema)
}

// stripSchema removes rejectedKeys from a schema and the schemas inside it.
// It knows which keywords hold schemas, so a property that happens to be
// named "additionalProperties" survives, and so do values in "enum",
// "const", "default" and "examples", which are data, not schemas.
func stripSchema(schema map[string]any) {
	for key, v := range schema {
		switch {
		case rejectedKeys[key]:
			delete(schema, key)
		case key == "properties" || key == "patternProperties" || key == "$defs" || key == "definitions":
			// A map from names to schemas.
			if named, ok := v.(map[string]any); ok {
				for _, sub := range named {
					stripValue(sub)
				}
			}
		case key == "enum" || key == "const" || key == "default" || key == "examples":
		default:
			stripValue(v)
		}
	}
}

// stripValue strips a schema or a list of schemas ("items", "anyOf", ...).
func stripValue(v any) {
	switch v := v.(type) {
	case map[string]any:
		stripSchema(v)
	case []any:
		for _, e := range v {
			stripValue(e)
		}
	}
}

// convertToolChoice maps tool_choice onto a function calling mode: "auto",
// "none", "required" (ANY) or a named function (ANY limited to that name).
func convertToolChoice(raw json.RawMessage) (*ToolConfig, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	config := func(mode string, names ...string) *ToolConfig {
		return &ToolConfig{FunctionCallingConfig{Mode: mode, AllowedFunctionNames: names}}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "auto":
			return config(ModeAuto), nil
		case "none":
			return config(ModeNone), nil
		case "required":
			return config(ModeAny), nil
		}
		return nil, fmt.Errorf("tool_choice: unknown value %q", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return nil, errors.New(`tool_choice: want "auto", "none", "required" or {"type":"function","function":{"name":...}}`)
	}
	return config(ModeAny, named.Function.Name), nil
}
