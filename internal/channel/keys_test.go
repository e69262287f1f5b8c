package channel_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/channel"
)

func TestKeys(t *testing.T) {
	sa := "{\n  \"type\": \"service_account\",\n  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMII\\n-----END PRIVATE KEY-----\\n\",\n  \"note\": \"}\\n{\"\n}"
	for name, tc := range map[string]struct {
		text string
		want []string
	}{
		"empty":              {"", nil},
		"one":                {"sk-1", []string{"sk-1"}},
		"lines":              {"sk-1\nsk-2\r\n\n  sk-3  \n", []string{"sk-1", "sk-2", "sk-3"}},
		"bedrock":            {"AK|SK|us-east-1\nAK2|SK2|eu-west-1|TOKEN", []string{"AK|SK|us-east-1", "AK2|SK2|eu-west-1|TOKEN"}},
		"service account":    {sa, []string{sa}},
		"two accounts":       {sa + "\n" + sa, []string{sa, sa}},
		"account then keys":  {sa + "\nsk-2\n", []string{sa, "sk-2"}},
		"key then account":   {"sk-1\n" + sa, []string{"sk-1", sa}},
		"broken object line": {"{not json\nsk-2", []string{"{not json", "sk-2"}},
		"object on one line": {`{"a":1} trailing`, []string{`{"a":1}`, "trailing"}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := channel.Keys(tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("Keys(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestRetireAndRestoreKeys(t *testing.T) {
	text := "k1\nk2\nk3"
	id := func(k string) string { return channel.KeyID(k) }
	list, allOut, changed := channel.RetireKey(text, "", id("k2"), "401 bad\x00key", 10)
	if !changed || allOut {
		t.Fatalf("retire k2: changed %v, all out %v", changed, allOut)
	}
	pool := channel.Pool(text, list)
	if pool[1].Disabled == nil || pool[0].Disabled != nil || strings.Contains(pool[1].Disabled.Reason, "\x00") {
		t.Fatalf("pool: %+v", pool)
	}
	if again, _, changed := channel.RetireKey(text, list, id("k2"), "again", 11); changed || again != list {
		t.Fatalf("retiring a retired key changed the list")
	}
	if _, _, changed := channel.RetireKey(text, list, id("gone"), "x", 11); changed {
		t.Fatalf("a key not in the pool was retired")
	}
	list, _, _ = channel.RetireKey(text, list, id("k1"), "x", 12)
	list, allOut, _ = channel.RetireKey(text, list, id("k3"), "x", 13)
	if !allOut {
		t.Fatalf("every key retired: want all out")
	}
	// The pool edited: entries of removed keys go, the others follow their key.
	list = channel.RestoreKeys("k3\nk4", list, id("k1"))
	pool = channel.Pool("k3\nk4", list)
	if pool[0].Disabled == nil || pool[1].Disabled != nil || len(channel.ParseDisabledKeys(list)) != 1 {
		t.Fatalf("after edit and restore: %+v %s", pool, list)
	}
	if channel.ParseDisabledKeys("garbage") != nil || channel.RestoreKeys("k3", list, id("k3")) != "" {
		t.Fatalf("a damaged list or the last restore")
	}
}
