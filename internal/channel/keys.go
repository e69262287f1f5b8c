package channel

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// A channel's key text is a pool of keys (docs/decisions/channels.md, "Key
// pools"): one key a line, except that a JSON object — a Google service
// account as Google issues it, many lines long — is one key wherever it
// starts a line. Blank lines are ignored; a text without a line break is
// one key, as before pools.

// Keys splits a channel's key text into its keys, in order.
func Keys(text string) []string {
	var keys []string
	rest := []byte(strings.TrimSpace(text))
	for len(rest) > 0 {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if len(rest) == 0 {
			break
		}
		if rest[0] == '{' {
			d := json.NewDecoder(bytes.NewReader(rest))
			var obj map[string]json.RawMessage
			if err := d.Decode(&obj); err == nil {
				n := d.InputOffset()
				keys = append(keys, string(rest[:n]))
				rest = rest[n:]
				continue
			}
			// Not a whole object: the line is an ordinary key.
		}
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if k := strings.TrimSpace(string(line)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// KeyID names a key without showing it: the start of its SHA-256. A
// retired key is remembered by it, so the retirement follows the key when
// an admin reorders or edits the pool, and ends when the key is removed.
func KeyID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// DisabledKey is a key of a pool taken out because the upstream refused it
// for good (a 401, an invalid-key code): calls skip it until an admin
// re-enables it or the channel recheck finds it working.
type DisabledKey struct {
	ID     string `json:"id"`     // KeyID
	Reason string `json:"reason"` // the upstream's refusal, key masked
	Time   int64  `json:"time"`   // unix seconds
}

// ParseDisabledKeys decodes the stored list; an empty or unreadable text
// is none (a damaged list must not keep keys out).
func ParseDisabledKeys(text string) []DisabledKey {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	var out []DisabledKey
	if json.Unmarshal([]byte(text), &out) != nil {
		return nil
	}
	return out
}

// EncodeDisabledKeys is the stored form of list ("" when empty).
func EncodeDisabledKeys(list []DisabledKey) string {
	if len(list) == 0 {
		return ""
	}
	b, _ := json.Marshal(list)
	return string(b)
}

// PoolKey is one key of a pool with its place in it.
type PoolKey struct {
	Index    int // 0-based position in Keys(text)
	Key      string
	ID       string
	Disabled *DisabledKey // nil when in service
}

// Pool lists the keys of text with their state from the stored
// disabled list (entries of keys no longer in the text are dropped).
func Pool(text, disabled string) []PoolKey {
	keys := Keys(text)
	out := make([]PoolKey, len(keys))
	list := ParseDisabledKeys(disabled)
	for i, k := range keys {
		out[i] = PoolKey{Index: i, Key: k, ID: KeyID(k)}
		if j := slices.IndexFunc(list, func(d DisabledKey) bool { return d.ID == out[i].ID }); j >= 0 {
			d := list[j]
			out[i].Disabled = &d
		}
	}
	return out
}

// RetireKey adds key id to the disabled list of a pool with keys text,
// keeping only entries of keys still in it. It reports the new list and
// whether every key of the pool is now out (the channel must then be
// disabled, as a one-key channel is). A key not in the pool changes
// nothing (an admin replaced it meanwhile).
func RetireKey(text, disabled, id, reason string, now int64) (list string, allOut, changed bool) {
	pool := Pool(text, disabled)
	var kept []DisabledKey
	found, out := false, 0
	for _, k := range pool {
		switch {
		case k.ID == id && k.Disabled == nil:
			found = true
			kept = append(kept, DisabledKey{ID: id, Reason: CleanLastError(reason), Time: now})
			out++
		case k.Disabled != nil:
			kept = append(kept, *k.Disabled)
			out++
		}
	}
	if !found {
		return disabled, false, false
	}
	return EncodeDisabledKeys(kept), out == len(pool), true
}

// RestoreKeys removes the keys ids from the disabled list of a pool with
// keys text (entries of keys no longer in it go too).
func RestoreKeys(text, disabled string, ids ...string) string {
	var kept []DisabledKey
	for _, k := range Pool(text, disabled) {
		if k.Disabled != nil && !slices.Contains(ids, k.ID) {
			kept = append(kept, *k.Disabled)
		}
	}
	return EncodeDisabledKeys(kept)
}
