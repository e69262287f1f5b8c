package relay

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/token"
)

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// availableModels is what the key may call, exactly the models a call would
// not refuse with model_not_found or the allow list's 403: priced, with an
// enabled channel in its user's group, and within the key's allow list.
func (rl *Relay) availableModels(r *http.Request) ([]string, error) {
	e, _, err := rl.authenticate(r)
	if err != nil {
		return nil, err
	}
	if err := authorize(r, e, 0, ""); err != nil {
		return nil, err
	}
	snap := rl.catalog.cur.Load()
	prefix := e.user.Group + "\x00"
	var models []string
	for key, tiers := range snap.routes {
		model, ok := strings.CutPrefix(key, prefix)
		if !ok || len(tiers) == 0 {
			continue
		}
		if _, priced := snap.prices[model]; priced && token.ModelAllowed(e.token.Models, model) {
			models = append(models, model)
		}
	}
	slices.Sort(models)
	return models, nil
}

func (rl *Relay) listModels(w http.ResponseWriter, r *http.Request) {
	models, err := rl.availableModels(r)
	if err != nil {
		writeError(w, dialect.OpenAI, err)
		return
	}
	list := struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{Object: "list", Data: make([]modelObject, len(models))}
	for i, m := range models {
		list.Data[i] = modelObject{ID: m, Object: "model", OwnedBy: "modelgate"}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(list)
}

func (rl *Relay) getModel(w http.ResponseWriter, r *http.Request) {
	models, err := rl.availableModels(r)
	if err != nil {
		writeError(w, dialect.OpenAI, err)
		return
	}
	name := r.PathValue("model")
	if !slices.Contains(models, name) {
		writeError(w, dialect.OpenAI, errf(http.StatusNotFound, "invalid_request_error", "model_not_found",
			"The model '%s' does not exist or you do not have access to it.", name))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(modelObject{ID: name, Object: "model", OwnedBy: "modelgate"})
}
