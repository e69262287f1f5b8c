package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/store"
)

// GitHubURLs are the bases of GitHub's OAuth and API hosts
// (GITHUB_OAUTH_BASE_URL, GITHUB_API_BASE_URL).
type GitHubURLs struct {
	OAuth, API string
}

func (s *Server) githubURLs() GitHubURLs {
	u := s.GitHub
	if u.OAuth == "" {
		u.OAuth = "https://github.com"
	}
	if u.API == "" {
		u.API = "https://api.github.com"
	}
	return u
}

// githubCallback serves GET /api/oauth/github: exchange the code for an
// access token at GitHub, read the user, sign in its numeric id (logins can
// be renamed and reused; ids cannot).
func (s *Server) githubCallback(w http.ResponseWriter, r *http.Request) error {
	cfg := s.Options.Current().GitHub
	if !cfg.Enabled {
		return httpx.Fail(MsgOAuthDisabled)
	}
	if _, err := takeFlow(w, r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	id, err := s.githubIdentity(ctx, cfg.ClientID, cfg.ClientSecret, r.URL.Query().Get("code"))
	if err != nil {
		s.Log.Warn("github sign-in refused", "err", err)
		return httpx.Fail(MsgOAuthFailed)
	}
	return s.signInWith(w, r, id)
}

func (s *Server) githubIdentity(ctx context.Context, clientID, secret, code string) (identity, error) {
	urls := s.githubURLs()
	form := url.Values{"client_id": {clientID}, "client_secret": {secret}, "code": {code}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, urls.OAuth+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return identity{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := getJSON(req, &tok); err != nil {
		return identity{}, fmt.Errorf("github token: %w", err)
	}
	if tok.AccessToken == "" {
		return identity{}, fmt.Errorf("github token: %s", tok.Error)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, urls.API+"/user", nil)
	if err != nil {
		return identity{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Accept", "application/vnd.github+json")
	var gu struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
	}
	if err := getJSON(req, &gu); err != nil {
		return identity{}, fmt.Errorf("github user: %w", err)
	}
	if gu.ID <= 0 {
		return identity{}, fmt.Errorf("github user without id")
	}
	// GitHub's public email is not proven to be the user's: not taken.
	return identity{Provider: store.ProviderGitHub, Subject: strconv.FormatInt(gu.ID, 10), Username: gu.Login}, nil
}

// getJSON sends req and decodes a 200 answer's JSON (at most 1 MiB).
func getJSON(req *http.Request, v any) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
