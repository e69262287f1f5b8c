package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/api"
	"github.com/modelgate/modelgate/internal/apptest"
)

// `modelgate reset-password` against the database of a running gateway:
// it prints the new password, which logs in; the old password and every
// session from before stop working at once; the reset is in the audit
// trail. --stdin takes the password given; bad input changes nothing.
func TestResetPasswordWhileTheServerRuns(t *testing.T) {
	e := apptest.New(t)
	getenv := func(k string) string {
		return map[string]string{"DATA_DIR": e.Config.DataDir, "SQLITE_PATH": e.Config.SQLitePath, "SQL_DSN": e.Config.SQLDSN}[k]
	}
	root := e.Root()
	other := e.Root() // a second browser
	root.OK("GET", "/api/user/self", nil)

	var out bytes.Buffer
	if err := runResetPassword(context.Background(), []string{"root"}, getenv, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	pw, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "password: ")
	if !ok || len(pw) < 16 || strings.Contains(pw, " ") {
		t.Fatalf("output %q, want \"password: <new password>\"", out.String())
	}
	for _, c := range []*apptest.Client{root, other} {
		c.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	}
	e.Client().Fail("POST", "/api/user/login", map[string]string{"username": "root", "password": apptest.RootPassword}, http.StatusOK, "")
	fresh := e.Client()
	fresh.Login("root", pw)

	// --stdin, with the flag after or before the name.
	out.Reset()
	if err := runResetPassword(context.Background(), []string{"--stdin", "root"}, getenv, strings.NewReader("chosen-password-1\n"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "password: chosen-password-1\n" {
		t.Fatalf("output %q", out.String())
	}
	fresh.Fail("GET", "/api/user/self", nil, http.StatusUnauthorized, api.MsgNotLoggedIn)
	fresh.Login("root", "chosen-password-1")

	// Refused: too short a password, an unknown user, no user. Nothing
	// changes.
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"root", "--stdin"}, "short\n", "8 to 64"},
		{[]string{"nobody"}, "", `no user is named "nobody"`},
		{nil, "", "want one USERNAME"},
		{[]string{"root", "--what"}, "", "flag provided but not defined"},
	} {
		out.Reset()
		err := runResetPassword(context.Background(), c.args, getenv, strings.NewReader(c.stdin), &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || out.Len() != 0 {
			t.Errorf("reset-password %q: err %v, output %q; want an error with %q", c.args, err, out.String(), c.want)
		}
	}
	fresh.OK("GET", "/api/user/self", nil)

	var entries []struct {
		Username, Action, Target string
	}
	fresh.OK("GET", "/api/audit/?action=reset-password", nil).Decode(t, &entries)
	if len(entries) != 2 || entries[0].Username != "(cli)" || !strings.HasPrefix(entries[0].Target, "user:") {
		t.Errorf("audit entries of the resets: %+v", entries)
	}
}

// A start with INITIAL_ROOT_PASSWORD on a database whose root exists says
// the variable was ignored, why, and what to run instead; a first start
// does not.
func TestIgnoredInitialRootPasswordIsLogged(t *testing.T) {
	cfg := apptest.Config(t)
	var first, second syncBuffer
	e := apptest.StartWithLog(t, cfg, slog.New(slog.NewTextHandler(&first, nil)))
	e.Stop()
	if strings.Contains(first.String(), "INITIAL_ROOT_PASSWORD is ignored") {
		t.Fatalf("the first start, which used the variable, says it was ignored: %s", first.String())
	}
	apptest.StartWithLog(t, cfg, slog.New(slog.NewTextHandler(&second, nil)))
	log := second.String()
	if !strings.Contains(log, "INITIAL_ROOT_PASSWORD is ignored: the root user already exists") ||
		!strings.Contains(log, "modelgate reset-password root") {
		t.Fatalf("the second start does not say the variable was ignored: %s", log)
	}
}

// In a multi-active cluster the command, run with a node's environment,
// writes the change with its event in that node's outbox: the user's
// sessions on the other nodes end too and the new password logs in there.
func TestResetPasswordReachesTheCluster(t *testing.T) {
	nodes := apptest.NewCluster(t, 2)
	a, b := nodes[0], nodes[1]
	_, alice := a.NewUser("alice", 1)
	rootB := b.Root()
	apptest.Eventually(t, "alice on node 2", func() bool {
		return rootB.Do("GET", apptest.Path("/api/user/%d", alice), nil).Success
	})
	onB := b.Client()
	onB.Login("alice", "password-alice")

	cfg := a.Config
	env := map[string]string{"DATA_DIR": cfg.DataDir, "SQLITE_PATH": cfg.SQLitePath, "SQL_DSN": cfg.SQLDSN,
		"CLUSTER_NODE_ID": fmt.Sprint(cfg.Cluster.NodeID), "CLUSTER_NODE_ADDRESS": cfg.Cluster.NodeAddress,
		"CLUSTER_SECRET": cfg.Cluster.Secret}
	var out bytes.Buffer
	if err := runResetPassword(context.Background(), []string{"--stdin", "alice"}, func(k string) string { return env[k] },
		strings.NewReader("chosen-password-2\n"), &out); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, "alice's session on node 2 ended", func() bool {
		return onB.Do("GET", "/api/user/self", nil).Status == http.StatusUnauthorized
	})
	b.Client().Login("alice", "chosen-password-2")
	a.Client().Login("alice", "chosen-password-2")
}
