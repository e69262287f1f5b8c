// Package jsonbody edits the top-level members of a JSON object request
// body without re-encoding the rest: the values it keeps are the client's
// bytes, in the client's order, so thinking signatures, cache_control marks
// and fields this gateway does not know reach the upstream unchanged.
// Provider packages use it where an upstream wants the body of another API
// with a few members dropped or added (Bedrock's and Vertex's Claude, Azure's
// deployment as "model").
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// ErrNotObject is returned for a body that is not one JSON object.
var ErrNotObject = errors.New("request body is not a JSON object")

// ErrInvalidUTF8 is returned for a body that is not valid UTF-8: JSON must
// be, and a decoder would otherwise replace the bytes silently.
var ErrInvalidUTF8 = errors.New("request body is not valid UTF-8")

// Member is one top-level name and its raw value.
type Member struct {
	Name  string
	Value json.RawMessage
}

// Rewrite returns body without the members named in drop, with set's
// members replacing same-named ones in place or, when absent, appended in
// set's order. Every other member keeps its bytes and position.
func Rewrite(body []byte, drop []string, set ...Member) ([]byte, error) {
	members, err := split(body)
	if err != nil {
		return nil, err
	}
	for _, m := range set {
		if !json.Valid(m.Value) {
			return nil, fmt.Errorf("value of %q is not JSON", m.Name)
		}
	}
	out := make([]byte, 0, len(body)+64)
	out = append(out, '{')
	done := make([]bool, len(set))
	write := func(name string, value []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		key, _ := json.Marshal(name)
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, value...)
	}
next:
	for _, m := range members {
		for _, d := range drop {
			if m.Name == d {
				continue next
			}
		}
		for i, s := range set {
			if s.Name == m.Name {
				if !done[i] {
					write(s.Name, s.Value)
					done[i] = true
				}
				continue next
			}
		}
		write(m.Name, m.Value)
	}
	for i, s := range set {
		if !done[i] {
			write(s.Name, s.Value)
		}
	}
	return append(out, '}'), nil
}

// Get returns the raw value of the top-level member name, and whether the
// body has it.
func Get(body []byte, name string) (json.RawMessage, bool, error) {
	members, err := split(body)
	if err != nil {
		return nil, false, err
	}
	for _, m := range members {
		if m.Name == name {
			return m.Value, true, nil
		}
	}
	return nil, false, nil
}

// String encodes s as a JSON string value for Rewrite.
func String(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// split decodes the top-level members of an object, values kept raw.
func split(body []byte) ([]Member, error) {
	if !utf8.Valid(body) {
		return nil, ErrInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	var members []Member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decode request body: %w", err)
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("decode request body member %q: %w", name, err)
		}
		members = append(members, Member{Name: name, Value: value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("decode request body: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrNotObject
	}
	return members, nil
}
