// Package proem is a proem client for Go (standard library only).
//
// An example, not a maintained package: it reads whole bodies and does not
// retry. The maintained clients are the Python and npm packages in
// host/clients, whose bounds (timeouts, a body cap, Retry-After within a
// budget, no redirects) a Go port should copy.
//
//	prompt, err := proem.Build(ctx, "http://127.0.0.1:7878", "marlow", proem.Turn{"channel": "telegram"})
package proem

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Turn holds the request fields: the same as `proem build`'s flags
// ("channel", "chat_kind", "now", "format", ...; see /v1/openapi.json).
type Turn map[string]any

// Problem is an RFC 9457 error the service answered with.
type Problem struct {
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Field  string `json:"field"`
}

func (p *Problem) Error() string { return fmt.Sprintf("%d: %s", p.Status, p.Detail) }

// Build builds one turn and returns what `proem build` prints for it.
func Build(ctx context.Context, baseURL, agent string, turn Turn) (string, error) {
	body, err := json.Marshal(turn)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		baseURL+"/v1/agents/"+url.PathEscape(agent)+"/build", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		p := &Problem{Status: resp.StatusCode}
		_ = json.Unmarshal(text, p)
		return "", p
	}
	return string(text), nil
}
