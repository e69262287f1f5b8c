package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/logtext"
	"github.com/modelgate/modelgate/internal/option"
	"github.com/modelgate/modelgate/internal/store"
)

// optionView is one runtime setting as text.
type optionView struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// listOptions shows every known setting, defaults included, sorted by key;
// keys naming a secret or a token are never shown.
func (s *Server) listOptions(w http.ResponseWriter, r *http.Request) error {
	values := s.Options.Current().Values()
	views := make([]optionView, 0, len(values))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		// Values already leaves hidden keys out; this is the line a secret
		// would cross, so it is checked here too.
		if option.Hidden(k) {
			continue
		}
		views = append(views, optionView{Key: k, Value: values[k]})
	}
	return httpx.OK(w, views)
}

type updateOptionRequest struct {
	Key string `json:"key"`
	// Value is a JSON string, or a bool or number taken as its text.
	Value json.RawMessage `json:"value"`
}

// updateOption validates and stores one setting through the registry, which
// publishes it to this node at once (other nodes on the same database see it
// on their next reload).
func (s *Server) updateOption(w http.ResponseWriter, r *http.Request) error {
	var req updateOptionRequest
	if err := httpx.DecodeStrict(w, r, &req); err != nil {
		return err
	}
	value, ok := optionText(req.Value)
	if !ok {
		return httpx.Fail(httpx.MsgInvalidParams)
	}
	if msg := optionValueText.Validate(value); msg != "" {
		return httpx.Fail(msg)
	}
	err := s.Options.Set(r.Context(), req.Key, value)
	var invalid *option.InvalidError
	if errors.As(err, &invalid) {
		return httpx.Fail(invalid.Message)
	}
	if err != nil {
		return err
	}
	// An audit trail of who changed what; the value is left out where the
	// key names a secret.
	me := caller(r)
	content := fmt.Sprintf(logtext.AdminOption, me.Username, req.Key, value)
	if option.Hidden(req.Key) {
		content = fmt.Sprintf(logtext.AdminOptionSecret, me.Username, req.Key)
	}
	s.Logs.Write(store.Log{UserID: me.ID, Username: me.Username, Type: store.LogAdmin, Content: content})
	return httpx.OKMessage(w, "")
}

// optionText is the text form of a JSON string, bool or number: the string
// itself, "true"/"false", or the number as written. Anything else (absent,
// null, object, array) is not a setting value.
func optionText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err == nil
	case 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw), true
	}
	return "", false
}
